"""Identical and aligned residue pairs of alignment rows: the numba twin against the one-hot
matrix products and a plain-Python count, and the p-distances built on them."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from torchmsa.ops.identity import identity_counts, identity_counts_products
from torchmsa.pipeline.trees import alignment_distances

GAP = 24


def _oracle(rows: list[list[int]], gap: int):
    n = len(rows)
    same = [[0] * n for _ in range(n)]
    pairs = [[0] * n for _ in range(n)]
    for i in range(n):
        for j in range(n):
            for x, y in zip(rows[i], rows[j]):
                pairs[i][j] += x != gap and y != gap
                same[i][j] += x != gap and x == y
    return same, pairs


def _codes(rng, n: int, w: int, gap_rate: float) -> torch.Tensor:
    codes = rng.integers(0, 4, (n, w))  # few letters: many identities
    codes[rng.random((n, w)) < gap_rate] = GAP
    return torch.from_numpy(codes.astype(np.uint8))


@pytest.mark.parametrize("n,w,gap_rate", [(1, 7, 0.2), (5, 0, 0.0), (6, 13, 0.4), (9, 40, 1.0)])
def test_counts_match_a_plain_count(n, w, gap_rate):
    codes = _codes(np.random.default_rng(n * 100 + w), n, w, gap_rate)
    same, pairs = identity_counts(codes, GAP)
    want_same, want_pairs = _oracle(codes.tolist(), GAP)
    assert same.dtype == pairs.dtype == torch.float64
    assert same.tolist() == want_same and pairs.tolist() == want_pairs


def test_the_twin_gives_the_products_integers():
    rng = np.random.default_rng(7)
    for n, w in ((40, 300), (130, 77)):
        codes = _codes(rng, n, w, 0.3)
        codes[3] = GAP  # an all-gap row: no aligned pairs
        got = identity_counts(codes, GAP)
        want = identity_counts_products(codes, GAP)
        assert all(torch.equal(g, h) for g, h in zip(got, want))


def test_p_distances_of_an_alignment():
    rows = ["AC-G", "AC-T", "----"]
    codes = torch.tensor([[{"A": 0, "C": 1, "G": 2, "T": 3, "-": GAP}[c] for c in r] for r in rows])
    dist = alignment_distances(codes.to(torch.uint8), GAP)
    # rows 0 and 1 share 3 aligned residue pairs, 2 of them identical; row 2 has no residues
    want = [[0.0, 1 / 3, 1.0], [1 / 3, 0.0, 1.0], [1.0, 1.0, 0.0]]
    assert torch.allclose(dist, torch.tensor(want, dtype=torch.float64), rtol=0, atol=1e-15)
