"""Progressive merges one node at a time in numba, for tree levels too small for batched launches.

``merge_nodes`` does for each node pair what ``torchmsa/progressive.py`` does for a whole level
with tensor operations, with the same integers: child profiles (leaves from their codes, inner
nodes from the pool), boundary gap costs and residue factors, column scores
``floor(P_a M P_bᵀ / (d_a d_b))`` (``ops/colscores.py``: ``d = min(w, r 2^OCC_SHIFT)``) in
float64 loops (exact, as the batched path's matrix products are, so both give the exact
floor), the DP of ``cpu/dp.py`` and the merge of profiles and boundary weights through the
traceback. In accurate mode each merge also adds its consistency tile (``consistency.py``: the
library entries whose sequences meet at this parent, each cell's sum times the weight, floored)
and keeps every residue's column in its current node up to date, as the batched levels do.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from torchmsa.cpu.dp import GLOBAL, OP_LEFT, OP_UP, RES_ONE, _profile_align

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
        _merge_both(np.full(n + 1, weight, np.int64), to, n, width, both_pool, bnds)
    else:
        for k in range(n):
            for c in range(n_alpha):
                prof_pool[rows + to[k], c] += prof_pool[row[x] + k, c]
        _merge_both(both_pool[bnd[x] : bnd[x] + n + 1], to, n, width, both_pool, bnds)


@njit(cache=True, nogil=True)
def _costs(prof, both, weight, gap_open, t_num, t_den, occ_shift):
    """Opening and closing halves of each boundary's gap cost, and the residue factors."""
    n = prof.shape[0]
    opening = np.empty(n + 1, np.int32)
    closing = np.empty(n + 1, np.int32)
    res = np.zeros(n + 1, np.int32)
    for k in range(n + 1):
        crossing = both[k]
        if crossing > 0:
            crossing = max(crossing, weight >> occ_shift)
        cost = gap_open * crossing // weight
        if k == 0 or k == n:
            cost = cost * t_num // t_den
        closing[k] = cost // 2
        opening[k] = cost - cost // 2
    for k in range(n):
        res[k + 1] = max(prof[k].sum() * RES_ONE // weight, RES_ONE >> occ_shift)
    return opening, closing, res


@njit(cache=True, nogil=True)
def _divisors(prof, weight, occ_shift):
    """Each column's divisor ``min(weight, r << occ_shift)`` (``ops.colscores``)."""
    d = np.empty(prof.shape[0], np.int64)
    for k in range(prof.shape[0]):
        d[k] = max(min(weight, prof[k].sum() << occ_shift), 1)
    return d


@njit(cache=True, nogil=True)
def _scores(prof_a, prof_b, matrix, wa, wb, occ_shift):
    """``int32 [n, m]`` column scores ``floor(P_a M P_bᵀ / (d_a d_b))``. Every product and
    partial sum is an integer of magnitude at most ``w_a max|M| w_b`` < 2^53
    (``ops/colscores.py``), so the float64 loops are exact in any order and the floor of the
    correctly rounded quotient is the exact floor; float64 lets the inner loop vectorise.
    Each cell costs one multiply-add per residue type present in the sparser profile's column
    (a group of k sequences has at most k), not one per letter of the alphabet."""
    da, db = _divisors(prof_a, wa, occ_shift), _divisors(prof_b, wb, occ_shift)
    if _nonzeros(prof_a) <= _nonzeros(prof_b):
        return _sparse_rows(prof_a, prof_b, matrix, da, db)
    return _sparse_rows(prof_b, prof_a, matrix.T, db, da).T.copy()


@njit(cache=True, parallel=True)
def scores_threaded(prof_a, prof_b, matrix, wa, wb, occ_shift, threads):
    """:func:`_scores` with its rows spread over ``threads`` threads (the same integers: every
    cell is the exact floor whichever profile's nonzeros the loops run over)."""
    da, db = _divisors(prof_a, wa, occ_shift), _divisors(prof_b, wb, occ_shift)
    flip = _nonzeros(prof_a) > _nonzeros(prof_b)
    rows, cols = (prof_b, prof_a) if flip else (prof_a, prof_b)
    d_rows, d_cols = (db, da) if flip else (da, db)
    mat = matrix.T.copy() if flip else matrix.copy()
    mb, inv_b, dbf = _row_terms(cols, mat, d_cols)
    n, m = rows.shape[0], cols.shape[0]
    out = np.empty((n, m), np.int32)
    chunks = min(n, 4 * threads)
    for c in prange(chunks):
        raw = np.empty(m, np.float64)
        for i in range(c * n // chunks, (c + 1) * n // chunks):
            _score_row(i, rows, mb, d_rows, inv_b, dbf, raw, out)
    if not flip:
        return out
    S = np.empty((m, n), np.int32)
    for j in prange(m):
        for i in range(n):
            S[j, i] = out[i, j]
    return S


@njit(cache=True, nogil=True)
def _nonzeros(prof):
    count = 0
    for i in range(prof.shape[0]):
        for p in range(prof.shape[1]):
            count += prof[i, p] != 0
    return count


@njit(cache=True, nogil=True)
def _sparse_rows(prof_a, prof_b, matrix, da, db):
    """:func:`_scores` row by row over the nonzero entries of ``prof_a``'s columns:
    ``S[i] = floor(sum_p P_a[i, p] (M P_bᵀ)[p] / (d_a[i] d_b))``."""
    mb, inv_b, dbf = _row_terms(prof_b, matrix, db)
    S = np.empty((prof_a.shape[0], prof_b.shape[0]), np.int32)
    raw = np.empty(prof_b.shape[0], np.float64)
    for i in range(prof_a.shape[0]):
        _score_row(i, prof_a, mb, da, inv_b, dbf, raw, S)
    return S


@njit(cache=True, nogil=True)
def _row_terms(prof_b, matrix, db):
    """What every row of :func:`_sparse_rows` shares: ``M P_bᵀ``, ``1 / d_b`` and ``d_b``."""
    m, n_alpha = prof_b.shape[0], matrix.shape[0]
    mb = np.zeros((n_alpha, m), np.float64)  # M P_bᵀ
    for j in range(m):
        for q in range(n_alpha):
            v = prof_b[j, q]
            if v != 0:
                for p in range(n_alpha):
                    mb[p, j] += matrix[p, q] * v
    dbf = db.astype(np.float64)
    return mb, 1.0 / dbf, dbf


@njit(cache=True, nogil=True)
def _score_row(i, prof_a, mb, da, inv_b, dbf, raw, S):
    """Row ``i`` of :func:`_sparse_rows` into ``S[i]`` (``raw``: float64 scratch of one row)."""
    n_alpha, m = mb.shape
    # a column of one residue type (every column of a single sequence) scales one row of
    # M P_bᵀ: no sum to clear and accumulate
    only, count = 0, 0
    for p in range(n_alpha):
        if prof_a[i, p] != 0:
            only = p
            count += 1
    if count == 1:
        v = np.float64(prof_a[i, only])
        for j in range(m):
            raw[j] = v * mb[only, j]
    else:
        raw[:] = 0.0
        for p in range(n_alpha):
            v = np.float64(prof_a[i, p])
            if v != 0.0:
                for j in range(m):
                    raw[j] += v * mb[p, j]
    dai = np.float64(da[i])
    inv_a = 1.0 / dai
    for j in range(m):
        # the quotient from reciprocals is within one of the floor; the exact products
        # (below 2^53) settle it
        d = dai * dbf[j]
        q = np.floor(raw[j] * inv_a * inv_b[j])
        q -= q * d > raw[j]
        q += (q + 1.0) * d <= raw[j]
        S[i, j] = np.int32(q)


@njit(cache=True, nogil=True)
def _merge_both(both, new_col, n, width, out, base):
    """Adds a child's boundary weights to the parent's: a boundary keeps its weight where the
    columns on both sides of it (or the profile's end) stay adjacent in the parent."""
    if n == 0:
        return
    for c in range(n + 1):
        here = new_col[c] if c < n else new_col[n - 1] + 1
        before = new_col[c - 1] + 1 if c > 0 else 0
        if here == before and (c < n or here == width):
            out[base + here] += both[c]


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
    add_floored(S, tile, cweight, denom)


@njit(cache=True, nogil=True)
def add_floored(S, tile, cweight, denom):
    """``S += floor(tile * cweight / denom)`` cell by cell: a consistency tile joins the scores
    (``consistency.py``)."""
    n, m = S.shape
    for i in range(n):
        for j in range(m):
            if tile[i, j] != 0:
                S[i, j] += np.int32((tile[i, j] * cweight) // denom)


@njit(cache=True, nogil=True)
def _kids(q, pairs, cols, weights, *args):
    """Pair ``q``'s two children as ``(prof_a, both_a, prof_b, both_b)`` (:func:`_child`)."""
    a, b = pairs[q, 0], pairs[q, 1]
    return _child(a, cols[a], weights[a], *args) + _child(b, cols[b], weights[b], *args)


@njit(cache=True, nogil=True)
def _pair_dp(q, pairs, kids, S, ops, cols, weights, gap_open, ext, t_num, t_den, occ_shift, *cons):
    """Pair ``q``'s DP on its column scores ``S`` (plus its consistency tile, when ``cons``
    holds entries) into ``ops``; ``kids``: the children's profiles and boundary weights.
    Returns the alignment's width."""
    ent, ent_lo, ent_hi, cweight, seq_off, res_col, node_of_seq = cons
    prof_a, both_a, prof_b, both_b = kids
    a, b = pairs[q, 0], pairs[q, 1]
    n, m, wa, wb = cols[a], cols[b], weights[a], weights[b]
    oa, ca, ra = _costs(prof_a, both_a, wa, gap_open, t_num, t_den, occ_shift)
    ob, cb, rb = _costs(prof_b, both_b, wb, gap_open, t_num, t_den, occ_shift)
    if node_of_seq.size > 0 and ent_hi[q] > ent_lo[q] and n > 0 and m > 0:
        _add_tile(S, a, ent, ent_lo[q], ent_hi[q], seq_off, res_col, node_of_seq, cweight, wa * wb)
    return _profile_align(S, oa, ca, ob, cb, ra, rb, ext, GLOBAL, ops)[1]


@njit(cache=True, parallel=True)
def merge_nodes(
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
):
    """Aligns node pairs ``pairs [Q, 3]`` (child, child, parent), level after level: level v
    is ``pairs[level_start[v] : level_start[v + 1]]``, its pairs aligned in parallel and merged
    in order.

    Every parent's profile and boundary weights are appended to the pools after
    ``rows_used`` / ``bnds_used``; its columns, weight and pool offsets go to ``cols``,
    ``weights``, ``row``, ``bnd``. ``new_col`` gets, node after node, the parent column of each
    column of the first child, then of the second. ``occ_shift`` is the occupancy floor's
    ``OCC_SHIFT`` (``ops/colscores.py``). Returns the pools' new ends and the number of
    ``new_col`` entries written.

    A level of one pair of at least ``lone_cells`` cells computes its column scores on
    ``threads`` threads (the same integers).

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
        lone = count == 1 and cols[pairs[lo, 0]] * cols[pairs[lo, 1]] >= lone_cells
        for k in prange(count - int(lone)):
            q = lo + k
            kids = _kids(q, pairs, cols, weights, *args)
            S = _scores(
                kids[0], kids[2], matrix, weights[pairs[q, 0]], weights[pairs[q, 1]], occ_shift
            )
            ops = ops_buf[ops_off[k] : ops_off[k + 1]]
            widths[k] = _pair_dp(q, pairs, kids, S, ops, *dp_args)
        if lone:  # one wide pair (a link of a deep chain): its column scores on every thread
            kids = _kids(lo, pairs, cols, weights, *args)
            wx, wy = weights[pairs[lo, 0]], weights[pairs[lo, 1]]
            S = scores_threaded(kids[0], kids[2], matrix, wx, wy, occ_shift, threads)
            widths[0] = _pair_dp(lo, pairs, kids, S, ops_buf, *dp_args)
        for k in range(count):
            q = lo + k
            a, b, par = pairs[q, 0], pairs[q, 1], pairs[q, 2]
            n, m, wa, wb = cols[a], cols[b], weights[a], weights[b]
            ops, width = ops_buf[ops_off[k] : ops_off[k + 1]], widths[k]
            map_a = new_col[used : used + n]
            map_b = new_col[used + n : used + n + m]
            i = j = 0
            for t in range(width):
                if ops[t] != OP_LEFT:
                    map_a[i] = t
                    i += 1
                if ops[t] != OP_UP:
                    map_b[j] = t
                    j += 1
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
