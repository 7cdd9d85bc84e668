import gzip
import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from torchmsa.cli import main
from torchmsa.io import read_alignment, read_sequences

EXAMPLE = Path(__file__).parent.parent / "examples" / "superoxide_dismutase.fasta"


def _run(argv, capsys):
    code = main(argv)
    out = capsys.readouterr()
    return code, out.out, out.err


def test_align_to_stdout_and_files(tmp_path, capsys):
    code, out, err = _run(["align", str(EXAMPLE), "-q"], capsys)
    assert code == 0 and err == ""
    rows = read_alignment(io.StringIO(out), "fasta")
    records = read_sequences(EXAMPLE)
    assert [r.name for r in rows] == [r.name for r in records]
    assert [r.seq.replace("-", "") for r in rows] == [r.seq for r in records]

    out_path, tree_path = tmp_path / "aln.sto", tmp_path / "guide.nwk"
    code, _, err = _run(
        [
            "align",
            str(EXAMPLE),
            "-o",
            str(out_path),
            "--tree-out",
            str(tree_path),
            "--mode",
            "fast",
            "-v",
        ],
        capsys,
    )
    assert code == 0 and "mode fast" in err and "device cpu" in err
    assert out_path.read_text().startswith("# STOCKHOLM")
    assert tree_path.read_text().strip().endswith(";")

    gz = tmp_path / "aln.clustal.gz"
    assert _run(["align", str(EXAMPLE), "-o", str(gz), "--format", "clustal"], capsys)[0] == 0
    assert gzip.decompress(gz.read_bytes()).decode().startswith("CLUSTAL")


def test_align_reads_stdin():
    proc = subprocess.run(
        [sys.executable, "-m", "torchmsa", "align", "-", "--format", "a3m", "--device", "cpu"],
        input=EXAMPLE.read_text(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    code, out = proc.returncode, proc.stdout
    assert code == 0 and out.startswith(">")
    first = out.split("\n")[1]
    assert first == first.upper() and "-" not in first  # the query row has no insertions


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["align", "/no/such/file.fasta"], "no such file"),
        (["align", str(EXAMPLE), "--mode", "turbo"], "invalid choice"),
        (["align", str(EXAMPLE), "--gap-open", "x"], "not a number"),
        (["align", str(EXAMPLE), "--gap-open", "1", "--gap-extend", "2"], "gap_extend"),
        (["align", str(EXAMPLE), "--device", "cuda:7"], "cuda:7"),
        (["align", str(EXAMPLE), "--config", "consistency.wieght=16"], "consistency.wieght"),
        (["align", str(EXAMPLE), "--config", "consistency.weight"], "NAME=VALUE"),
        (["align", str(EXAMPLE), "--config", "consistency.weight=-1"], "weight"),
        (["align", str(EXAMPLE), "--mode", "fast", "--config", "mode=accurate"], "conflicts"),
        (["pairwise", str(EXAMPLE)], "required"),
    ],
)
def test_user_errors_print_one_line(argv, needle, capsys):
    code, out, err = _run(argv, capsys)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and needle in err and "Traceback" not in err
    assert err.startswith("torchmsa: error: ")  # not "torchmsa align: error:"


@pytest.mark.parametrize(
    "argv, needle",
    [
        ([], "give a command: align, merge, pairwise"),
        (["bogus"], "invalid choice: 'bogus'"),
        (["align", str(EXAMPLE), "--bogus"], "unrecognized arguments: --bogus"),
        (["pairwise", "a", "b", "--max-input-bytes", "0"], "see torchmsa pairwise --help"),
        (["pairwise", "a", "b", "--max-sequences", "many"], "not a count: 'many'"),
    ],
)
def test_usage_errors_have_the_one_error_format(argv, needle, capsys):
    code, out, err = _run(argv, capsys)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert err.startswith("torchmsa: error: ") and needle in err


def test_output_may_be_the_input_and_failed_runs_leave_no_file(tmp_path, capsys):
    path = tmp_path / "x.fasta"
    path.write_text(">a d\u00a0e\nMKVLAAGIL\n> b\nMKVLGIL\n")
    code, _, err = _run(["align", str(path), "-o", str(path), "--device", "cpu"], capsys)
    assert code == 0, err
    assert [r.seq.replace("-", "") for r in read_sequences(path)] == ["MKVLAAGIL", "MKVLGIL"]
    assert path.read_text().split("\n")[::2] == [">a d\u00a0e", "> b", ""]
    bad = tmp_path / "bad.fasta"
    bad.write_text(">a\nMK1\n>b\nMKV\n")
    out = tmp_path / "out.fasta"
    assert _run(["align", str(bad), "-o", str(out)], capsys)[0] == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.fasta", "x.fasta"]


def test_pairwise_input_limits(tmp_path, capsys):
    a = tmp_path / "a.fa"
    a.write_text(">q\nHEAGAWGHEE\n>r\nHEAG\n")
    code, _, err = _run(["pairwise", str(a), str(a), "--max-sequences", "1"], capsys)
    assert code == 2 and "more than 1 sequences" in err and "--max-sequences" in err
    code, _, err = _run(["pairwise", str(a), str(a), "--max-input-bytes", "10"], capsys)
    assert code == 2 and "more than 10 bytes" in err
    assert _run(["pairwise", str(a), str(a), "--max-input-bytes", "1KiB"], capsys)[0] == 0


def test_align_config_overrides(tmp_path, capsys):
    import torchmsa
    from torchmsa.config import AlignConfig, ScoringConfig

    out = tmp_path / "aln.fasta"
    argv = ["align", str(EXAMPLE), "-o", str(out), "--device", "cpu", "--mode", "fast"]
    code, _, err = _run(
        argv + ["--config", "scoring.gap_open=7", "--config", "tree.method=nj", "-v"], capsys
    )
    assert code == 0
    assert (
        "config mode='fast', scoring=ScoringConfig(gap_open=7.0), tree=TreeConfig(method='nj')"
        in err
    )
    config = AlignConfig(mode="fast", scoring=ScoringConfig(gap_open=7))
    want = torchmsa.align(EXAMPLE, device="cpu", config=config, tree="nj")
    assert [r.seq for r in read_alignment(out)] == want.rows
    assert want.rows != torchmsa.align(EXAMPLE, device="cpu", mode="fast").rows


def test_bad_character_names_sequence_and_position(tmp_path, capsys):
    bad = tmp_path / "bad.fasta"
    bad.write_text(">ok\nMKV\n>broken\nMK1V\n")
    code, _, err = _run(["align", str(bad)], capsys)
    assert code == 2 and "'broken'" in err and "position 3" in err and "'1'" in err


def test_pairwise_tsv_and_fasta(tmp_path, capsys):
    a, b = tmp_path / "a.fa", tmp_path / "b.fa"
    a.write_text(">q\nHEAGAWGHEE\n")
    b.write_text(">t1\nPAWHEAE\n>t2\nHEAGAWGHE\n")
    code, out, _ = _run(["pairwise", str(a), str(b), "--mode", "local"], capsys)
    lines = out.strip().splitlines()
    assert code == 0 and lines[0].startswith("a\tb\tscore")
    assert lines[1].split("\t")[:3] == ["q", "t1", "18"]
    code, out, _ = _run(["pairwise", str(a), str(b), "--format", "fasta"], capsys)
    assert code == 0 and out.count(">") == 4
    code, out, _ = _run(["pairwise", str(a), str(b), "--score-only"], capsys)
    assert code == 0 and "aligned_a" not in out


def test_score_command(tmp_path, capsys):
    ref = tmp_path / "ref.fasta"
    ref.write_text(">a\nAC-D\n>b\nACGD\n")
    test = tmp_path / "test.fasta"
    test.write_text(">a\nA-CD\n>b\nACGD\n")
    core = tmp_path / "core.txt"
    core.write_text("1101\n")
    code, out, _ = _run(["score", str(ref), str(ref)], capsys)
    assert code == 0 and out.strip() == "SP=1.0000\tTC=1.0000"
    code, out, _ = _run(["score", str(test), str(ref), "--core", str(core)], capsys)
    assert code == 0 and out.startswith("SP=0.6667")


def test_entry_point_runs_as_module():
    proc = subprocess.run(
        [sys.executable, "-m", "torchmsa", "--version"], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0 and proc.stdout.startswith("torchmsa ")


def test_the_command_asks_for_expandable_segments_unless_told_otherwise(tmp_path, monkeypatch):
    from torchmsa.cli import ALLOCATOR

    fasta = tmp_path / "in.fasta"
    fasta.write_text(">a\nMKVLAG\n>b\nMKVIAG\n")
    for name in ("PYTORCH_CUDA_ALLOC_CONF", "WORLD_SIZE"):  # set, then removed: both restored
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)
    assert main(["align", str(fasta), "-o", str(tmp_path / "out.fasta"), "-q"]) == 0
    assert os.environ["PYTORCH_CUDA_ALLOC_CONF"] == ALLOCATOR
    monkeypatch.setenv("PYTORCH_CUDA_ALLOC_CONF", "max_split_size_mb:128")
    assert main(["align", str(fasta), "-o", str(tmp_path / "out.fasta"), "-q"]) == 0
    assert os.environ["PYTORCH_CUDA_ALLOC_CONF"] == "max_split_size_mb:128"  # the user's
    monkeypatch.delenv("PYTORCH_CUDA_ALLOC_CONF")
    monkeypatch.setenv("WORLD_SIZE", "2")  # under torchrun: as torchrun set it up
    assert main(["align", str(fasta), "-o", str(tmp_path / "out.fasta"), "-q"]) == 0
    assert "PYTORCH_CUDA_ALLOC_CONF" not in os.environ


def test_main_in_a_program_leaves_its_garbage_collector_alone(tmp_path):
    # the command's own process freezes what it loaded out of the collector's sight
    # (decision 0062); a program that calls main() keeps its collector as it was
    import gc

    before = gc.get_freeze_count()
    assert main(["align", str(EXAMPLE), "-o", str(tmp_path / "a.fa"), "-q"]) == 0
    assert gc.get_freeze_count() == before
    assert (tmp_path / "a.fa").read_text().startswith(">")
