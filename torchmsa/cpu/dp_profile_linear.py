"""Profile-profile alignment in linear space (global mode): checkpointed blocks of rows.

The progressive pass and the refinement align two profiles with ``dp.profile_align_one``,
which takes the full ``int32 [n, m]`` column scores and the direction bits of every cell: 5
bytes a cell, 4.5 GB for two profiles of 30,000 columns. Here neither is ever whole. The rows
(the columns of profile a) are cut into blocks of ``R``. A forward pass computes one block's
column scores at a time (the rule of :mod:`torchmsa.cpu.rules.column_scores`, row by row), runs
``dp_rows.fill_block`` over it without direction bits, and keeps H and F of the row before
each block. The traceback starts at ``(n, m)``; for the block holding the current row ``i`` it
computes again the column scores of its rows up to ``i`` and the direction bits of its cells in
columns ``0 .. j`` only (the path never goes down or right), follows them until the path leaves
the block upwards, and repeats with the block above. A gap in b (state F) crossing a block
boundary keeps its state: the bits of the cell it enters say whether it extends.

The cells are ``dp_rows.fill_block``'s, which ``dp.profile_align_one`` also runs (through
``fill_rows``), and the steps ``trace_step``'s; so score and ops equal the full-matrix path's.

Memory (:func:`profile_linear_bytes`), with ``B = ceil(n / R)`` blocks and ``A`` residue codes::

    8 (m + 1) (B + 1)      checkpoints: int32 H and F of the row before each block
    + 5 (R + 1) (m + 1)    one block's int32 column scores and uint8 direction bits
    + 8 (A + 5) (m + 1)    M P_bᵀ and 1 / d_b (float64), row scratch of the fill

least at about ``R = sqrt(1.6 n)`` (:func:`block_rows`): 66 MB for 30,000 x 30,000, 400 MB
for 10^5 x 10^5. The work is the forward pass (``n m`` cells and column scores) plus, again,
the cells of each block up to the path's row and column where it enters the block: at most
``n m`` more, about half that for a path near the diagonal.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from torchmsa.constants import GLOBAL, NEG, OP_MATCH, OP_UP
from torchmsa.cpu.dp_rows import fill_block, first_row
from torchmsa.cpu.rules.column_scores import occupancy_divisors, row_terms, score_row
from torchmsa.cpu.rules.path_score import path_gaps
from torchmsa.cpu.rules.trace_step import end_gaps, trace_step

__all__ = [
    "block_rows",
    "profile_linear_bytes",
    "profile_align_linear",
    "linear_path_score",
    "tile_cells",
    "no_tile",
]


@njit(cache=True, nogil=True)
def block_rows(n, m):
    """Rows per block ``R`` that about minimise :func:`profile_linear_bytes` for ``n x m``
    cells: ``sqrt(1.6 n)``, within ``1 .. max(n, 1)`` (``m`` does not matter: it scales both
    large terms)."""
    return max(1, min(max(n, 1), int(math.sqrt(8 * n // 5)) + 1))


def profile_linear_bytes(n: int, m: int, rows: int, codes: int = 32) -> int:
    """Bytes :func:`profile_align_linear` allocates for ``n x m`` cells in blocks of ``rows``
    rows with ``codes`` residue codes (module docstring); the profiles, their gap costs and
    the ops buffer (``n + m``) are the caller's."""
    blocks = max(1, -(-n // rows))
    return 8 * (m + 1) * (blocks + 1) + 5 * (rows + 1) * (m + 1) + 8 * (codes + 5) * (m + 1)


@njit(cache=True, nogil=True)
def tile_cells(key, val, m):
    """A consistency tile as its nonzero cells: entries at cells ``key = i * m + j`` with
    values ``val`` summed per cell, as ``(i, j, sum)`` sorted by ``(i, j)`` (``int64``)."""
    order = np.argsort(key)
    count = 0
    for t in range(key.size):
        count += t == 0 or key[order[t]] != key[order[t - 1]]
    ti = np.empty(count, np.int64)
    tj = np.empty(count, np.int64)
    tv = np.zeros(count, np.int64)
    c = -1
    for t in range(key.size):
        k = key[order[t]]
        if t == 0 or k != key[order[t - 1]]:
            c += 1
            ti[c] = k // m
            tj[c] = k % m
        tv[c] += val[order[t]]
    return ti, tj, tv


@njit(cache=True, nogil=True)
def _block_scores(i0, i1, prof_a, da, terms, raw, S, tile):
    """Column scores of rows ``i0 .. i1 - 1`` of profile a into ``S[0 .. i1 - i0 - 1]``, with
    ``tile`` (``(i, j, sum, cweight, denom)``, :func:`tile_cells`) added as
    ``cpu/rules/consistency_tile.add_tile`` adds it."""
    mb, inv_b, dbf = terms
    for i in range(i0, i1):
        score_row(i, prof_a, mb, da, inv_b, dbf, raw, S, i - i0)
    ti, tj, tv, cweight, denom = tile
    for t in range(np.searchsorted(ti, i0), np.searchsorted(ti, i1)):
        if tv[t] != 0:
            S[ti[t] - i0, tj[t]] += np.int32((tv[t] * cweight) // denom)


@njit(cache=True, nogil=True)
def no_tile():
    """The ``tile`` argument of no consistency (:func:`profile_align_linear`)."""
    empty = np.zeros(0, np.int64)
    return empty, empty, empty, 0, 1


@njit(cache=True, nogil=True)
def profile_align_linear(prof_a, prof_b, matrix, wa, wb, occ_shift, costs, ext, rows, ops, tile):
    """Global profile-profile alignment in linear space, equal to ``dp.profile_align_one`` on
    the profiles' column scores.

    Arguments:
        prof_a, prof_b: ``int64 [n, A]``, ``[m, A]`` profiles of weights ``wa``, ``wb``.
        matrix: ``int64 [A, A]`` substitution scores; occ_shift: the occupancy floor's shift.
        costs: ``(open_a, close_a, open_b, close_b, res_a, res_b)``, the boundary gap costs and
            residue factors (``int64 [n + 1]`` and ``[m + 1]``).
        ext: gap extension cost; rows: rows per block ``R >= 1`` (:func:`block_rows`).
        ops: ``uint8 [>= n + m]``, gets the ops in order.
        tile: accurate mode's consistency tile as ``(i, j, sum, cweight, denom)`` with its
            cells from :func:`tile_cells` (:func:`no_tile`: none).

    Returns:
        ``(score, n_ops)``.
    """
    n, m = prof_a.shape[0], prof_b.shape[0]
    open_a, close_a = costs[0], costs[1]
    res_b = costs[5]
    da = occupancy_divisors(prof_a, wa, occ_shift)
    db = occupancy_divisors(prof_b, wb, occ_shift)
    terms = row_terms(prof_b, matrix, db)
    blocks = max(1, -(-n // rows))
    ck = np.empty((blocks, 2, m + 1), np.int32)  # H and F of row b * rows
    S = np.empty((rows, m), np.int32)
    raw = np.empty(m, np.float64)
    hp = np.empty(m + 1, np.int32)
    f = np.full(m + 1, NEG, np.int32)
    first_row(hp, m, open_a, close_a, res_b, ext, GLOBAL)
    no_bits = np.empty((1, 1), np.uint8)
    g = np.int64(GLOBAL)  # not the literal: fill_block compiles once for every caller
    for blk in range(blocks):
        i0 = blk * rows
        i1 = min(n, i0 + rows)
        ck[blk, 0] = hp
        ck[blk, 1] = f
        _block_scores(i0, i1, prof_a, da, terms, raw, S, tile)
        fill_block(i0 + 1, i1, m, S, i0, costs, ext, g, hp, f, no_bits, 0, False, 0, 0, 0)
    score = np.int64(hp[m])
    bits = np.empty((rows + 1, m + 1), np.uint8)  # [block rows 0..R, columns 0..m]
    k = 0
    i, j, state = n, m, 0
    loaded = -1
    i0 = 0
    while i > 0 and j > 0:
        blk = (i - 1) // rows
        if blk != loaded:
            i0 = blk * rows
            hp[:] = ck[blk, 0]
            f[:] = ck[blk, 1]
            _block_scores(i0, i, prof_a, da, terms, raw, S, tile)
            fill_block(i0 + 1, i, j, S, i0, costs, ext, g, hp, f, bits, i0, True, 0, 0, 0)
            loaded = blk
        # a gap in b may leave the block upwards: the state goes with it
        stop, state, di, dj, k = trace_step(bits[i - i0, j], state, ops, k)
        i -= di
        j -= dj
    k = end_gaps(ops, k, i, j)
    ops[:k] = ops[:k][::-1].copy()
    return score, k


@njit(cache=True, nogil=True)
def linear_path_score(prof_a, prof_b, matrix, wa, wb, occ_shift, costs, ext, ops, n_ops, tile):
    """``path_score`` of the path ``ops[:n_ops]`` without the column-score matrix: the cells
    it pairs are scored one by one (the exact floor of :mod:`~torchmsa.cpu.rules.column_scores`,
    in integers, plus ``tile``'s value there), its gaps by
    :func:`~torchmsa.cpu.rules.path_score.path_gaps`."""
    ti, tj, tv, cweight, denom = tile
    m = prof_b.shape[0]
    tkey = ti * m + tj  # sorted, as ti and tj are
    da = occupancy_divisors(prof_a, wa, occ_shift)
    db = occupancy_divisors(prof_b, wb, occ_shift)
    n_alpha = matrix.shape[0]
    score = np.int64(0)
    i = j = 0
    for k in range(n_ops):
        op = ops[k]
        if op == OP_MATCH:
            num = np.int64(0)
            for p in range(n_alpha):
                if prof_a[i, p] != 0:
                    inner = np.int64(0)
                    for q in range(n_alpha):
                        inner += matrix[p, q] * prof_b[j, q]
                    num += prof_a[i, p] * inner
            score += num // (da[i] * db[j])
            t = np.searchsorted(tkey, i * m + j)
            if t < tkey.size and tkey[t] == i * m + j and tv[t] != 0:
                score += np.int32((tv[t] * cweight) // denom)
            i += 1
            j += 1
        elif op == OP_UP:
            i += 1
        else:
            j += 1
    open_a, close_a, open_b, close_b, res_a, res_b = costs
    return score + path_gaps(open_a, close_a, open_b, close_b, res_a, res_b, ext, ops, n_ops)
