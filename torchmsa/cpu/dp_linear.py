"""Pairwise alignment with traceback in linear space: checkpointed column strips.

The full-matrix path (``dp.pairwise_align``) keeps a score matrix and the direction bits of
every cell, 5 bytes a cell: 5.1 GB for 5,001 x 200,000. Here the columns are cut into strips
of ``W`` columns. A forward pass runs the recurrence of ``dp.py`` strip by strip (all rows of
one strip, then the next) and keeps, at each strip's left boundary ``j0``, the column
``H[0..n, j0]`` and ``E[0..n, j0]``: with row 0 (a boundary) that is all a strip needs to be
computed again. The traceback starts at the end cell, computes the direction bits of the strip
holding it (rows ``0..i`` only: the path never goes down), follows them until the path leaves
the strip on the left, and repeats with the strip before. A gap in a (state E) crossing a strip
boundary keeps its state: the bits of the cell it enters say whether it extends.

The cells are those of ``dp.fill_scalar`` (pairwise costs: opening ``go``, extension ``ge``,
no closing cost), computed by its loop (:func:`_fill_strip`) or, where ``go >= ge``, row by
row as ``dp_rows.fill_rows`` does (:func:`_scan_strip`); so the direction bits, the end cell
(same first-maximum rule) and hence score, ops, start and end equal those of the full-matrix
path.

Memory for an ``n x m`` pair with ``S = ceil(m / W)`` strips and ``A`` residue codes
(:func:`linear_bytes`)::

    8 (n + 1) (S + 1)      checkpoints, int32 H and E per strip boundary and for column m
    + (n + 1) (W + 1)      direction bits of one strip (local mode: rows 0..end_i only)
    + 4 (6 + A) (W + 1)    rows of H, F and the row scan's scratch, the strip's query profile

least at about ``W = sqrt(8 m)`` (:func:`strip_width`): 13 MB for 5,001 x 200,000 (the
full-matrix path: 5.1 GB), 180 MB for 10^5 x 10^5. The work is the forward pass (``n m``
cells) plus, again, rows ``0..i`` of each strip the path crosses (``i`` where it enters):
at most ``n m`` more cells, about half that for a global path near the diagonal, a band of
strips for a local one.
"""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor

import numba
import numpy as np
from numba import njit

from torchmsa.constants import (
    E_EXT,
    F_EXT,
    GLOBAL,
    H_LEFT,
    H_STOP,
    H_UP,
    LOCAL,
    NEG,
    SCAN_LIMIT,
    SEMIGLOBAL,
)
from torchmsa.cpu.dp_rows import prefix_max
from torchmsa.cpu.rules.trace_step import end_gaps, trace_step
from torchmsa.errors import ResourceError

__all__ = [
    "strip_width",
    "linear_bytes",
    "full_bytes",
    "needs_linear",
    "align_pair_linear",
    "align_pairs_linear",
]


def strip_width(n: int, m: int) -> int:
    """Strip width ``W`` that about minimises :func:`linear_bytes` for an ``n x m`` pair (``n``
    scales both large terms, so only ``m`` matters): ``sqrt(8 m)``, within ``1 .. max(m, 1)``."""
    return max(1, min(max(m, 1), math.isqrt(8 * m) + 1))


def linear_bytes(n: int, m: int, width: int, codes: int = 32) -> int:
    """Bytes :func:`align_pair_linear` allocates for an ``n x m`` pair with strips of ``width``
    columns and a substitution matrix of ``codes`` rows (module docstring); the ops buffer
    (``n + m``) is the caller's."""
    strips = max(1, -(-m // width))
    return 8 * (n + 1) * (strips + 1) + (n + 1) * (width + 1) + 4 * (6 + codes) * (width + 1)


def full_bytes(n: int, m: int) -> int:
    """Bytes the full-matrix path allocates for an ``n x m`` pair: the ``int32 [n, m]`` score
    matrix and the ``uint8 [n + 1, m + 1]`` direction bits."""
    return 4 * n * m + (n + 1) * (m + 1)


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
def _fill_strip(a, b, mat, costs, ck, s, width, rows, h, f, bits, keep):
    """Rows ``0..rows`` of strip ``s`` (columns ``j0+1 .. j0+w``, ``j0 = s * width``) from the
    checkpoint of column ``j0``.

    ``costs``: ``(go, ge, mode, m)``; ``ck``: ``int32 [S + 1, 2, n + 1]`` checkpoints, H and E
    of column ``s * width`` (``ck[S]``: column m), ``ck[s]`` is read and ``ck[s + 1]`` written
    for rows ``0..rows``; ``h``, ``f``: scratch ``int32 [>= w + 1]``, left holding row
    ``rows`` of H (``h[jj]`` is column ``j0 + jj``); ``bits``: ``uint8 [>= rows + 1, >= w +
    1]``, gets the direction bits when ``keep``.

    Returns:
        ``(best, i, j)``: in local mode the strip's first maximum of H in row-major order
        (``(0, 0, 0)`` when no H is positive); else ``(0, 0, 0)``.
    """
    go, ge, mode, m = costs
    j0 = s * width
    w = min(width, m - j0)
    h_in, e_in = ck[s, 0], ck[s, 1]
    h_out, e_out = ck[s + 1, 0], ck[s + 1, 1]
    h[0] = h_in[0]
    for jj in range(1, w + 1):
        h[jj] = -(go + (j0 + jj - 1) * ge) if mode == GLOBAL else 0
        f[jj] = NEG
    h_out[0] = h[w]
    e_out[0] = NEG
    best, bi, bj = 0, 0, 0
    for i in range(1, rows + 1):
        row = mat[a[i - 1]]
        diag = np.int64(h_in[i - 1])
        hl = np.int64(h_in[i])
        e = np.int64(e_in[i])
        for jj in range(1, w + 1):
            # the cell of dp.fill_scalar with open = go, close = 0, residue factors RES_ONE
            e_ext = e - ge
            e_open = hl - go
            if e_ext >= e_open:
                e = e_ext
                bt = E_EXT
            else:
                e = e_open
                bt = 0
            f_ext = np.int64(f[jj]) - ge
            f_open = np.int64(h[jj]) - go
            if f_ext >= f_open:
                fv = f_ext
                bt |= F_EXT
            else:
                fv = f_open
            hv = diag + row[b[j0 + jj - 1]]
            if fv > hv:
                hv = fv
                bt |= H_UP
            if e > hv:
                hv = e
                bt = (bt & 12) | H_LEFT
            if mode == LOCAL:
                if hv <= 0:
                    hv = 0
                    bt |= H_STOP
                elif hv > best:
                    best, bi, bj = hv, i, j0 + jj
            if keep:
                bits[i, jj] = bt
            diag = h[jj]
            h[jj] = hv
            f[jj] = fv
            hl = hv
        h_out[i] = hl
        e_out[i] = e
    return best, bi, bj


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
def _scan_strip(a, b, mat, costs, ck, s, width, rows, h, f, work, bits, keep):
    """:func:`_fill_strip`, row-vectorised as ``dp_rows.fill_rows`` (same values and bits).

    With no closing cost and ``go >= ge``, E is a running maximum (``dp_rows.py``'s
    docstring): ``E[j0 + jj] = max(u[0..jj-1]) - (jj - 1) ge`` with ``u[0] = max(E[i, j0] -
    ge, H[i, j0] - go)``, the checkpoint's carry, and ``u[k] = T'[k] - go + k ge``. ``work``:
    scratch ``int32 [4 + A, >= w + 1]`` (rows: next H, T, E, u, then the strip's query
    profile). The caller checks ``go >= ge`` and ``width * ge < SCAN_LIMIT``.
    """
    go, ge, mode, m = costs
    go = np.int32(go)
    ge = np.int32(ge)
    zero = np.int32(0)
    j0 = s * width
    w = min(width, m - j0)
    h_in, e_in = ck[s, 0], ck[s, 1]
    h_out, e_out = ck[s + 1, 0], ck[s + 1, 1]
    hn, t, e, u = work[0], work[1], work[2], work[3]
    qp = work[4:]  # [A, W] scores of each code against the strip's columns
    for c in range(qp.shape[0]):
        for jj in range(w):
            qp[c, jj] = mat[c, b[j0 + jj]]
    for jj in range(1, w + 1):
        h[jj] = -(go + (j0 + jj - 1) * ge) if mode == GLOBAL else 0
        f[jj] = NEG
    h_out[0] = h[w] if w > 0 else h_in[0]
    e_out[0] = NEG
    best, bi, bj = 0, 0, 0
    for i in range(1, rows + 1):
        row = qp[a[i - 1]]
        br = bits[i if keep else 0]  # [W + 1] this row's direction bits
        h[0] = h_in[i - 1]
        # F and T = max(diagonal, up)
        for jj in range(1, w + 1):
            f_ext = f[jj] - ge
            f_open = h[jj] - go
            fv = max(f_ext, f_open)
            f[jj] = fv
            d = h[jj - 1] + row[jj - 1]
            up = fv > d
            t[jj] = fv if up else d
            if keep:
                br[jj] = (F_EXT if f_ext >= f_open else 0) | (H_UP if up else 0)
        u[0] = max(e_in[i] - ge, h_in[i] - go)
        for k in range(1, w):
            tk = max(t[k], zero) if mode == LOCAL else t[k]
            u[k] = tk - go + k * ge
        prefix_max(u, e, w)
        rowmax = np.int32(NEG)
        for jj in range(1, w + 1):
            ev = e[jj] - (jj - 1) * ge
            e[jj] = ev
            tj = t[jj]
            left = ev > tj
            hv = ev if left else tj
            if mode == LOCAL:
                hv = max(hv, zero)
            if keep:
                bt = br[jj]
                bt = ((bt & 12) | H_LEFT) if left else bt
                if mode == LOCAL and hv == 0:
                    bt |= H_STOP
                br[jj] = bt
            hn[jj] = hv
            rowmax = max(rowmax, hv)
        if keep and w > 0:
            # E extends where E[jj - 1] - ge >= H[jj - 1] - go; column j0 from the checkpoint
            if e_in[i] - ge >= h_in[i] - go:
                br[1] |= E_EXT
            for jj in range(2, w + 1):
                if e[jj - 1] - ge >= hn[jj - 1] - go:
                    br[jj] |= E_EXT
        for jj in range(1, w + 1):
            h[jj] = hn[jj]
        if w > 0:
            h_out[i] = h[w]
            e_out[i] = e[w]
        else:
            h_out[i] = h_in[i]
            e_out[i] = e_in[i]
        if mode == LOCAL and rowmax > best:
            for jj in range(1, w + 1):
                if h[jj] == rowmax:
                    best, bi, bj = rowmax, i, j0 + jj
                    break
    return best, bi, bj


@njit(cache=True, nogil=True)
def _forward(a, n, b, mat, costs, width, ck, h, f, work, scan):
    """Score pass: fills the checkpoints ``ck`` (as :func:`_fill_strip`) and returns
    ``(score, end_i, end_j)`` by the rules of ``dp.fill_scalar``; ``scan``: by
    :func:`_scan_strip` (else :func:`_fill_strip`)."""
    go, ge, mode, m = costs
    strips = ck.shape[0] - 1
    ck[0, 0, 0] = 0
    ck[0, 1, 0] = NEG
    for i in range(1, n + 1):
        ck[0, 0, i] = -(go + (i - 1) * ge) if mode == GLOBAL else 0
        ck[0, 1, i] = NEG
    no_bits = np.empty((1, 1), np.uint8)
    best, bi, bj = 0, 0, 0
    row_best, row_j = ck[0, 0, n], 0  # semiglobal: first maximum of the last row so far
    for s in range(strips):
        # each call passes ``keep`` as a constant, which LLVM propagates into the inlined fill
        if scan:
            v, vi, vj = _scan_strip(a, b, mat, costs, ck, s, width, n, h, f, work, no_bits, False)
        else:
            v, vi, vj = _fill_strip(a, b, mat, costs, ck, s, width, n, h, f, no_bits, False)
        # strips come left to right: an equal maximum further right wins only on a smaller row
        if mode == LOCAL and v > 0 and (v > best or (v == best and vi < bi)):
            best, bi, bj = v, vi, vj
        if mode == SEMIGLOBAL:
            for jj in range(1, min(width, m - s * width) + 1):
                if h[jj] > row_best:
                    row_best, row_j = h[jj], s * width + jj
    last = ck[strips, 0]  # [n + 1] H of column m
    if mode == GLOBAL:
        best, bi, bj = last[n], n, m
    elif mode == SEMIGLOBAL:
        best, bi, bj = NEG, 0, m
        for i in range(n):
            if last[i] > best:
                best, bi = last[i], i
        if row_best > best:
            best, bi, bj = row_best, n, row_j
    return np.int64(best), np.int64(bi), np.int64(bj)


@njit(cache=True, nogil=True)
def align_pair_linear(a, n, b, m, mat, go, ge, mode, width, ops):
    """One pairwise alignment in linear space, equal to the full-matrix path's.

    Arguments:
        a, b: ``uint8`` residue codes, of which the first ``n`` and ``m`` are read.
        mat: ``int32 [A, A]`` substitution scores; go, ge: gap opening and extension costs.
        mode: ``GLOBAL``, ``LOCAL`` or ``SEMIGLOBAL``.
        width: strip width ``W >= 1`` (:func:`strip_width`).
        ops: ``uint8 [>= n + m]``, gets the ops in order.

    Returns:
        ``(score, n_ops, start_i, start_j, end_i, end_j)``.
    """
    costs = (np.int64(go), np.int64(ge), np.int64(mode), np.int64(m))
    strips = max(1, -(-m // width))
    ck = np.empty((strips + 1, 2, n + 1), np.int32)
    h = np.empty(width + 1, np.int32)
    f = np.empty(width + 1, np.int32)
    work = np.empty((4 + mat.shape[0], width + 1), np.int32)
    scan = go >= ge and width * ge < SCAN_LIMIT  # E is a running maximum (_scan_strip)
    score, ei, ej = _forward(a, n, b, mat, costs, width, ck, h, f, work, scan)
    bits = np.empty((ei + 1, width + 1), np.uint8)  # [rows 0..end_i, strip columns 0..W]
    k = 0
    if mode == SEMIGLOBAL:
        k = end_gaps(ops, k, n - ei, m - ej)
    i, j, state = ei, ej, 0
    loaded = -1
    while i > 0 and j > 0:
        s = (j - 1) // width
        if s != loaded:
            # also rewrites checkpoint s + 1 (rows 0..i) with the values it holds
            if scan:
                _scan_strip(a, b, mat, costs, ck, s, width, i, h, f, work, bits, True)
            else:
                _fill_strip(a, b, mat, costs, ck, s, width, i, h, f, bits, True)
            loaded = s
        # a gap in a may leave the strip: the state goes with it
        stop, state, di, dj, k = trace_step(bits[i, j - s * width], state, ops, k)
        if stop:
            break
        i -= di
        j -= dj
    if mode != LOCAL:
        k = end_gaps(ops, k, i, j)
        i, j = 0, 0
    ops[:k] = ops[:k][::-1].copy()
    return score, k, i, j, ei, ej


def align_pairs_linear(
    codes_a, len_a, codes_b, len_b, mat, go, ge, mode, pairs, ops, out, *, parallel, width=None
):
    """Align pairs ``pairs`` of a batch in linear space, writing ``ops[p]`` and ``out[p]``.

    Arguments:
        codes_a, len_a, codes_b, len_b, mat: numpy arrays as ``dp.pairwise_align`` takes them.
        go, ge, mode: ``int`` gap costs and mode.
        pairs: ``int64 [K]`` indices of the pairs to align.
        ops: ``uint8 [P, >= La + Lb]``; out: ``int32 [P, 6]`` (``dp.pairwise_align``'s info).
        parallel: align the pairs on as many threads as numba has (:func:`align_pair_linear`
            releases the GIL; each allocates :func:`linear_bytes`) rather than one after
            another.
        width: strip width for every pair (tests); ``None``: :func:`strip_width` of each.
    """
    jobs = []
    for p in np.asarray(pairs, np.int64).tolist():
        n, m = int(len_a[p]), int(len_b[p])
        jobs.append((p, n, m, width or strip_width(n, m)))

    def one(job):
        p, n, m, w = job
        out[p] = align_pair_linear(codes_a[p], n, codes_b[p], m, mat, go, ge, mode, w, ops[p])

    threads = min(numba.get_num_threads(), len(jobs)) if parallel else 1
    if threads > 1:
        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(one, jobs))  # rows of ops and out are the pairs' own
    else:
        for job in jobs:
            one(job)


def needs_linear(len_a, len_b, budget: int) -> np.ndarray:
    """``bool [P]``: the pairs whose full-matrix alignments would not fit in ``budget`` bytes.

    The batch runs a pair per numba thread, so a pair's :func:`full_bytes` counts as many
    times as pairs run side by side (``min(threads, P)``).
    """
    n = np.asarray(len_a, np.int64)
    together = max(1, min(numba.get_num_threads(), len(n)))
    return full_bytes(n, np.asarray(len_b, np.int64)) * together > budget


def align_huge(codes_a, len_a, codes_b, len_b, mat, go, ge, mode, huge, ops, out, budget):
    """Align the pairs marked in ``huge`` (``bool [P]``) in linear space (arguments as
    :func:`align_pairs_linear`), side by side when their :func:`linear_bytes` fit ``budget``
    together, else one after another.

    Raises:
        ResourceError: one pair's linear-space alignment alone needs more than ``budget``.
    """
    pairs = np.nonzero(huge)[0]
    need = np.array(
        [
            linear_bytes(n, m, strip_width(n, m), mat.shape[0])
            for n, m in zip(len_a[pairs].tolist(), len_b[pairs].tolist())
        ],
        np.int64,
    )
    if need.max() > budget:
        q = int(np.argmax(need))
        p = int(pairs[q])
        raise ResourceError(
            f"linear-space traceback of pair {p} ({len_a[p]} x {len_b[p]} cells)",
            int(need[q]),
            budget,
            "raise the memory budget (MemoryBudget(host_bytes=...)) or align shorter sequences",
        )
    together = np.sort(need)[::-1][: numba.get_num_threads()].sum()
    align_pairs_linear(
        codes_a,
        len_a,
        codes_b,
        len_b,
        mat,
        go,
        ge,
        mode,
        pairs,
        ops,
        out,
        parallel=bool(together <= budget and len(pairs) > 1),
    )
