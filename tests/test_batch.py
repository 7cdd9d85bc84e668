"""``torchmsa batch``: many files through one store and worker, resumable, failures reported."""

from __future__ import annotations

import pytest

import torchmsa
from torchmsa.cli import batch
from torchmsa.cli.common import Parser


def _run(argv: list[str]) -> int:
    parser = Parser(prog="torchmsa")
    sub = parser.add_subparsers(dest="command", parser_class=Parser)
    batch.add_parser(sub)
    args = parser.parse_args(["batch", *argv])
    return args.func(args)


FAMILIES = {
    "one": {"a": "MKVLAAGHWLKQ", "b": "MKVLAGHWLKQE", "c": "MKILAAGHWIKQ"},
    "two": {"x": "GSTWPQMKVLAE", "y": "GSTWPQMKVIAE", "z": "GSAWPQMKVLE", "w": "GSTWPMKVLAE"},
}


def _write(folder, name, seqs):
    path = folder / f"{name}.fasta"
    path.write_text("".join(f">{k}\n{v}\n" for k, v in seqs.items()))
    return path


@pytest.fixture
def inputs(tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    for name, seqs in FAMILIES.items():
        _write(folder, name, seqs)
    return folder


def test_batch_writes_what_align_writes_and_resumes(inputs, tmp_path, capsys):
    data = tmp_path / "store"
    assert _run([str(inputs), "--mode", "default", "--data", str(data), "--cpu-workers", "0"]) == 0
    for name, seqs in FAMILIES.items():
        out = inputs / f"{name}.aln.fasta"
        assert out.read_text() == torchmsa.align(seqs, device="cpu", mode="default").format()
    capsys.readouterr()
    stamp = (inputs / "one.aln.fasta").stat().st_mtime_ns
    assert _run([str(inputs), "--mode", "default", "--data", str(data), "--cpu-workers", "0"]) == 0
    err = capsys.readouterr().err
    assert "0 aligned, 2 skipped" in err
    assert (inputs / "one.aln.fasta").stat().st_mtime_ns == stamp


def test_batch_manifest_outdir_and_a_failing_file(inputs, tmp_path, capsys):
    bad = _write(inputs, "bad", {"p": "MKV1AA", "q": "MKVLA"})
    manifest = tmp_path / "list.txt"
    manifest.write_text(f"# two good, one bad\nin/one.fasta\n{bad}\nin/two.fasta\n")
    out = tmp_path / "out"
    code = _run([str(manifest), "-o", str(out), "--format", "clustal", "--cpu-workers", "0"])
    assert code == 1
    err = capsys.readouterr().err
    assert "bad.fasta" in err and "invalid character '1'" in err and "2 aligned" in err
    assert sorted(p.name for p in out.iterdir()) == ["one.aln.aln", "two.aln.aln"]
    want = torchmsa.align(FAMILIES["two"], device="cpu").format("clustal")
    assert (out / "two.aln.aln").read_text() == want


def test_batch_refuses_an_empty_folder(tmp_path):
    with pytest.raises(ValueError, match="no sequence files"):
        _run([str(tmp_path)])
