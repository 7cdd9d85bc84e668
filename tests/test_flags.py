"""The flags MAFFT and FAMSA users type, on ``torchmsa align`` and ``torchmsa merge``, and
their API keywords: --add / --addfragments / --keeplength / --merge / --profile1 --profile2,
--threads, --treein (``tree=`` a Tree or Newick), --reorder, --distout, --maxiterate, -v stage
timings, --progress, and --tree-out on one sequence."""

from __future__ import annotations

import io

import pytest

import torchmsa
from torchmsa.cli import main
from torchmsa.cli.common import Parser
from torchmsa.cli.merge import add_parser as add_merge_parser
from torchmsa.pipeline.progress import ProgressBar, StageTimes
from torchmsa.pipeline.trees import restrict

SEQS = {
    "x": "MKVLAAGHWQERT",
    "y": "MKVLAGHWQERT",
    "z": "GSTWPQMKVLQ",
    "w": "MKVIAAGHWQDRT",
}


def _fasta(path, seqs: dict) -> str:
    path.write_text("".join(f">{k}\n{v}\n" for k, v in seqs.items()))
    return str(path)


def _read(path) -> tuple[list[str], list[str]]:
    names, rows = [], []
    for line in path.read_text().splitlines():
        if line.startswith(">"):
            names.append(line[1:].split()[0])
            rows.append("")
        else:
            rows[-1] += line.strip()
    return names, rows


@pytest.fixture
def files(tmp_path):
    ref = torchmsa.align({k: SEQS[k] for k in ("x", "y", "w")}, device="cpu", mode="fast")
    ref_path = tmp_path / "ref.fasta"
    ref.write(str(ref_path))
    return {
        "dir": tmp_path,
        "seqs": _fasta(tmp_path / "seqs.fasta", SEQS),
        "ref": str(ref_path),
        "ref_rows": ref.rows,
        "new": _fasta(tmp_path / "new.fasta", {"z": SEQS["z"], "v": "MKVLAAGHWQERTKK"}),
        "other": _fasta(tmp_path / "other.fasta", {"p": "MKV-LQ", "q": "MKVILQ"}),
    }


def _run(argv, capsys):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_add_flag_keeps_reference(files, capsys):
    out = files["dir"] / "out.fasta"
    code, _, err = _run(
        ["align", "--add", files["new"], files["ref"], "--device", "cpu", "-o", str(out)], capsys
    )
    assert code == 0, err
    names, rows = _read(out)
    assert names == ["x", "y", "w", "z", "v"]
    ref_cols = [j for j in range(len(rows[0])) if any(r[j] != "-" for r in rows[:3])]
    assert ["".join(r[j] for j in ref_cols) for r in rows[:3]] == files["ref_rows"]
    assert rows[4].replace("-", "") == "MKVLAAGHWQERTKK"


def test_addfragments_keeplength(files, capsys):
    out = files["dir"] / "out.fasta"
    code, _, err = _run(
        [
            "align",
            "--addfragments",
            files["new"],
            "--keeplength",
            files["ref"],
            "--device",
            "cpu",
            "-o",
            str(out),
        ],
        capsys,
    )
    assert code == 0, err
    names, rows = _read(out)
    assert rows[:3] == files["ref_rows"] and {len(r) for r in rows} == {len(rows[0])}


def test_merge_flags_agree(files, capsys):
    outs = []
    for argv in (
        ["align", "--merge", files["other"], files["ref"]],
        ["align", "--profile1", files["ref"], "--profile2", files["other"]],
    ):
        code, out, err = _run([*argv, "--device", "cpu"], capsys)
        assert code == 0, err
        outs.append(out)
    assert outs[0] == outs[1] and out.count(">") == 5
    # the merge verb (registered in torchmsa.cli's VERBS by the lead)
    parser = Parser(prog="torchmsa")
    add_merge_parser(parser.add_subparsers(dest="command", parser_class=Parser))
    args = parser.parse_args(["merge", files["ref"], files["other"], "--device", "cpu"])
    assert args.func(args) == 0
    assert capsys.readouterr().out == outs[0]


@pytest.mark.parametrize(
    "argv,message",
    [
        (["--keeplength"], "--keeplength goes with --add"),
        (["--add", "NEW", "--merge", "NEW"], "give one of --add"),
        (["--add", "NEW", "--reorder"], "--reorder cannot be used with --add"),
        (["--profile1", "NEW"], "--profile1 and --profile2 go together"),
        (["--threads", "0"], "--threads 0"),
        (["--maxiterate", "-1"], "--maxiterate -1"),
        (["--treein", "MISSING.nwk"], "--treein: cannot read"),
    ],
)
def test_flag_errors(files, capsys, argv, message):
    argv = [files["new"] if a == "NEW" else a for a in argv]
    code, _, err = _run(["align", files["seqs"], "--device", "cpu", *argv], capsys)
    assert code == 2 and err.startswith("torchmsa: error:") and message in err
    assert err.count("\n") == 1


def test_threads_and_maxiterate(files, capsys):
    _, plain, _ = _run(["align", files["seqs"], "--device", "cpu", "--mode", "default"], capsys)
    _, threaded, _ = _run(
        ["align", files["seqs"], "--device", "cpu", "--mode", "default", "--threads", "1"], capsys
    )
    assert threaded == plain
    aln = torchmsa.align(
        SEQS,
        device="cpu",
        mode="default",
        config=torchmsa.AlignConfig(
            refine=torchmsa.RefineConfig(rounds_default=0, rounds_accurate=0)
        ),
    )
    _, none, _ = _run(
        ["align", files["seqs"], "--device", "cpu", "--mode", "default", "--maxiterate", "0"],
        capsys,
    )
    assert none == aln.format("fasta")


def test_treein_and_tree_keyword(files, capsys):
    newick = "((x:1,(y:1,w:1):1):1,z:2);"
    (files["dir"] / "g.nwk").write_text(newick + "\n")
    tree_out = files["dir"] / "t.nwk"
    code, out, err = _run(
        [
            "align",
            files["seqs"],
            "--device",
            "cpu",
            "--treein",
            str(files["dir"] / "g.nwk"),
            "--tree-out",
            str(tree_out),
        ],
        capsys,
    )
    assert code == 0, err
    assert tree_out.read_text().strip() == "((x:1.0,(y:1.0,w:1.0):1.0):1.0,z:2.0);"
    by_text = torchmsa.align(SEQS, device="cpu", tree=newick)
    by_tree = torchmsa.align(SEQS, device="cpu", tree=by_text.tree)
    assert by_text.format("fasta") == out == by_tree.format("fasta")
    assert by_text.metadata["tree"] == "given"
    with pytest.raises(torchmsa.errors.ArgumentError, match="not one of `names`"):
        torchmsa.align(SEQS, device="cpu", tree="((x,y),(w,q));")


def test_given_tree_with_copies():
    seqs = {**SEQS, "x2": SEQS["x"]}
    aln = torchmsa.align(seqs, device="cpu", tree="(((x,x2),(y,w)),z);")
    assert aln.rows[0] == aln.rows[-1] and aln.tree.n_leaves == 5


def test_restrict_adds_lengths():
    tree = torchmsa.Tree(["a", "b", "c"], [[0, 1], [3, 2]], [1.0, 2.0, 4.0, 0.5, 0.0])
    sub = restrict(tree, [0, 2])  # b gone: a's branch takes its parent's
    assert sub.newick() == "(a:1.5,c:4.0);"


def test_reorder(files, capsys):
    tree_out = files["dir"] / "t.nwk"
    code, out, _ = _run(
        ["align", files["seqs"], "--device", "cpu", "--reorder", "--tree-out", str(tree_out)],
        capsys,
    )
    names = [line[1:] for line in out.splitlines() if line.startswith(">")]
    aln = torchmsa.align(SEQS, device="cpu")
    assert names == [aln.names[i] for i in aln.tree.leaf_order()] != list(SEQS)
    assert torchmsa.align(SEQS, device="cpu", reorder=True).names == names


def test_distout(files, capsys):
    dist = files["dir"] / "d.txt"
    code, _, err = _run(
        ["align", files["seqs"], "--device", "cpu", "--mode", "fast", "--distout", str(dist)],
        capsys,
    )
    assert code == 0, err
    first, second = dist.read_text().split("\n\n")
    for block, diag in ((first, 0.0), (second, 100.0)):
        lines = block.strip().splitlines()
        assert lines[0] == "4" and [ln.split()[0] for ln in lines[1:]] == list(SEQS)
        values = [[float(v) for v in ln.split()[1:]] for ln in lines[1:]]
        assert all(values[i][i] == diag for i in range(4))
        assert all(values[i][j] == values[j][i] for i in range(4) for j in range(4))
    ident = [[float(v) for v in ln.split()[1:]] for ln in second.strip().splitlines()[1:]]
    assert 0 < ident[0][3] < 100  # x and w differ


def test_verbose_stage_times(files, capsys):
    code, _, err = _run(["align", files["seqs"], "--device", "cpu", "-v"], capsys)
    assert code == 0
    assert "torchmsa: stage align" in err and "torchmsa: stage encode" in err
    with StageTimes() as times:
        torchmsa.align(SEQS, device="cpu", mode="fast")
    assert list(times.seconds)[0] == "align" and "progressive_pass" in times.seconds


def test_progress_bar():
    stream = io.StringIO()
    bar = ProgressBar(10, True, "adding", delay=0.0, stream=stream)
    for k in range(1, 11):
        bar.update(k, 10)
    bar.close()
    assert "torchmsa: adding" in stream.getvalue() and "/10" in stream.getvalue()
    quiet = io.StringIO()
    bar = ProgressBar(10, True, delay=60.0, stream=quiet)  # short work draws nothing
    bar.update(10, 10)
    bar.close()
    assert quiet.getvalue() == ""


def test_tree_out_single_sequence(tmp_path, capsys):
    one = _fasta(tmp_path / "one.fasta", {"solo": "MKVL"})
    code, out, err = _run(
        ["align", one, "--device", "cpu", "--tree-out", str(tmp_path / "t.nwk")], capsys
    )
    assert code == 0, err
    assert (tmp_path / "t.nwk").read_text() == "solo;\n" and out == ">solo\nMKVL\n"


def test_help_documents_every_flag(capsys):
    main(["align", "--help"])
    text = capsys.readouterr().out
    for flag in (
        "--add",
        "--addfragments",
        "--keeplength",
        "--merge",
        "--profile1",
        "--profile2",
        "--threads",
        "--treein",
        "--reorder",
        "--distout",
        "--maxiterate",
        "--verbose",
        "--progress",
        "--tree-out",
    ):
        assert flag in text


def test_progress_counts_one_pass_along_a_given_tree():
    """Default mode makes two passes, but one along a tree the user gave: the bar's total."""
    import torch

    from torchmsa.config import AlignConfig, ExecutionPolicy
    from torchmsa.pipeline.jobs import prepare_jobs, progress_steps

    seqs = ["MKVLAAGIVALL", "MKVLSAGLVALL", "MRVLAAGIVAL", "MKVLAAGIVGLLL", "MKILAAGIVALL"]
    (job,) = prepare_jobs(
        [seqs],
        "auto",
        torch.device("cpu"),
        False,
        config=AlignConfig(mode="default"),
        policy=ExecutionPolicy(),
    )
    assert progress_steps([job]) == 2 * 4
    assert progress_steps([job], given_tree=True) == 4
