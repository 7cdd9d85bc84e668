"""LCS lengths: the numba CPU code against a plain DP and Biopython, the Triton kernel against the
CPU code (``interpreter``: tiny shapes; ``gpu``: real sizes), the distances, and the guide tree
``tree="lcs"``."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import torchmsa
from torchmsa.config import AlignConfig, RefineConfig, TreeConfig
from torchmsa.cpu import lcs as cpu_lcs
from torchmsa.errors import ArgumentError
from torchmsa.ops.lcs import lcs_distances, lcs_lengths
from torchmsa.sequences import SequenceBatch
from torchmsa.tree import build_tree


def plain_lcs(a, b) -> int:
    d = np.zeros((len(a) + 1, len(b) + 1), np.int64)
    for i, x in enumerate(a):
        for j, y in enumerate(b):
            d[i + 1, j + 1] = d[i, j] + 1 if x == y else max(d[i, j + 1], d[i + 1, j])
    return int(d[-1, -1])


def random_codes(seed: int, n: int, width: int, n_codes: int, lengths=()):
    """Codes with awkward lengths first (0, 1, word edges), then random ones."""
    rng = np.random.default_rng(seed)
    lens = np.concatenate([lengths, rng.integers(0, width + 1, max(0, n - len(lengths)))])
    codes = rng.integers(0, n_codes, (n, width)).astype(np.uint8)
    return torch.from_numpy(codes), torch.from_numpy(lens[:n].astype(np.int64))


def brute(codes, lens) -> torch.Tensor:
    rows = [codes[i, : lens[i]].tolist() for i in range(len(lens))]
    return torch.tensor([[plain_lcs(a, b) for b in rows] for a in rows], dtype=torch.int32)


@pytest.mark.parametrize(
    "n_codes, width, edges",
    [(2, 70, (0, 1, 63, 64, 65)), (4, 130, (128, 129, 127, 2)), (24, 200, (200, 64, 0))],
    ids=["A2-L70", "A4-L130", "A24-L200"],
)
def test_cpu_equals_plain_dp(n_codes, width, edges):
    codes, lens = random_codes(len(edges) + width, 14, width, n_codes, edges)
    assert torch.equal(cpu_lcs.lcs_lengths(codes, lens), brute(codes, lens))


def test_cpu_equals_biopython():
    # LCS is the best global alignment score with match 1, mismatch 0 and free gaps
    PairwiseAligner = pytest.importorskip("Bio.Align").PairwiseAligner
    aligner = PairwiseAligner(mode="global", match_score=1, mismatch_score=0, gap_score=0)
    seqs = ["MKVLAAGIVGLLLAQ", "MKVIAAGLLLQ", "QQQQ", "GAVLIMKQ", "A", "WYWYWYWYWYWYWYWYWY"]
    batch = SequenceBatch.from_input(seqs, "protein", "cpu")
    got = cpu_lcs.lcs_lengths(batch.codes, batch.lengths)
    want = [[int(aligner.score(a, b)) for b in seqs] for a in seqs]
    assert got.tolist() == want


def test_cpu_rejects_bad_input():
    with pytest.raises(ArgumentError, match="uint8"):
        cpu_lcs.lcs_lengths(torch.zeros(2, 3, dtype=torch.int32), torch.tensor([1, 2]))
    with pytest.raises(ArgumentError, match=r"0\.\.3"):
        cpu_lcs.lcs_lengths(torch.zeros(2, 3, dtype=torch.uint8), torch.tensor([1, 4]))


@pytest.mark.interpreter
@pytest.mark.parametrize(
    "n_codes, width, edges",
    [(4, 70, (0, 1, 31, 32, 33, 64)), (21, 66, (66, 2, 65))],
    ids=["A4-L70", "A21-L66"],
)
def test_triton_equals_cpu(device, n_codes, width, edges):
    from torchmsa._triton import lcs as triton_lcs

    codes, lens = random_codes(7 * width, 10, width, n_codes, edges)
    got = triton_lcs.lcs_lengths(codes.to(device), lens.to(device), block_a=4)
    assert torch.equal(got.cpu(), cpu_lcs.lcs_lengths(codes, lens))


@pytest.mark.interpreter
def test_triton_empty_and_single(device):
    from torchmsa._triton import lcs as triton_lcs

    for n in (0, 1):
        codes = torch.zeros(n, 5, dtype=torch.uint8, device=device)
        lens = torch.full((n,), 5, dtype=torch.int64, device=device)
        got = triton_lcs.lcs_lengths(codes, lens)
        assert got.shape == (n, n) and torch.equal(got.cpu(), torch.full((n, n), 5).int())


@pytest.mark.gpu
@pytest.mark.parametrize("width", [300, 1100, 2200], ids=["L300", "L1100", "L2200"])
def test_gpu_equals_cpu_at_size(width):
    codes, lens = random_codes(width, 700, width, 24, (0, 1, 31, 32, 33, width))
    got = lcs_lengths(codes.cuda(), lens.cuda())
    assert torch.equal(got.cpu(), cpu_lcs.lcs_lengths(codes, lens))


def test_distances():
    lcs = torch.tensor([[3, 2, 0, 0], [2, 4, 0, 0], [0, 0, 0, 0], [0, 0, 0, 2]], dtype=torch.int32)
    lens = torch.tensor([3, 4, 0, 2])
    d = lcs_distances(lcs, lens)
    # indel / (indel + LCS): (3 + 4 - 4) / (3 + 4 - 2) for the first pair
    assert d[0, 1] == d[1, 0] == 3 / 5
    assert d[2, 0] == d[0, 2] == 1.0 and d[2, 3] == 1.0
    assert torch.equal(torch.diagonal(d), torch.zeros(4, dtype=torch.float64))


def test_lcs_tree_is_single_linkage_on_lcs_distances():
    seqs = {
        "a": "MKVLAAGIVGLLLAQ",
        "b": "MKVLAAGIVGLLLAR",
        "c": "MKVIAAGLLLQ",
        "d": "GAVLIMKQWW",
        "e": "GAVLIMKQWY",
    }
    aln = torchmsa.align(seqs, device="cpu", mode="fast", tree="lcs")
    batch = SequenceBatch.from_input(seqs, "protein", "cpu")
    dist = lcs_distances(lcs_lengths(batch.codes, batch.lengths), batch.lengths)
    assert aln.tree.newick() == build_tree(dist, "single", list(seqs)).newick()
    assert aln.metadata["tree"] == "lcs"
    assert [r.replace("-", "") for r in aln.rows] == list(seqs.values())


def test_auto_tree_above_lcs_min_n_is_one_pass_under_the_lcs_tree():
    seqs = [
        "MKVLAAGIVGLLLAQ",
        "MKVLAAGIVGLLLAR",
        "MKVIAAGLLLQ",
        "GAVLIMKQWW",
        "GAVLIMKQWY",
        "MKVLGAVLIMKQ",
    ]
    small = torchmsa.align(seqs, device="cpu", mode="default")
    assert small.metadata["tree"] == "upgma_mafft"
    config = AlignConfig(mode="default", tree=TreeConfig(lcs_min_n=5), refine=RefineConfig(max_n=5))
    big = torchmsa.align(seqs, device="cpu", config=config)
    one_pass = torchmsa.align(seqs, device="cpu", mode="fast", tree="lcs")
    assert big.metadata["tree"] == "lcs" and big.metadata["mode"] == "default"
    assert torch.equal(big.codes, one_pass.codes)
    assert big.tree.newick() == one_pass.tree.newick()


def test_cli_tree_lcs(tmp_path, capsys):
    from torchmsa.cli import main
    from torchmsa.io import read_alignment

    seqs = {"a": "MKVLAAGIVGLLLAQ", "b": "MKVIAAGLLLQ", "c": "GAVLIMKQWW"}
    src, out, nwk = tmp_path / "in.fasta", tmp_path / "aln.fasta", tmp_path / "guide.nwk"
    src.write_text("".join(f">{k}\n{v}\n" for k, v in seqs.items()))
    argv = ["align", str(src), "-o", str(out), "--tree", "lcs", "--device", "cpu"]
    assert main(argv + ["--tree-out", str(nwk)]) == 0
    rows = {r.name: r.seq for r in read_alignment(out)}
    assert {k: v.replace("-", "") for k, v in rows.items()} == seqs
    want = torchmsa.align(seqs, device="cpu", tree="lcs")
    assert nwk.read_text().strip() == want.tree.newick()
