"""Golden files: the bundled example aligned in each mode, compared line by line with stored
alignments and guide trees (made at the commit before the reshaping; any change to them is a
change of results and needs a decision record)."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest

import torchmsa

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "superoxide_dismutase.fasta"
GOLDEN = Path(__file__).parent / "data" / "golden"
MODES = ("fast", "default", "accurate")


def _expected(mode: str, suffix: str) -> list[str]:
    return (GOLDEN / f"superoxide_dismutase.{mode}.{suffix}").read_text().splitlines()


def _diff(got: list[str], want: list[str]) -> str:
    for i, (g, w) in enumerate(zip(got, want)):
        if g != w:
            return f"line {i + 1} differs:\n got  {g!r}\n want {w!r}"
    return f"{len(got)} lines against {len(want)}"


def _check(aln, mode: str) -> None:
    out = io.StringIO()
    aln.write(out, format="fasta")
    got, want = out.getvalue().splitlines(), _expected(mode, "fasta")
    assert got == want, _diff(got, want)
    got_tree, want_tree = [aln.tree.newick()], _expected(mode, "nwk")
    assert got_tree == want_tree, _diff(got_tree, want_tree)


@pytest.mark.parametrize("mode", MODES)
def test_golden_cpu(mode):
    _check(torchmsa.align(str(EXAMPLE), device="cpu", mode=mode), mode)


@pytest.mark.gpu
@pytest.mark.parametrize("mode", MODES)
def test_golden_cuda(mode):
    _check(torchmsa.align(str(EXAMPLE), device="cuda", mode=mode), mode)


def test_golden_cli(tmp_path):
    out, tree = tmp_path / "aln.fasta", tmp_path / "tree.nwk"
    cmd = [sys.executable, "-m", "torchmsa", "align", str(EXAMPLE), "-o", str(out)]
    cmd += ["--mode", "default", "--tree-out", str(tree)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    got, want = out.read_text().splitlines(), _expected("default", "fasta")
    assert got == want, _diff(got, want)
    assert tree.read_text().splitlines() == _expected("default", "nwk")
