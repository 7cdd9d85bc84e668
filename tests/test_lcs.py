"""LCS lengths: the numba CPU code against a plain DP and Biopython, the Triton kernel against the
CPU code (``interpreter``: tiny shapes; ``gpu``: real sizes), the distances, and the guide tree
``tree="lcs"``."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import torchmsa
from torchmsa.config import AlignConfig, RefineConfig, TreeConfig
from torchmsa.constants import LCS_TIE
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
    # indel / (indel + LCS) plus LCS_TIE sqrt(indel) / LCS: indel 3, LCS 2 for the first pair
    assert d[0, 1] == d[1, 0] == 3 / 5 + math.sqrt(3) / 2 * LCS_TIE
    assert d[2, 0] == d[0, 2] == 1.0 + math.sqrt(3) / 1 * LCS_TIE  # LCS 0 counts as 1
    assert d[2, 3] == 1.0 + math.sqrt(2) * LCS_TIE
    assert torch.equal(torch.diagonal(d), torch.zeros(4, dtype=torch.float64))
    assert torch.equal(lcs_distances(lcs, lens, rows=3), d)  # the row blocks change nothing


def _key(a_len: int, b_len: int, c: int) -> float:
    """The LCS distance of one pair, in plain Python."""
    union = float(a_len + b_len) - c
    indel = union - c
    return indel / max(union, 1.0) + LCS_TIE * (math.sqrt(indel) / max(float(c), 1.0))


def test_the_three_lcs_distances_agree_bit_for_bit_and_only_break_ties():
    """The full matrix (``ops.lcs``), SLINK's rows (``cpu.slink``) and PartTree's blocks
    (``parttree.counts``) give a plain-Python oracle's values; the tie term orders pairs the
    first measure ties by FAMSA's ``sqrt(indel) / LCS`` and never reorders two pairs the first
    measure tells apart (unions up to 4,000 residues)."""
    from torchmsa.cpu.slink import lcs_key_rows
    from torchmsa.parttree.counts import lcs_distances as block_distances

    rng = np.random.default_rng(5)
    n = 60
    lens = rng.integers(0, 2000, n)
    lcs = np.minimum.outer(lens, lens) * rng.random((n, n))
    lcs = np.floor(np.minimum(lcs, lcs.T)).astype(np.int64)
    np.fill_diagonal(lcs, lens)
    want = np.array([[_key(lens[i], lens[j], lcs[i, j]) for j in range(n)] for i in range(n)])
    np.fill_diagonal(want, 0.0)
    full = lcs_distances(torch.from_numpy(lcs).to(torch.int32), torch.from_numpy(lens)).numpy()
    assert np.array_equal(full, want)
    rows = np.zeros((n - 10, n))
    lcs_key_rows(lcs[10:], lens, 10, rows)
    assert all(np.array_equal(rows[t, : 10 + t], want[10 + t, : 10 + t]) for t in range(n - 10))
    assert np.array_equal(block_distances(lcs[:7, 7:], lens[:7], lens[7:]), want[:7, 7:])
    # ties of indel / (indel + LCS): the same ratio indel : LCS, so the larger LCS comes first
    assert _key(300, 300, 290) < _key(150, 150, 145) < _key(30, 30, 29)
    pairs = [
        (a, b, c)
        for a in range(1, 2001, 61)
        for b in range(1, 2001, 67)
        for c in range(0, min(a, b) + 1, 29)
    ]
    keys = [_key(*p) for p in pairs]
    first = [(a + b - 2 * c) / max(a + b - c, 1) for a, b, c in pairs]
    order = sorted(range(len(pairs)), key=keys.__getitem__)
    assert all(first[i] <= first[j] for i, j in zip(order, order[1:]))


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


# ---- the lane routine (torchmsa/cpu/lcs.py lanes_lcs): LANES pairs at once -------------------

AWKWARD = (0, 1, 63, 64, 65, 127, 128, 129, 300)


def row_lcs(a, b) -> int:
    """The plain DP a row at a time: ``d[i + 1] = cummax(max(d[i][1:], d[i][:-1] + (a[i] ==
    b)))``, which is the recurrence above with the left neighbour's max unrolled."""
    b = np.asarray(b)
    prev = np.zeros(len(b) + 1, np.int64)
    for x in a:
        cand = np.maximum(prev[1:], prev[:-1] + (b == x))
        prev = np.concatenate([[0], np.maximum.accumulate(cand)])
    return int(prev[-1])


def scalar_matrix(codes, lens) -> np.ndarray:
    c, n = cpu_lcs.host_inputs(codes, lens)
    masks = cpu_lcs.lcs_masks(c, n)
    v = np.empty(masks.shape[2], np.uint64)
    return np.array(
        [
            [cpu_lcs.pair_lcs(masks[i], n[i], c[j], n[j], v) for j in range(len(n))]
            for i in range(len(n))
        ]
    )


def test_row_oracle_is_the_plain_dp():
    rng = np.random.default_rng(0)
    for _ in range(30):
        a, b = rng.integers(0, 3, rng.integers(0, 20)), rng.integers(0, 3, rng.integers(0, 20))
        assert row_lcs(a, b) == plain_lcs(a.tolist(), b.tolist())


@pytest.mark.parametrize("n_codes", [2, 4, 24])
def test_lanes_awkward_lengths_equal_plain_dp_and_pair_lcs(n_codes):
    # 21 sequences: a group of LANES and a partial one, lengths on every word edge
    codes, lens = random_codes(n_codes, 21, 300, n_codes, AWKWARD)
    got = cpu_lcs.lcs_lengths(codes, lens).numpy()
    assert np.array_equal(got, scalar_matrix(codes, lens))
    rows = [codes[i, : lens[i]].numpy() for i in range(len(lens))]
    for i in range(len(rows)):
        for j in range(i):
            assert got[i, j] == got[j, i] == row_lcs(rows[i], rows[j]), (i, j)


@pytest.mark.parametrize("width", [1, 64, 129, 256, 300, 383, 449, 520], ids=lambda w: f"L{w}")
def test_lanes_word_blocks(width):
    # groups whose longest sequence needs 1 to 9 words: one block of 1-4 words, or blocks of
    # four chained by their carries with a last one of 1-4
    rng = np.random.default_rng(width)
    n = 2 * cpu_lcs.LANES + 3
    lens = np.concatenate([[width] * 5, rng.integers(max(0, width - 70), width + 1, n - 5)])
    rng.shuffle(lens)
    codes = torch.from_numpy(rng.integers(0, 4, (n, width)).astype(np.uint8))
    lens = torch.from_numpy(lens.astype(np.int64))
    got = cpu_lcs.lcs_lengths(codes, lens).numpy()
    assert np.array_equal(got, scalar_matrix(codes, lens))
    for i, j in [(0, 1), (2, n - 1), (n - 2, 3)]:
        a, b = codes[i, : lens[i]].numpy(), codes[j, : lens[j]].numpy()
        assert got[i, j] == row_lcs(a, b)


def test_lanes_edge_counts():
    codes, lens = random_codes(0, 0, 70, 3)
    assert cpu_lcs.lcs_lengths(codes, lens).shape == (0, 0)
    for n in (1, 2, cpu_lcs.LANES - 1, cpu_lcs.LANES, cpu_lcs.LANES + 1):
        codes, lens = random_codes(n, n, 70, 3, (0, 65, 1))
        assert torch.equal(cpu_lcs.lcs_lengths(codes, lens), brute(codes, lens)), n


def test_rows_and_blocks_equal_the_full_matrix():
    from torchmsa.cpu.lcs_rows import lcs_block, lcs_rows

    codes, lens = random_codes(5, 37, 150, 5, AWKWARD[:8])
    c, n = cpu_lcs.host_inputs(codes, lens)
    masks = cpu_lcs.lcs_masks(c, n)
    full = cpu_lcs.lcs_lengths(codes, lens).numpy()
    for r0, r1 in [(0, 1), (0, 2), (0, 37), (5, 9), (16, 33), (17, 18), (36, 37)]:
        got = lcs_rows(c, n, masks, r0, r1)
        want = np.tril(full[r0:r1, :r1], k=r0 - 1)  # columns from r0 + t on stay 0
        assert got.dtype == np.int32 and np.array_equal(got, want), (r0, r1)
    rng = np.random.default_rng(3)
    for na, nb in [(1, 1), (1, 20), (20, 1), (3, 17), (17, 3), (40, 40), (0, 5), (5, 0)]:
        ia, ib = rng.integers(0, 37, na), rng.integers(0, 37, nb)
        got = lcs_block(c, n, masks, ia, ib)
        assert got.dtype == np.int64 and got.shape == (na, nb)
        assert np.array_equal(got, full[np.ix_(ia, ib)]), (na, nb)
