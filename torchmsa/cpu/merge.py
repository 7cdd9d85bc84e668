"""Progressive merges one node at a time in numba, for tree levels too small for batched launches.

``merge_nodes`` does for each node pair what :mod:`torchmsa.progressive.level` does for a whole
level with tensor operations, with the same integers and the same rules (the numba twins in
:mod:`torchmsa.cpu.rules`): child profiles (leaves from their codes, inner nodes from the pool),
boundary gap costs and residue factors, column scores, the DP of ``cpu/dp.py`` and the merge of
profiles and boundary weights through the traceback. In accurate mode each merge also adds its
consistency tile (the library entries whose sequences meet at this parent) and keeps every
residue's column in its current node up to date, as the batched levels do.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from torchmsa.constants import GLOBAL
from torchmsa.cpu.dp import profile_align_one
from torchmsa.cpu.dp_profile_linear import (
    block_rows,
    no_tile,
    profile_align_linear,
    tile_cells,
)
from torchmsa.cpu.rules.boundary_weights import merged_boundaries
from torchmsa.cpu.rules.column_scores import column_scores, column_scores_threaded
from torchmsa.cpu.rules.consistency_tile import add_tile
from torchmsa.cpu.rules.gap_costs import gap_costs
from torchmsa.cpu.rules.path_columns import path_columns
from torchmsa.cpu.rules.residue_factors import residue_factors
from torchmsa.cpu.twins import pick, twin

__all__ = ["merge_nodes"]


@njit(cache=True, nogil=True)
def _child(x, n, weight, n_leaves, seq_off, codes, prof_pool, both_pool, row, bnd, n_alpha):
    """``(profile int64 [n, A], boundary weights int64 [n + 1])`` of node ``x``."""
    prof = np.zeros((n, n_alpha), np.int64)
    both = np.empty(n + 1, np.int64)
    if x < n_leaves:
        for k in range(n):
            prof[k, codes[seq_off[x] + k]] = weight
        both[:] = weight if n > 0 else 0
    else:
        for k in range(n):
            for c in range(n_alpha):
                prof[k, c] = prof_pool[row[x] + k, c]
        for k in range(n + 1):
            both[k] = both_pool[bnd[x] + k]
    return prof, both


@njit(cache=True, nogil=True)
def _add_child(
    x,
    n,
    weight,
    to,
    width,
    rows,
    bnds,
    n_leaves,
    seq_off,
    codes,
    prof_pool,
    both_pool,
    row,
    bnd,
    n_alpha,
):
    """Adds node ``x``'s profile and boundary weights (its column k going to parent column
    ``to[k]``) to the parent's, which start at ``rows`` / ``bnds`` in the pools, past every
    child's, straight from the leaf's codes or the node's pool rows (no copy as in
    :func:`_child`)."""
    if x < n_leaves:
        for k in range(n):
            prof_pool[rows + to[k], codes[seq_off[x] + k]] += weight
        merged_boundaries(np.full(n + 1, weight, np.int64), to, n, width, both_pool, bnds)
    else:
        for k in range(n):
            for c in range(n_alpha):
                prof_pool[rows + to[k], c] += prof_pool[row[x] + k, c]
        merged_boundaries(both_pool[bnd[x] : bnd[x] + n + 1], to, n, width, both_pool, bnds)


@njit(cache=True, nogil=True)
def _add_tile(S, a, ent, lo, hi, seq_off, res_col, node_of_seq, cweight, denom):
    """Adds the consistency of entries ``lo : hi`` (between node ``a`` and its sibling)."""
    n, m = S.shape
    tile = np.zeros((n, m), np.int64)
    for e in range(lo, hi):
        x, y = ent[0, e], ent[2, e]
        cx = res_col[seq_off[x] + ent[1, e]]
        cy = res_col[seq_off[y] + ent[3, e]]
        if node_of_seq[x] == a:
            tile[cx, cy] += ent[4, e]
        else:
            tile[cy, cx] += ent[4, e]
    add_tile(S, tile, cweight, denom)


@njit(cache=True, nogil=True)
def _kids(q, pairs, cols, weights, *args):
    """Pair ``q``'s two children as ``(prof_a, both_a, prof_b, both_b)`` (:func:`_child`)."""
    a, b = pairs[q, 0], pairs[q, 1]
    return _child(a, cols[a], weights[a], *args) + _child(b, cols[b], weights[b], *args)


@njit(cache=True, nogil=True, inline="always")
def _pair_costs(q, pairs, kids, cols, weights, gap_open, t_num, t_den, occ_shift):
    """Pair ``q``'s ``(a, n, m, w_a, w_b)`` and its DP costs ``(open_a, close_a, open_b,
    close_b, res_a, res_b)``: boundary gap costs and residue factors of both children."""
    prof_a, both_a, prof_b, both_b = kids
    a, b = pairs[q, 0], pairs[q, 1]
    n, m, wa, wb = cols[a], cols[b], weights[a], weights[b]
    oa, ca = gap_costs(both_a, wa, gap_open, t_num, t_den, occ_shift)
    ob, cb = gap_costs(both_b, wb, gap_open, t_num, t_den, occ_shift)
    ra = residue_factors(prof_a, wa, occ_shift)
    rb = residue_factors(prof_b, wb, occ_shift)
    return (a, n, m, wa, wb), (oa, ca, ob, cb, ra, rb)


@njit(cache=True, nogil=True)
def _pair_dp(q, pairs, kids, S, ops, cols, weights, gap_open, ext, t_num, t_den, occ_shift, *cons):
    """Pair ``q``'s DP on its column scores ``S`` (plus its consistency tile, when ``cons``
    holds entries) into ``ops``; ``kids``: the children's profiles and boundary weights.
    Returns the alignment's width."""
    ent, ent_lo, ent_hi, cweight, seq_off, res_col, node_of_seq = cons
    (a, n, m, wa, wb), costs = _pair_costs(
        q, pairs, kids, cols, weights, gap_open, t_num, t_den, occ_shift
    )
    if node_of_seq.size > 0 and ent_hi[q] > ent_lo[q] and n > 0 and m > 0:
        _add_tile(S, a, ent, ent_lo[q], ent_hi[q], seq_off, res_col, node_of_seq, cweight, wa * wb)
    # np.int64, not the literal GLOBAL: the DP compiles once for this and pairwise alignment
    return profile_align_one(S, *costs, ext, np.int64(GLOBAL), ops)[1]


@njit(cache=True, nogil=True)
def _pair_dp_linear(
    q, pairs, kids, matrix, ops, cols, weights, gap_open, ext, t_num, t_den, occ, *cons
):
    """:func:`_pair_dp` in linear space (``cpu/dp_profile_linear.py``: no column-score
    matrix, no whole consistency tile, the same ops), for pairs of more than
    ``linear_cells`` cells. Returns the alignment's width."""
    ent, ent_lo, ent_hi, cweight, seq_off, res_col, node_of_seq = cons
    (a, n, m, wa, wb), costs = _pair_costs(
        q, pairs, kids, cols, weights, gap_open, t_num, t_den, occ
    )
    tile = no_tile()
    if node_of_seq.size > 0 and ent_hi[q] > ent_lo[q]:
        lo, hi = ent_lo[q], ent_hi[q]
        key = np.empty(hi - lo, np.int64)
        for e in range(lo, hi):
            x, y = ent[0, e], ent[2, e]
            cx = res_col[seq_off[x] + ent[1, e]]
            cy = res_col[seq_off[y] + ent[3, e]]
            key[e - lo] = cx * m + cy if node_of_seq[x] == a else cy * m + cx
        ti, tj, tv = tile_cells(key, ent[4, lo:hi].copy(), m)
        tile = (ti, tj, tv, np.int64(cweight), wa * wb)
    rows = block_rows(n, m)
    prof_a, prof_b = kids[0], kids[2]
    return profile_align_linear(prof_a, prof_b, matrix, wa, wb, occ, costs, ext, rows, ops, tile)[1]


def _merge_nodes(
    pairs,
    level_start,
    n_leaves,
    cols,
    weights,
    seq_off,
    codes,
    prof_pool,
    both_pool,
    row,
    bnd,
    rows_used,
    bnds_used,
    matrix,
    gap_open,
    ext,
    t_num,
    t_den,
    occ_shift,
    new_col,
    ent,
    ent_lo,
    ent_hi,
    cweight,
    res_col,
    node_of_seq,
    threads,
    lone_cells,
    linear_cells,
):
    """:func:`merge_nodes`' body, compiled as a parallel function and as its one-thread twin.

    Aligns node pairs ``pairs [Q, 3]`` (child, child, parent), level after level: level v
    is ``pairs[level_start[v] : level_start[v + 1]]``, its pairs aligned in parallel and merged
    in order.

    Every parent's profile and boundary weights are appended to the pools after
    ``rows_used`` / ``bnds_used``; its columns, weight and pool offsets go to ``cols``,
    ``weights``, ``row``, ``bnd``. ``new_col`` gets, node after node, the parent column of each
    column of the first child, then of the second. ``occ_shift`` is the occupancy floor's
    shift (:mod:`torchmsa.ops.rules.column_scores`). Returns the pools' new ends and the number of
    ``new_col`` entries written.

    A level of one pair of at least ``lone_cells`` cells computes its column scores on
    ``threads`` threads (the same integers; the parallel functions only). A pair of more
    than ``linear_cells`` cells is aligned in linear space (:func:`_pair_dp_linear`, the same
    ops).

    Consistency (accurate mode; otherwise ``node_of_seq`` is empty): library entries
    ``ent int64 [5, E]`` (``x, i, y, j`` and the value ``w w_x w_y``), pair q's at
    ``ent_lo[q] : ent_hi[q]``, add ``floor(cweight * sum / (w_a w_b))`` to the cells they touch;
    ``res_col`` (every residue's column in its current node) and ``node_of_seq`` (every
    sequence's current node) are kept up to date.
    """
    track = node_of_seq.size > 0
    n_alpha = matrix.shape[0]
    args = (n_leaves, seq_off, codes, prof_pool, both_pool, row, bnd, n_alpha)
    cons = (ent, ent_lo, ent_hi, cweight, seq_off, res_col, node_of_seq)
    dp_args = (cols, weights, gap_open, ext, t_num, t_den, occ_shift, *cons)
    lin_args = (cols, weights, gap_open, ext, t_num, t_den, occ_shift, *cons)
    used = 0
    for lv in range(level_start.size - 1):
        lo, hi = level_start[lv], level_start[lv + 1]
        # the level's pairs are independent: their DPs run in parallel, then merge in order.
        # (No np.zeros and no slice filled with a constant here: in a parallel function each
        # becomes a parallel loop of its own, whose start costs more than its work.)
        count = hi - lo
        ops_off = np.empty(count + 1, np.int64)
        ops_off[0] = 0
        for k in range(count):
            ops_off[k + 1] = ops_off[k] + cols[pairs[lo + k, 0]] + cols[pairs[lo + k, 1]]
        ops_buf = np.empty(ops_off[count], np.uint8)
        widths = np.empty(count, np.int64)
        cells = cols[pairs[lo, 0]] * cols[pairs[lo, 1]]
        lone = False
        if _LONE_PATH:  # a compile-time constant, as _LINEAR_PATH
            lone = count == 1 and lone_cells <= cells <= linear_cells
        for k in prange(count - int(lone)):
            q = lo + k
            kids = _kids(q, pairs, cols, weights, *args)
            ops = ops_buf[ops_off[k] : ops_off[k + 1]]
            wx, wy = weights[pairs[q, 0]], weights[pairs[q, 1]]
            if _LINEAR_PATH:  # a compile-time constant: the other branch is not compiled
                if cols[pairs[q, 0]] * cols[pairs[q, 1]] > linear_cells:
                    widths[k] = _pair_dp_linear(q, pairs, kids, matrix, ops, *lin_args)
                else:
                    S = column_scores(kids[0], kids[2], matrix, wx, wy, occ_shift)
                    widths[k] = _pair_dp(q, pairs, kids, S, ops, *dp_args)
            else:
                S = column_scores(kids[0], kids[2], matrix, wx, wy, occ_shift)
                widths[k] = _pair_dp(q, pairs, kids, S, ops, *dp_args)
        if _LONE_PATH:
            if lone:  # one wide pair (a link of a deep chain): its column scores on all threads
                kids = _kids(lo, pairs, cols, weights, *args)
                wx, wy = weights[pairs[lo, 0]], weights[pairs[lo, 1]]
                S = column_scores_threaded(kids[0], kids[2], matrix, wx, wy, occ_shift, threads)
                widths[0] = _pair_dp(lo, pairs, kids, S, ops_buf, *dp_args)
        for k in range(count):
            q = lo + k
            a, b, par = pairs[q, 0], pairs[q, 1], pairs[q, 2]
            n, m, wa, wb = cols[a], cols[b], weights[a], weights[b]
            ops, width = ops_buf[ops_off[k] : ops_off[k + 1]], widths[k]
            map_a = new_col[used : used + n]
            map_b = new_col[used + n : used + n + m]
            path_columns(ops, width, map_a, map_b)
            used += n + m
            if track:
                for sq in range(node_of_seq.size):
                    nd = node_of_seq[sq]
                    if nd == a or nd == b:
                        to = map_a if nd == a else map_b
                        for r in range(seq_off[sq], seq_off[sq + 1]):
                            res_col[r] = to[res_col[r]]
                        node_of_seq[sq] = par
            for t in range(width):
                for c in range(n_alpha):
                    prof_pool[rows_used + t, c] = 0
            for t in range(width + 1):
                both_pool[bnds_used + t] = 0
            _add_child(a, n, wa, map_a, width, rows_used, bnds_used, *args)
            _add_child(b, m, wb, map_b, width, rows_used, bnds_used, *args)
            cols[par] = width
            weights[par] = wa + wb
            row[par] = rows_used
            bnd[par] = bnds_used
            rows_used += width
            bnds_used += width + 1
    return rows_used, bnds_used, used


# Pairs above ``linear_cells`` are aligned in linear space only in the ``_linear`` twins; the
# others, for runs without such pairs, leave that code out (a first align compiles 6 s less).
# The one-thread twins leave out the lone pair's threaded column scores: on one thread the
# level's loop computes the same scores.
_LINEAR_PATH = False
_LONE_PATH = True
_ONE = {"_LONE_PATH": False}
_merge_parallel = njit(cache=True, parallel=True)(_merge_nodes)
_merge_serial = njit(cache=True, nogil=True)(twin(_merge_nodes, **_ONE))
_LINEAR = {"_LINEAR_PATH": True}
_merge_parallel_linear = njit(cache=True, parallel=True)(twin(_merge_nodes, "_linear", **_LINEAR))
_merge_serial_linear = njit(cache=True, nogil=True)(
    twin(_merge_nodes, "_serial_linear", **_ONE, **_LINEAR)
)


def merge_nodes(pairs, level_start, n_leaves, cols, weights, seq_off, *rest, cells, wide=False):
    """Aligns node pairs ``pairs [Q, 3]`` (child, child, parent) level after level (the
    arguments and results of :func:`_merge_nodes`), on the threads, or on one thread when the
    run has few cells (:mod:`torchmsa.cpu.twins`). ``cells``: the run's DP cells, or a bound
    on them (its pairs' children's bounds multiplied; the longest sequence says little of a
    profile's width: counted as pairs of it, a run near a tree's root looked 10-20 times
    smaller than it is).
    ``wide``: some pair may have more than ``linear_cells`` cells (the variants that align
    those in linear space; the others align them with whole matrices)."""
    if wide:
        run = pick(_merge_parallel_linear, _merge_serial_linear, cells)
    else:
        run = pick(_merge_parallel, _merge_serial, cells)
    return run(pairs, level_start, n_leaves, cols, weights, seq_off, *rest)
