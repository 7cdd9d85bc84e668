"""Column scores of a whole batch of profile pairs on the CPU, packed (numba), using sparsity.

The CPU twin of :func:`torchmsa.ops.colscores.batched_column_scores`: cell ``(i, j)`` of pair
p is ``floor(raw / (d_a[i] d_b[j]))`` with ``raw = P_a[i] M P_b[j]ᵀ`` and the occupancy divisors
``d = max(min(r 2^occ_shift, w), 1)`` (:mod:`torchmsa.ops.rules.column_scores`), computed in the
same float64 operations as the torch rule: ``d_a d_b`` first, then one correctly rounded
division (no fastmath: numba's default), then ``floor``. ``raw`` is an integer below 2^51 whose
partial sums are integers too, so any summation order gives it exactly; the divisors and the
quotient are then the torch rule's, bit for bit.

Where the time goes is the sums. The dense product costs ``A`` multiply-adds per cell (``A``
~24 letters), but a profile column of k sequences holds at most k residue types, and most
merges of a large family join a leaf (one type per column) or a small profile. So each cell
runs over the nonzero entries of one side only, the side with fewer of them per column:

* rows sparse: ``raw[i, :] = sum_p P_a[i, p] (M P_bᵀ)[p, :]`` over the nonzero ``p`` of column
  i, rows of ``M P_bᵀ`` (built once per task) read contiguously, so the loop over ``j``
  vectorises;
* columns sparse: ``raw[i, j] = sum_q P_b[j, q] (P_a M)[i, q]`` over the nonzero ``q`` of
  column j (a list built once per task), ``(P_a M)[i]`` built per row from its nonzeros. This
  loop gathers and does not vectorise, so it is taken only where the columns are much sparser
  than the rows (:data:`GATHER_COST`: a leaf against a dense profile); elsewhere the
  vectorised rows loop was faster on a 2,000-sequence family even over denser rows.

Work is cut into tasks of whole rows of one pair (a large pair into several), and the tasks
are dealt to the threads largest first, each to the least loaded thread, so that the one huge
pair of the last levels spreads over the threads as well as thousands of small ones do.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import njit, prange

from torchmsa.cpu.twins import pick

__all__ = ["packed_column_scores"]

TASK_CELLS = 1 << 16  # a pair larger than this is cut into tasks of about this many cells
TASK_ROWS = 32  # ... of at least this many rows (each task builds its own per-pair terms)
GATHER_COST = 8  # a nonzero of the columns loop against one of the vectorised rows loop


def packed_column_scores(prof, matrix, off_a, n, off_b, m, w_a, w_b, s_off, occ_shift, out):
    """Fills ``out`` (``int32 [sum(n*m)]``): pair p's ``[n_p, m_p]`` scores, row-major, at
    ``s_off[p]``, of profile rows ``prof[off_a[p]:+n_p]`` against ``prof[off_b[p]:+m_p]``.

    ``prof``: ``float64 [R, A]`` integer weight sums; ``matrix``: ``float64 [A, A]`` integer
    scores; ``off_*``, ``n``, ``m``, ``w_*``, ``s_off``: ``int64 [P]``; ``occ_shift``: the
    occupancy floor. Runs on numba's threads (``numba.get_num_threads()``), or on one
    (:mod:`torchmsa.cpu.twins`: the same integers).
    """
    threads = numba.get_num_threads()  # read here: inside a jitted function it blocks caching
    run = pick(_packed_parallel, _packed_serial, int(np.dot(n, m)))
    run(prof, matrix, off_a, n, off_b, m, w_a, w_b, s_off, occ_shift, out, threads)


def _packed(prof, matrix, off_a, n, off_b, m, w_a, w_b, s_off, occ_shift, out, threads):
    task_p, task_lo, task_hi = _tasks(n, m)
    owner = _deal(task_lo, task_hi, m[task_p], threads)
    for t in prange(threads):
        for k in range(len(task_p)):
            if owner[k] == t:
                p = task_p[k]
                _score_rows(
                    prof, matrix, off_a[p], task_lo[k], task_hi[k], off_b[p], m[p],
                    np.float64(w_a[p]), np.float64(w_b[p]), s_off[p], occ_shift, out,
                )  # fmt: skip


_packed_parallel = njit(cache=True, parallel=True, error_model="numpy")(_packed)


@njit(cache=True, nogil=True, error_model="numpy")
def _packed_serial(prof, matrix, off_a, n, off_b, m, w_a, w_b, s_off, occ_shift, out, threads):
    """:func:`_packed` on one thread: each pair's rows as one task, with no tasks to cut and
    deal (that code compiles for 2 s). The raw sums are exact whatever the order or the side
    summed over, so the cells are :func:`_packed`'s."""
    for p in range(len(n)):
        if n[p] > 0 and m[p] > 0:
            _score_rows(
                prof, matrix, off_a[p], 0, n[p], off_b[p], m[p],
                np.float64(w_a[p]), np.float64(w_b[p]), s_off[p], occ_shift, out,
            )  # fmt: skip


@njit(cache=True, nogil=True)
def _tasks(n, m):
    """Each pair's rows, cut into tasks of about :data:`TASK_CELLS` cells (at least
    :data:`TASK_ROWS` rows); empty pairs get none. Returns ``(pair, first row, end row)``."""
    count = 0
    for p in range(len(n)):
        count += _cuts(n[p], m[p])
    task_p = np.empty(count, np.int64)
    task_lo = np.empty(count, np.int64)
    task_hi = np.empty(count, np.int64)
    k = 0
    for p in range(len(n)):
        cuts = _cuts(n[p], m[p])
        for c in range(cuts):
            task_p[k] = p
            task_lo[k] = c * n[p] // cuts
            task_hi[k] = (c + 1) * n[p] // cuts
            k += 1
    return task_p, task_lo, task_hi


@njit(cache=True, nogil=True)
def _cuts(n, m):
    if n == 0 or m == 0:
        return 0
    return max(1, min(n * m // TASK_CELLS, n // TASK_ROWS))


@njit(cache=True, nogil=True)
def _deal(lo, hi, m, threads):
    """Thread of each task: largest first, each to the least loaded thread (ties: the lowest)."""
    cells = (hi - lo) * m
    owner = np.empty(len(cells), np.int64)
    load = np.zeros(threads, np.int64)
    for k in np.argsort(-cells, kind="mergesort"):
        t = np.argmin(load)
        owner[k] = t
        load[t] += cells[k]
    return owner


@njit(cache=True, nogil=True, error_model="numpy")
def _divisors(prof, first, count, w, occ_shift):
    """``float64``: the occupancy divisors of rows ``first .. first+count-1`` as the torch rule
    computes them: ``max(min(r * 2^occ_shift, w), 1)`` from the float64 row sum ``r``."""
    scale = np.float64(1 << occ_shift)
    d = np.empty(count, np.float64)
    for k in range(count):
        r = 0.0
        for x in range(prof.shape[1]):
            r += prof[first + k, x]
        d[k] = max(min(r * scale, w), 1.0)
    return d


@njit(cache=True, nogil=True, error_model="numpy")
def _score_rows(prof, matrix, oa, lo, hi, ob, m, wa, wb, base, occ_shift, out):
    """Rows ``lo .. hi-1`` of one pair (first profile at row ``oa``, second at ``ob`` with ``m``
    columns) into ``out`` from ``base``, summing over the sparser side's nonzeros."""
    n_alpha = prof.shape[1]
    d_a = _divisors(prof, oa + lo, hi - lo, wa, occ_shift)
    d_b = _divisors(prof, ob, m, wb, occ_shift)
    nz_a = 0
    for i in range(oa + lo, oa + hi):
        for x in range(n_alpha):
            nz_a += prof[i, x] != 0.0
    nz_b = 0
    for j in range(ob, ob + m):
        for x in range(n_alpha):
            nz_b += prof[j, x] != 0.0
    raw = np.empty(m, np.float64)
    if nz_a * m <= GATHER_COST * nz_b * (hi - lo):  # rows sparse: rows of M P_bᵀ
        mb = np.zeros((n_alpha, m), np.float64)
        for j in range(m):
            for y in range(n_alpha):
                v = prof[ob + j, y]
                if v != 0.0:
                    for x in range(n_alpha):
                        mb[x, j] += matrix[x, y] * v
        for i in range(lo, hi):
            first = True
            for x in range(n_alpha):
                v = prof[oa + i, x]
                if v != 0.0:
                    if first:
                        for j in range(m):
                            raw[j] = v * mb[x, j]
                        first = False
                    else:
                        for j in range(m):
                            raw[j] += v * mb[x, j]
            if first:  # an all-gap column
                raw[:] = 0.0
            _floor_row(raw, d_a[i - lo], d_b, out, base + i * m)
    else:  # columns sparse: each column's (letter, weight) list against rows of P_a M
        ptr = np.empty(m + 1, np.int64)
        idx = np.empty(nz_b, np.int64)
        val = np.empty(nz_b, np.float64)
        k = 0
        for j in range(m):
            ptr[j] = k
            for y in range(n_alpha):
                v = prof[ob + j, y]
                if v != 0.0:
                    idx[k] = y
                    val[k] = v
                    k += 1
        ptr[m] = k
        pm = np.empty(n_alpha, np.float64)
        for i in range(lo, hi):
            pm[:] = 0.0
            for x in range(n_alpha):
                v = prof[oa + i, x]
                if v != 0.0:
                    for y in range(n_alpha):
                        pm[y] += v * matrix[x, y]
            for j in range(m):
                s = 0.0
                for k in range(ptr[j], ptr[j + 1]):
                    s += val[k] * pm[idx[k]]
                raw[j] = s
            _floor_row(raw, d_a[i - lo], d_b, out, base + i * m)


@njit(cache=True, nogil=True, error_model="numpy")
def _floor_row(raw, da, d_b, out, at):
    """``out[at + j] = floor(raw[j] / (da d_b[j]))``: the product first, then one division
    (``error_model="numpy"``: no zero-divisor check, as divisors are at least 1, so the loop
    vectorises; a reciprocal times ``raw`` would not always round to the same quotient)."""
    for j in range(len(raw)):
        out[at + j] = np.int32(np.floor(raw[j] / (da * d_b[j])))
