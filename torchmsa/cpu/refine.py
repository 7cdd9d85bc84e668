"""Refinement's edge evaluations one edge at a time in numba, for pieces too small for batches.

``evaluate_edges`` does for each edge what :func:`torchmsa.refine.evaluate_partitions` does for
a whole batch with tensor operations, with the same integers and the same rules (the numba
twins in :mod:`torchmsa.cpu.rules`): the two groups' kept columns, profiles and boundary
weights, their gap costs and residue factors, the column scores, the consistency tile, the
score of the current path and the DP of ``cpu/dp.py``. Edges are
independent, so they run in parallel; each writes only its own outputs. ``evaluate_edge`` does
one edge with its column scores and consistency tile spread over the threads instead.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from torchmsa.constants import GLOBAL, OP_LEFT, OP_MATCH, OP_UP
from torchmsa.cpu.dp import profile_align_one
from torchmsa.cpu.dp_profile_linear import (
    block_rows,
    linear_path_score,
    no_tile,
    profile_align_linear,
    tile_cells,
)
from torchmsa.cpu.rules.column_scores import column_scores, column_scores_threaded
from torchmsa.cpu.rules.consistency_tile import add_tile
from torchmsa.cpu.rules.gap_costs import gap_costs
from torchmsa.cpu.rules.path_score import path_score
from torchmsa.cpu.rules.residue_factors import residue_factors
from torchmsa.cpu.twins import compiled, pick, small, twin

__all__ = [
    "evaluate_edge",
    "evaluate_edges",
    "evaluate_edge_linear",
    "entries_by_row",
    "residue_columns",
    "first_calls_compiled",
]


def entries_by_row(lib: np.ndarray, val: np.ndarray, n_rows: int) -> tuple[np.ndarray, np.ndarray]:
    """``(by_row int64 [4, 2E], row_ptr int64 [N + 1])``: every library entry under both its
    rows, rows one after another: column t of row r's range ``row_ptr[r] : row_ptr[r + 1]``
    holds the other row, the residue index in r, the residue index in the other row and the
    entry's value. ``lib int64 [4, E]`` holds each entry's ``x, i, y, j``; within a row, the
    entries where it is ``x`` come first, each half in library order."""
    lib = np.ascontiguousarray(lib, dtype=np.int64)
    return _by_row(lib, np.ascontiguousarray(val, dtype=np.int64), n_rows)


@njit(cache=True, nogil=True)
def _by_row(lib, val, n_rows):
    """:func:`entries_by_row` as a counting sort (rows are small integers)."""
    x, i, y, j = lib[0], lib[1], lib[2], lib[3]
    row_ptr = np.zeros(n_rows + 1, np.int64)
    for e in range(x.size):
        row_ptr[x[e] + 1] += 1
        row_ptr[y[e] + 1] += 1
    for r in range(n_rows):
        row_ptr[r + 1] += row_ptr[r]
    at = row_ptr[:n_rows].copy()
    by_row = np.empty((4, 2 * x.size), np.int64)
    for half in range(2):
        for e in range(x.size):
            r, other, ri, oi = (x[e], y[e], i[e], j[e]) if half == 0 else (y[e], x[e], j[e], i[e])
            t = at[r]
            at[r] = t + 1
            by_row[0, t] = other
            by_row[1, t] = ri
            by_row[2, t] = oi
            by_row[3, t] = val[e]
    return by_row, row_ptr


@njit(cache=True, nogil=True)
def residue_columns(codes, gap):
    """``(col int64 [residues], seq_off int64 [N + 1])``: the column of every residue of every
    row, rows one after another."""
    n, width = codes.shape
    seq_off = np.zeros(n + 1, np.int64)
    for r in range(n):
        count = 0
        for c in range(width):
            if codes[r, c] != gap:
                count += 1
        seq_off[r + 1] = seq_off[r] + count
    col = np.empty(seq_off[n], np.int64)
    for r in range(n):
        k = seq_off[r]
        for c in range(width):
            if codes[r, c] != gap:
                col[k] = c
                k += 1
    return col, seq_off


@njit(cache=True, nogil=True)
def _group(codes, weights, side, want, gap, n_alpha):
    """Group ``want`` of an edge: ``(kept columns, sub-alignment index of every kept column,
    profile int64 [n, A], boundary weights int64 [n + 1], weight)``."""
    n_rows, width = codes.shape
    has = np.zeros(width, np.bool_)
    for r in range(n_rows):
        if side[r] == want:
            for c in range(width):
                if codes[r, c] != gap:
                    has[c] = True
    kept = np.nonzero(has)[0]
    n = kept.size
    index = np.zeros(width, np.int64)
    for k in range(n):
        index[kept[k]] = k
    prof = np.zeros((n, n_alpha), np.int64)
    both = np.zeros(n + 1, np.int64)
    w = 0
    for r in range(n_rows):
        if side[r] != want:
            continue
        wr = weights[r]
        w += wr
        before = True  # the outside counts as residue
        for k in range(n):
            x = codes[r, kept[k]]
            here = x != gap
            if here and x < n_alpha:
                prof[k, x] += wr
            if here and before:
                both[k] += wr
            before = here
        if before and n > 0:
            both[n] += wr
    return kept, index, prof, both, w


@njit(cache=True, nogil=True)
def _edge_groups(codes, weights, side, n_alpha, gap, gap_open, t_num, t_den, occ_shift):
    """Both groups of an edge: kept columns, sub-alignment indices, profiles, weights and gap
    costs (opening, closing halves and residue factors)."""
    # np.bool_: not literals, which would compile _group once for each
    kept_a, idx_a, prof_a, both_a, wa = _group(codes, weights, side, np.bool_(True), gap, n_alpha)
    kept_b, idx_b, prof_b, both_b, wb = _group(codes, weights, side, np.bool_(False), gap, n_alpha)
    oa, ca = gap_costs(both_a, wa, gap_open, t_num, t_den, occ_shift)
    ob, cb = gap_costs(both_b, wb, gap_open, t_num, t_den, occ_shift)
    cost_a = (oa, ca, residue_factors(prof_a, wa, occ_shift))
    cost_b = (ob, cb, residue_factors(prof_b, wb, occ_shift))
    return kept_a, idx_a, prof_a, wa, cost_a, kept_b, idx_b, prof_b, wb, cost_b


@njit(cache=True, nogil=True, inline="always")
def _current_path(width, kept_a, kept_b):
    """``(ops, n_ops)``: the path of the current alignment between the groups' kept
    columns (every column is in A, in B or in both: no column is all gaps)."""
    n, m = kept_a.size, kept_b.size
    old = np.empty(width, np.uint8)
    k = np.int64(0)  # not the literal 0, which would compile path_score for it too
    ia = ib = 0
    for c in range(width):
        in_a = ia < n and kept_a[ia] == c
        in_b = ib < m and kept_b[ib] == c
        if in_a and in_b:
            old[k] = OP_MATCH
        elif in_a:
            old[k] = OP_UP
        elif in_b:
            old[k] = OP_LEFT
        else:
            continue
        ia += in_a
        ib += in_b
        k += 1
    return old, k


@njit(cache=True, nogil=True)
def _edge_path(width, kept_a, kept_b, S, cost_a, cost_b, ext, ops):
    """``(DP optimum - current path's score, n_ops)`` once ``S`` holds the edge's scores; the
    new path goes to ``ops``."""
    oa, ca, ra = cost_a
    ob, cb, rb = cost_b
    old, k = _current_path(width, kept_a, kept_b)
    now = path_score(S, oa, ca, ob, cb, ra, rb, ext, old, k)
    # np.int64, not the literal GLOBAL: the DP compiles once for this and pairwise alignment
    best, n_ops = profile_align_one(S, oa, ca, ob, cb, ra, rb, ext, np.int64(GLOBAL), ops)[:2]
    return best - now, n_ops


@njit(cache=True, nogil=True)
def _smaller_group(side):
    """The side (True: group A) with fewer rows; library entries are found from its rows."""
    rows_a = 0
    for r in range(side.size):
        rows_a += side[r]
    return rows_a <= side.size - rows_a


@njit(cache=True, nogil=True)
def _entry_cell(r, t, side, small, by_row, col, seq_off, idx_a, idx_b):
    """``(A column, B column)`` of the tile cell of entry ``t`` listed under row ``r`` (in the
    smaller group ``small``); ``(-1, -1)`` when its other row is in the same group."""
    other = by_row[0, t]
    if side[other] == small:
        return -1, -1
    here = col[seq_off[r] + by_row[1, t]]
    there = col[seq_off[other] + by_row[2, t]]
    if side[r]:
        return idx_a[here], idx_b[there]
    return idx_a[there], idx_b[here]


@njit(cache=True, nogil=True)
def _one_edge(
    codes,
    weights,
    side,
    matrix,
    gap,
    gap_open,
    ext,
    t_num,
    t_den,
    occ_shift,
    by_row,
    row_ptr,
    col,
    seq_off,
    cweight,
    ops,
):
    """``(DP optimum - current path's score, w_a, w_b, n_ops)`` of one edge; its ops to ``ops``."""
    kept_a, idx_a, prof_a, wa, cost_a, kept_b, idx_b, prof_b, wb, cost_b = _edge_groups(
        codes, weights, side, matrix.shape[0], gap, gap_open, t_num, t_den, occ_shift
    )
    n, m = kept_a.size, kept_b.size
    S = column_scores(prof_a, prof_b, matrix, wa, wb, occ_shift)
    if by_row.shape[1] and n and m:
        tile = np.zeros((n, m), np.int64)
        # the entries between the groups, each found once from its end in the smaller group
        small = _smaller_group(side)
        for r in range(side.size):
            if side[r] != small:
                continue
            for t in range(row_ptr[r], row_ptr[r + 1]):
                i, j = _entry_cell(r, t, side, small, by_row, col, seq_off, idx_a, idx_b)
                if i >= 0:
                    tile[i, j] += by_row[3, t]
        add_tile(S, tile, cweight, wa * wb)
    d, n_ops = _edge_path(codes.shape[1], kept_a, kept_b, S, cost_a, cost_b, ext, ops)
    return d, wa, wb, n_ops


@njit(cache=True, parallel=True)
def evaluate_edge(
    codes,
    weights,
    side,
    matrix,
    gap,
    gap_open,
    ext,
    t_num,
    t_den,
    occ_shift,
    by_row,
    row_ptr,
    cweight,
    info,
    ops,
    threads,
):
    """:func:`evaluate_edges` for one edge (``side bool [N]``, ``info int64 [4]``, ``ops uint8
    [2C]``), its column scores and consistency tile spread over ``threads`` threads (a lone
    edge would leave all threads but one idle). The same integers: the tile's cells are sums of
    the same entries, only added in a different order."""
    col, seq_off = residue_columns(codes, gap)
    kept_a, idx_a, prof_a, wa, cost_a, kept_b, idx_b, prof_b, wb, cost_b = _edge_groups(
        codes, weights, side, matrix.shape[0], gap, gap_open, t_num, t_den, occ_shift
    )
    n, m = kept_a.size, kept_b.size
    S = column_scores_threaded(prof_a, prof_b, matrix, wa, wb, occ_shift, threads)
    if by_row.shape[1] and n and m:
        # each entry between the groups once, from its end in the smaller group, as (A column,
        # B column, value) at its place among that group's rows
        small = _smaller_group(side)
        start = np.zeros(side.size + 1, np.int64)
        for r in range(side.size):
            start[r + 1] = start[r] + (row_ptr[r + 1] - row_ptr[r] if side[r] == small else 0)
        at_a = np.empty(start[-1], np.int64)
        at_b = np.empty(start[-1], np.int64)
        for r in prange(side.size):
            if side[r] != small:
                continue
            for t in range(row_ptr[r], row_ptr[r + 1]):
                k = start[r] + t - row_ptr[r]
                at_a[k], at_b[k] = _entry_cell(
                    r, t, side, small, by_row, col, seq_off, idx_a, idx_b
                )
        # each thread sums the entries of its own band of A columns
        bands = min(n, threads)
        for band in prange(bands):
            lo, hi = band * n // bands, (band + 1) * n // bands
            tile = np.zeros((hi - lo, m), np.int64)
            for r in range(side.size):
                if side[r] != small:
                    continue
                for t in range(row_ptr[r], row_ptr[r + 1]):
                    k = start[r] + t - row_ptr[r]
                    if lo <= at_a[k] < hi:
                        tile[at_a[k] - lo, at_b[k]] += by_row[3, t]
            add_tile(S[lo:hi], tile, cweight, wa * wb)
    info[0], info[3] = _edge_path(codes.shape[1], kept_a, kept_b, S, cost_a, cost_b, ext, ops)
    info[1], info[2] = wa, wb


def _evaluate_edges(
    codes,
    weights,
    sides,
    matrix,
    gap,
    gap_open,
    ext,
    t_num,
    t_den,
    occ_shift,
    by_row,
    row_ptr,
    cweight,
    info,
    ops,
):
    """:func:`evaluate_edges`' body, compiled as a parallel function and as its one-thread
    twin.

    Evaluates the edges ``sides bool [K, N]`` (True: group A) against ``codes uint8 [N, C]``.

    ``weights`` are the rows' int64 weights, ``matrix`` the int64 substitution scores. The
    library's entries (possibly none) are listed under each of their rows (``by_row``,
    ``row_ptr``: :func:`entries_by_row`); their values are added times ``cweight``.
    ``info int64 [K, 4]`` gets ``(DP optimum - current score, w_a, w_b, n_ops)`` and
    ``ops uint8 [K, 2C]`` the new paths.
    """
    col, seq_off = residue_columns(codes, gap)
    for k in prange(sides.shape[0]):
        d, wa, wb, n_ops = _one_edge(
            codes,
            weights,
            sides[k],
            matrix,
            gap,
            gap_open,
            ext,
            t_num,
            t_den,
            occ_shift,
            by_row,
            row_ptr,
            col,
            seq_off,
            cweight,
            ops[k],
        )
        info[k, 0] = d
        info[k, 1] = wa
        info[k, 2] = wb
        info[k, 3] = n_ops


@njit(cache=True, nogil=True)
def evaluate_edge_linear(
    codes,
    weights,
    side,
    matrix,
    gap,
    gap_open,
    ext,
    t_num,
    t_den,
    occ_shift,
    by_row,
    row_ptr,
    cweight,
    info,
    ops,
):
    """:func:`evaluate_edges` for one edge in linear space (``cpu/dp_profile_linear.py``): no
    column-score matrix and no whole consistency tile, the same integers and ops."""
    kept_a, idx_a, prof_a, wa, cost_a, kept_b, idx_b, prof_b, wb, cost_b = _edge_groups(
        codes, weights, side, matrix.shape[0], gap, gap_open, t_num, t_den, occ_shift
    )
    n, m = kept_a.size, kept_b.size
    costs = (cost_a[0], cost_a[1], cost_b[0], cost_b[1], cost_a[2], cost_b[2])
    tile = no_tile()
    if by_row.shape[1] and n and m:
        col, seq_off = residue_columns(codes, gap)
        small = _smaller_group(side)
        keys = np.empty(row_ptr[-1], np.int64)
        vals = np.empty(row_ptr[-1], np.int64)
        count = 0
        for r in range(side.size):
            if side[r] != small:
                continue
            for t in range(row_ptr[r], row_ptr[r + 1]):
                i, j = _entry_cell(r, t, side, small, by_row, col, seq_off, idx_a, idx_b)
                if i >= 0:
                    keys[count] = i * m + j
                    vals[count] = by_row[3, t]
                    count += 1
        ti, tj, tv = tile_cells(keys[:count], vals[:count], m)
        tile = (ti, tj, tv, np.int64(cweight), wa * wb)
    old, k = _current_path(codes.shape[1], kept_a, kept_b)
    now = linear_path_score(prof_a, prof_b, matrix, wa, wb, occ_shift, costs, ext, old, k, tile)
    rows = block_rows(n, m)
    best, n_ops = profile_align_linear(
        prof_a, prof_b, matrix, wa, wb, occ_shift, costs, ext, rows, ops, tile
    )
    info[0] = best - now
    info[1] = wa
    info[2] = wb
    info[3] = n_ops


_edges_parallel = njit(cache=True, parallel=True)(_evaluate_edges)
_edges_serial = njit(cache=True, nogil=True)(twin(_evaluate_edges))


def first_calls_compiled() -> bool:
    """Whether what a first call of :func:`evaluate_edges` takes is compiled (in this process
    or numba's disk cache): the one-edge function of small calls and the one-thread twin."""
    return compiled(_one_edge) and compiled(_edges_serial)


def evaluate_edges(codes, weights, sides, matrix, gap, *rest):
    """Evaluates the edges ``sides bool [K, N]`` against ``codes uint8 [N, C]`` (the arguments
    of :func:`_evaluate_edges`), on the threads, or on one thread when ``K`` edges of ``C``
    columns make few cells (:mod:`torchmsa.cpu.twins`).

    Few cells: edge by edge from here, each a call of :func:`_one_edge` (tens of microseconds
    each), which compiles nothing more; a loop in numba would link and optimise all of
    ``_one_edge`` again (2-3 s of a first ``align``)."""
    cells = sides.shape[0] * codes.shape[1] * codes.shape[1]
    if small(cells):
        gap_open, ext, t_num, t_den, occ_shift, by_row, row_ptr, cweight, info, ops = rest
        col, seq_off = residue_columns(codes, gap)
        for k in range(sides.shape[0]):
            info[k] = _one_edge(
                codes, weights, sides[k], matrix, gap, gap_open, ext, t_num, t_den, occ_shift,
                by_row, row_ptr, col, seq_off, cweight, ops[k],
            )  # fmt: skip
        return
    run = pick(_edges_parallel, _edges_serial, cells)
    run(codes, weights, sides, matrix, gap, *rest)
