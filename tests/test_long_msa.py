"""Long proteins through the whole pipeline (issue #38 item 5): profile pairs too wide for full
matrices are aligned in linear space (progressive pass and refinement) with the same result,
and the command line aligns two 12,000-residue proteins under a 3 GiB address-space limit."""

from __future__ import annotations

import random
import resource
import subprocess
import sys

import pytest
import torch

import torchmsa
from torchmsa.config import ExecutionPolicy
from torchmsa.io import read_alignment

AA = "ACDEFGHIKLMNPQRSTVWY"


def _long_family(n: int, length: int, seed: int) -> list[str]:
    """``n`` copies of a random root with 15% substitutions and a 2% indel rate."""
    rng = random.Random(seed)
    root = [rng.choice(AA) for _ in range(length)]
    out = []
    for _ in range(n):
        seq = []
        for c in root:
            r = rng.random()
            if r < 0.02:
                continue  # deleted
            if r < 0.04:
                seq.append(rng.choice(AA))  # inserted before
            seq.append(rng.choice(AA) if rng.random() < 0.15 else c)
        out.append("".join(seq))
    return out


FULL = ExecutionPolicy(linear_pair_cells=1 << 62, cpu_level_cells=1 << 62)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("n, length", [(2, 1500), (5, 700)])
def test_linear_space_gives_the_full_matrix_alignment(n, length, threads):
    seqs = _long_family(n, length, seed=n)
    want = torchmsa.align(seqs, device="cpu", mode="default", policy=FULL)
    narrow = ExecutionPolicy(linear_pair_cells=1 << 14, threads=threads)
    got = torchmsa.align(seqs, device="cpu", mode="default", policy=narrow)
    assert torch.equal(got.codes, want.codes)
    assert [r.replace("-", "") for r in got.rows] == seqs
    if n > 2:  # refinement evaluated edges (in linear space)
        assert "refined_edges" in got.metadata


@pytest.mark.parametrize("n, length", [(2, 600), (4, 300)])
def test_accurate_mode_in_linear_space_gives_the_same_alignment(n, length):
    """Consistency tiles join the linear-space DP block by block, in the progressive pass
    and in the refinement."""
    seqs = _long_family(n, length, seed=30 + n)
    want = torchmsa.align(seqs, device="cpu", mode="accurate", policy=FULL)
    narrow = ExecutionPolicy(linear_pair_cells=1 << 12, threads=2)
    got = torchmsa.align(seqs, device="cpu", mode="accurate", policy=narrow)
    assert got.metadata["mode"] == "accurate"
    assert torch.equal(got.codes, want.codes)


def _limited(nbytes: int):
    def apply():
        resource.setrlimit(resource.RLIMIT_AS, (nbytes, nbytes))

    return apply


def test_cli_aligns_two_long_proteins_under_an_address_space_limit(tmp_path):
    seqs = _long_family(2, 12_000, seed=11)
    path = tmp_path / "long.fasta"
    path.write_text("".join(f">p{k} long protein {k}\n{s}\n" for k, s in enumerate(seqs)))
    out = tmp_path / "out.fasta"
    cmd = [sys.executable, "-m", "torchmsa", "align", str(path), "-o", str(out)]
    proc = subprocess.run(
        cmd + ["--mode", "default", "--device", "cpu"],
        preexec_fn=_limited(3 << 30),
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = read_alignment(out)
    assert [r.description for r in got] == ["p0 long protein 0", "p1 long protein 1"]
    assert [r.seq.replace("-", "") for r in got] == seqs
    want = torchmsa.align(seqs, device="cpu", mode="default", policy=FULL)
    assert [r.seq for r in got] == want.rows


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("n, length", [(2, 3000), (5, 1500)])
def test_long_proteins_on_a_gpu_equal_the_cpu(n, length):
    """On a GPU the wide pairs and edges go to the host's linear-space DP; the alignment is
    the CPU's, and the full-matrix one's."""
    seqs = _long_family(n, length, seed=20 + n)
    want = torchmsa.align(seqs, device="cpu", mode="default", policy=FULL)
    narrow = ExecutionPolicy(linear_pair_cells=1 << 20)
    got = torchmsa.align(seqs, device="cuda", mode="default", policy=narrow)
    assert got.rows == want.rows
