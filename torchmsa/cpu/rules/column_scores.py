"""Column scores of one profile pair (twin of :mod:`torchmsa.ops.rules.column_scores`).

``floor(P_a M P_bᵀ / (d_a d_b))`` with the occupancy divisors ``d = min(w, r 2^occ_shift)``, in
float64 loops: every product and partial sum is an integer of magnitude at most
``w_a max|M| w_b`` < 2^53, so the loops are exact in any order and the floor of the correctly
rounded quotient is the exact floor; float64 lets the inner loop vectorise. Each cell costs one
multiply-add per residue type present in the sparser profile's column (a group of k sequences
has at most k), not one per letter of the alphabet.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

__all__ = [
    "occupancy_divisors",
    "column_scores",
    "column_scores_threaded",
    "row_terms",
    "score_row",
]


@njit(cache=True, nogil=True)
def occupancy_divisors(prof, weight, occ_shift):
    """Each column's divisor ``min(weight, r << occ_shift)``, at least 1."""
    d = np.empty(prof.shape[0], np.int64)
    for k in range(prof.shape[0]):
        d[k] = max(min(weight, prof[k].sum() << occ_shift), 1)
    return d


@njit(cache=True, nogil=True)
def column_scores(prof_a, prof_b, matrix, wa, wb, occ_shift):
    """``int32 [n, m]`` column scores of profiles ``int64 [n, A]`` and ``[m, A]`` of weights
    ``wa``, ``wb`` under the integer matrix ``int64 [A, A]``."""
    da = occupancy_divisors(prof_a, wa, occ_shift)
    db = occupancy_divisors(prof_b, wb, occ_shift)
    if _nonzeros(prof_a) <= _nonzeros(prof_b):
        return _sparse_rows(prof_a, prof_b, matrix, da, db)
    # a C-ordered transpose: one compiled layout of _sparse_rows and row_terms, not two
    return _sparse_rows(prof_b, prof_a, matrix.T.copy(), db, da).T.copy()


@njit(cache=True, parallel=True)
def column_scores_threaded(prof_a, prof_b, matrix, wa, wb, occ_shift, threads):
    """:func:`column_scores` with its rows spread over ``threads`` threads (the same integers:
    every cell is the exact floor whichever profile's nonzeros the loops run over)."""
    da = occupancy_divisors(prof_a, wa, occ_shift)
    db = occupancy_divisors(prof_b, wb, occ_shift)
    flip = _nonzeros(prof_a) > _nonzeros(prof_b)
    rows, cols = (prof_b, prof_a) if flip else (prof_a, prof_b)
    d_rows, d_cols = (db, da) if flip else (da, db)
    mat = matrix.T.copy() if flip else matrix.copy()
    mb, inv_b, dbf = row_terms(cols, mat, d_cols)
    n, m = rows.shape[0], cols.shape[0]
    out = np.empty((n, m), np.int32)
    chunks = min(n, 4 * threads)
    for c in prange(chunks):
        raw = np.empty(m, np.float64)
        for i in range(c * n // chunks, (c + 1) * n // chunks):
            score_row(i, rows, mb, d_rows, inv_b, dbf, raw, out, i)
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
    """:func:`column_scores` row by row over the nonzero entries of ``prof_a``'s columns:
    ``S[i] = floor(sum_p P_a[i, p] (M P_bᵀ)[p] / (d_a[i] d_b))``."""
    mb, inv_b, dbf = row_terms(prof_b, matrix, db)
    S = np.empty((prof_a.shape[0], prof_b.shape[0]), np.int32)
    raw = np.empty(prof_b.shape[0], np.float64)
    for i in range(prof_a.shape[0]):
        score_row(i, prof_a, mb, da, inv_b, dbf, raw, S, i)
    return S


@njit(cache=True, nogil=True)
def row_terms(prof_b, matrix, db):
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
def score_row(i, prof_a, mb, da, inv_b, dbf, raw, S, si):
    """Row ``i`` of :func:`_sparse_rows` into ``S[si]`` (``raw``: float64 scratch of one row);
    the linear-space profile DP (``cpu/dp_profile_linear.py``) scores its blocks of rows with
    it."""
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
        S[si, j] = np.int32(q)
