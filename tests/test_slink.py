"""Streamed single linkage (issue #35): SLINK over keys (:mod:`torchmsa.cpu.slink`) against
Prim's algorithm on full matrices full of ties, in any point order and block size; the LCS
tree streamed over row blocks on the CPU and in Triton's kernel against the full-matrix tree;
the pipeline's ``tree="lcs"`` never asking for an ``N x N`` matrix."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import torchmsa
from torchmsa.config import MemoryBudget
from torchmsa.cpu import tree as cpu_tree
from torchmsa.cpu.slink import SlinkState
from torchmsa.ops.lcs import lcs_distances, lcs_lengths, lcs_single_linkage


def tied_matrix(rng, n: int) -> np.ndarray:
    """A symmetric matrix of few distinct values, so most edges tie on distance."""
    levels = int(rng.integers(1, 5))
    upper = np.triu(rng.integers(0, levels, (n, n)).astype(np.float64) / 4, 1)
    return upper + upper.T


def streamed(d: np.ndarray, order: np.ndarray, step: int):
    state = SlinkState(order)
    dp = d[order][:, order]
    for r0 in range(0, len(order), step):
        state.add_rows(dp[r0 : r0 + step])
    return cpu_tree.spanning_joins(*state.edges())


@pytest.mark.parametrize("seed", range(6))
def test_slink_equals_prim_with_ties_in_any_order(seed):
    rng = np.random.default_rng(seed)
    for _ in range(40):
        n = int(rng.integers(1, 45))
        d = tied_matrix(rng, n)
        want = cpu_tree.single_linkage(d)
        for order in (np.arange(n), rng.permutation(n)):
            got = streamed(d, order, int(rng.integers(1, 6)))
            assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])


def test_slink_refuses_extra_rows_and_early_edges():
    state = SlinkState(np.arange(3))
    state.add_rows(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="2 of 3"):
        state.edges()
    with pytest.raises(ValueError, match="4 rows for 3"):
        state.add_rows(np.zeros((2, 3)))


def family_codes(seed: int, n: int, width: int, n_codes: int = 4):
    """Mutated copies of one sequence, cut to random lengths (0 included): many equal LCS
    distances."""
    rng = np.random.default_rng(seed)
    base = rng.integers(0, n_codes, width)
    codes = np.zeros((n, width + 3), np.uint8)
    lens = rng.integers(0, width + 1, n)
    lens[:2] = (0, width)
    for i in range(n):
        s = base.copy()
        hit = rng.random(width) < 0.3
        s[hit] = rng.integers(0, n_codes, int(hit.sum()))
        codes[i, : lens[i]] = s[: lens[i]]
    return torch.from_numpy(codes), torch.from_numpy(lens.astype(np.int64))


def full_matrix_joins(codes, lens):
    return cpu_tree.single_linkage(lcs_distances(lcs_lengths(codes, lens, "cpu"), lens).numpy())


@pytest.mark.parametrize("seed", range(4))
def test_streamed_lcs_tree_equals_the_full_matrix_tree(seed):
    codes, lens = family_codes(seed, 40 + 7 * seed, 90)
    want = full_matrix_joins(codes, lens)
    n = len(lens)
    for block_bytes in (12 * n, 12 * n * 7, 1 << 20):
        got = lcs_single_linkage(codes, lens, "cpu", block_bytes=block_bytes)
        assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])


@pytest.mark.interpreter
def test_triton_rows_give_the_full_matrix_tree(device):
    from torchmsa._triton import lcs as triton_lcs

    codes, lens = family_codes(11, 13, 40, n_codes=21)
    want = full_matrix_joins(codes, lens)
    got = lcs_single_linkage(codes.to(device), lens.to(device), "triton", block_bytes=12 * 13 * 4)
    assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
    # the row blocks are the full matrix's lower triangle in sorted order
    sorted_ = triton_lcs.sorted_masks(codes.to(device), lens.to(device))
    order, s_codes, s_lens, masks, words = sorted_
    rows = triton_lcs.lcs_rows(s_codes, s_lens, masks, words, 5, 9, block_a=4).cpu()
    full = lcs_lengths(codes, lens, "cpu")[order.cpu()][:, order.cpu()]
    assert torch.equal(rows, torch.tril(full[5:9, :9], diagonal=4))


@pytest.mark.gpu
def test_gpu_streamed_lcs_tree_equals_the_cpu_one_at_size():
    codes, lens = family_codes(3, 3000, 300, n_codes=20)
    got = lcs_single_linkage(codes.cuda(), lens.cuda(), "triton", block_bytes=1 << 20)
    want = lcs_single_linkage(codes, lens, "cpu")
    assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])


def test_lcs_tree_needs_no_full_matrix_in_the_pipeline():
    # a budget far below the 16 N^2 bytes of a full matrix of 1,500 sequences (36 MB)
    rng = np.random.default_rng(5)
    base = rng.choice(list("ACDEFGHIKLMNPQRSTVWY"), 60)
    seqs = ["".join(np.where(rng.random(60) < 0.2, "A", base)) for _ in range(1500)]
    budget = MemoryBudget(host_bytes=16 << 20, device_bytes=16 << 20)
    aln = torchmsa.align(seqs, device="cpu", mode="fast", tree="lcs", budget=budget)
    assert aln.metadata["tree"] == "lcs"
    assert [r.replace("-", "") for r in aln.rows] == seqs
