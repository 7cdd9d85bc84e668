"""The linear-space profile DP (``cpu/dp_profile_linear.py``) against the full-matrix one:
the same score and ops on random profiles of awkward sizes and blocks of 1 to 17 rows, and its
path score against ``path_score`` on the full column scores."""

from __future__ import annotations

import numpy as np
import pytest

from torchmsa.constants import GLOBAL, OP_LEFT, OP_MATCH, OP_UP
from torchmsa.cpu.dp import profile_align_one
from torchmsa.cpu.dp_linear import full_bytes
from torchmsa.cpu.dp_profile_linear import (
    block_rows,
    linear_path_score,
    no_tile,
    profile_align_linear,
    profile_linear_bytes,
    tile_cells,
)
from torchmsa.cpu.rules.column_scores import column_scores
from torchmsa.cpu.rules.consistency_tile import add_tile
from torchmsa.cpu.rules.gap_costs import gap_costs
from torchmsa.cpu.rules.path_score import path_score
from torchmsa.cpu.rules.residue_factors import residue_factors

A = 21
OCC_SHIFT = 2
_M = np.random.default_rng(0).integers(-40, 60, (A, A))
MATRIX = (_M + _M.T).astype(np.int64)


def _matrix():
    return MATRIX


def _profile(rng, n, rows):
    """A profile of ``rows`` sequences of weight 3..9 over ``n`` columns (some gaps), and its
    boundary weights and total weight."""
    weights = rng.integers(3, 10, rows)
    prof = np.zeros((n, A), np.int64)
    both = np.zeros(n + 1, np.int64)
    for r in range(rows):
        present = rng.random(n) > 0.2
        before = True
        for k in range(n):
            if present[k]:
                prof[k, rng.integers(0, A)] += weights[r]
                if before:
                    both[k] += weights[r]
            before = present[k]
        if before:
            both[n] += weights[r]
    return prof, both, int(weights.sum())


def _case(rng, n, m):
    prof_a, both_a, wa = _profile(rng, n, int(rng.integers(1, 4)))
    prof_b, both_b, wb = _profile(rng, m, int(rng.integers(1, 4)))
    oa, ca = gap_costs(both_a, wa, 110, 1, 2, OCC_SHIFT)
    ob, cb = gap_costs(both_b, wb, 110, 1, 2, OCC_SHIFT)
    costs = (oa, ca, ob, cb, residue_factors(prof_a, wa, OCC_SHIFT))
    costs = costs + (residue_factors(prof_b, wb, OCC_SHIFT),)
    return prof_a, wa, prof_b, wb, costs


def _tile(rng, n, m, wa, wb):
    """Random consistency entries (some on the same cell, some negative sums) as the full
    path's ``int64 [n, m]`` tile and the linear path's ``tile`` argument."""
    count = int(rng.integers(0, 3 * (n + m) + 1)) if n and m else 0
    i, j = rng.integers(0, max(n, 1), count), rng.integers(0, max(m, 1), count)
    val = rng.integers(-50, 400, count).astype(np.int64)
    full = np.zeros((n, m), np.int64)
    np.add.at(full, (i, j), val)
    ti, tj, tv = tile_cells((i * m + j).astype(np.int64), val, m)
    return full, (ti, tj, tv, 7, wa * wb)


def _full(prof_a, wa, prof_b, wb, costs, ext, tile=None):
    S = column_scores(prof_a, prof_b, _matrix(), wa, wb, OCC_SHIFT)
    if tile is not None:
        add_tile(S, tile, 7, wa * wb)
    ops = np.zeros(prof_a.shape[0] + prof_b.shape[0], np.uint8)
    score, k = profile_align_one(S, *costs, ext, np.int64(GLOBAL), ops)[:2]
    return S, int(score), ops[:k].copy()


SIZES = [(0, 0), (0, 5), (6, 0), (1, 1), (1, 9), (9, 1), (13, 7), (30, 41), (57, 33)]


@pytest.mark.parametrize("n, m", SIZES)
@pytest.mark.parametrize("rows", [1, 2, 5, 17])
@pytest.mark.parametrize("with_tile", [False, True])
def test_equals_full_matrix_path(n, m, rows, with_tile):
    rng = np.random.default_rng(n * 1000 + m * 10 + rows + with_tile)
    for ext in (1, 9, 40):
        prof_a, wa, prof_b, wb, costs = _case(rng, n, m)
        full, tile = _tile(rng, n, m, wa, wb) if with_tile else (None, no_tile())
        _, score, ops = _full(prof_a, wa, prof_b, wb, costs, ext, full)
        got = np.zeros(n + m, np.uint8)
        s, k = profile_align_linear(
            prof_a, prof_b, _matrix(), wa, wb, OCC_SHIFT, costs, ext, rows, got, tile
        )
        assert (int(s), list(got[:k])) == (score, list(ops))


def test_equals_full_matrix_path_with_many_ties():
    """One-residue profiles of two letters: many equal paths, the tie rule decides."""
    rng = np.random.default_rng(7)
    for _ in range(20):
        n, m = (int(x) for x in rng.integers(1, 40, 2))
        prof_a = np.zeros((n, A), np.int64)
        prof_b = np.zeros((m, A), np.int64)
        prof_a[np.arange(n), rng.integers(0, 2, n)] = 4
        prof_b[np.arange(m), rng.integers(0, 2, m)] = 4
        both_a, both_b = np.full(n + 1, 4, np.int64), np.full(m + 1, 4, np.int64)
        oa, ca = gap_costs(both_a, 4, 50, 1, 2, OCC_SHIFT)
        ob, cb = gap_costs(both_b, 4, 50, 1, 2, OCC_SHIFT)
        costs = (oa, ca, ob, cb, residue_factors(prof_a, 4, OCC_SHIFT))
        costs = costs + (residue_factors(prof_b, 4, OCC_SHIFT),)
        _, score, ops = _full(prof_a, 4, prof_b, 4, costs, 10)
        for rows in (1, 3, block_rows(n, m)):
            got = np.zeros(n + m, np.uint8)
            s, k = profile_align_linear(
                prof_a, prof_b, _matrix(), 4, 4, OCC_SHIFT, costs, 10, rows, got, no_tile()
            )
            assert (int(s), list(got[:k])) == (score, list(ops))


def _random_path(rng, n, m):
    ops, i, j = [], 0, 0
    while i < n or j < m:
        choices = [
            op for op, ok in ((OP_MATCH, i < n and j < m), (OP_UP, i < n), (OP_LEFT, j < m)) if ok
        ]
        op = choices[int(rng.integers(0, len(choices)))]
        ops.append(op)
        i += op != OP_LEFT
        j += op != OP_UP
    return np.asarray(ops, np.uint8)


@pytest.mark.parametrize("n, m", [(1, 1), (8, 3), (25, 31)])
@pytest.mark.parametrize("with_tile", [False, True])
def test_path_score_without_the_matrix(n, m, with_tile):
    rng = np.random.default_rng(n + m)
    for _ in range(10):
        prof_a, wa, prof_b, wb, costs = _case(rng, n, m)
        full, tile = _tile(rng, n, m, wa, wb) if with_tile else (None, no_tile())
        S = column_scores(prof_a, prof_b, _matrix(), wa, wb, OCC_SHIFT)
        if full is not None:
            add_tile(S, full, 7, wa * wb)
        ops = _random_path(rng, n, m)
        want = path_score(S, *costs, 7, ops, len(ops))
        got = linear_path_score(
            prof_a, prof_b, _matrix(), wa, wb, OCC_SHIFT, costs, 7, ops, len(ops), tile
        )
        assert int(got) == int(want)


def test_tile_cells_sum_entries_per_cell_in_order():
    key = np.array([7, 2, 7, 0, 5, 2], np.int64)
    val = np.array([1, 10, 100, 1000, 0, -3], np.int64)
    ti, tj, tv = tile_cells(key, val, 3)
    assert (list(ti), list(tj), list(tv)) == ([0, 0, 1, 2], [0, 2, 2, 1], [1000, 7, 0, 101])


def test_memory_is_linear():
    n = m = 30_000
    rows = block_rows(n, m)
    assert profile_linear_bytes(n, m, rows, A) < 80 << 20
    assert full_bytes(n, m) > 4 << 30  # the full path: scores and direction bits
    assert block_rows(0, 5) == 1 and block_rows(1, 5) == 1
