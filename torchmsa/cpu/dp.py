"""Affine-gap dynamic programming on the CPU (numba), the twin of ``triton_kernels/dp.py``.

One recurrence serves pairwise and profile-profile alignment. Rows ``i`` walk sequence/profile
``a`` (length n), columns ``j`` walk ``b`` (length m); ``S[i-1, j-1]`` is the score of pairing
column i of a with column j of b. Boundary ``i`` of ``a`` lies after its first i columns; a gap
*in a* at boundary i (b's columns against gaps) costs ``open_a[i] + close_a[i]`` for its first
column and ``ext`` for each further one, and likewise for gaps in b::

    E[i,j] = max(E[i,j-1] - ext, H[i,j-1] - open_a[i])        gap in a   (move "left")
    F[i,j] = max(F[i-1,j] - ext, H[i-1,j] - open_b[j])        gap in b   (move "up")
    H[i,j] = max(H[i-1,j-1] + S[i-1,j-1], F[i,j] - close_b[j], E[i,j] - close_a[i])
             (local: also 0)

Profile alignment scales each opening and closing cost by the residue fraction of the column it
faces (sum-of-pairs with gaps: a new gap facing a column of gaps makes gap-gap pairs, which cost
nothing): with ``res_a``, ``res_b`` in ``0 .. RES_ONE`` per column (index k >= 1 is column k;
index 0 is unused), ``open_a[i]`` at cell (i, j) becomes ``open_a[i] * res_b[j] >> RES_SHIFT``
(:func:`facing`), ``close_a[i]`` likewise, and ``open_b[j]``, ``close_b[j]`` take ``res_a[i]``.
The boundaries follow: ``H[0, j] = -(facing(open_a[0], res_b[1]) + facing(close_a[0],
res_b[j]) + (j - 1) ext)`` and symmetrically in column 0. With every factor ``RES_ONE`` the
costs are the plain ones (pairwise alignment).

Modes: ``GLOBAL``; ``LOCAL`` (Smith-Waterman); ``SEMIGLOBAL`` (end gaps free on both ends of
both sequences: H is 0 on row 0 and column 0, and the result is the best cell of the last row
or last column).

Tie-breaking, the one rule every backend follows:

* in H, a diagonal move beats a gap in b ("up"), which beats a gap in a ("left"); in local
  mode a zero H stops the alignment before anything else;
* inside a gap, extending beats opening;
* the local end cell is the first maximum in row-major order (smallest i, then smallest j);
* the semiglobal end cell is the first maximum among the last column's cells ``(0..n-1, m)``
  then the last row's cells ``(n, 0..m)``, in that order.

``pair_score_scalar`` and ``fill_scalar`` are the scalar reference loops; the batch entry points
use their row-vectorised twins in ``dp_rows.py`` (identical results, tested against these).

Traceback ops: ``0`` pairs a column of a with one of b, ``1`` a column of a with a gap, ``2`` a
gap with a column of b.
"""

from __future__ import annotations

import numpy as np
import torch
from numba import njit, prange

from torchmsa.constants import (
    E_EXT,
    F_EXT,
    GLOBAL,
    H_LEFT,
    H_STOP,
    H_UP,
    LOCAL,
    NEG,
    RES_ONE,
    SEMIGLOBAL,
)
from torchmsa.cpu import dp_linear, dp_long
from torchmsa.cpu.dp_rows import fill_rows, pair_score_rows
from torchmsa.cpu.rules.facing import facing
from torchmsa.cpu.rules.trace_step import end_gaps, trace_step
from torchmsa.cpu.twins import pick, twin


@njit(cache=True, nogil=True)
def pair_score_scalar(a, n, b, m, mat, go, ge, mode):
    """Score-only pairwise DP in O(m) memory: ``(score, end_i, end_j)``."""
    h_row = np.empty(m + 1, np.int32)
    f_row = np.empty(m + 1, np.int32)
    h_row[0] = 0
    for j in range(1, m + 1):
        h_row[j] = -(go + (j - 1) * ge) if mode == GLOBAL else 0
        f_row[j] = NEG
    best, bi, bj = NEG, 0, 0
    if mode == LOCAL:
        best = 0
    for i in range(1, n + 1):
        if mode == SEMIGLOBAL and h_row[m] > best:
            best, bi, bj = h_row[m], i - 1, m
        row = mat[a[i - 1]]
        diag = h_row[0]
        h_left = -(go + (i - 1) * ge) if mode == GLOBAL else 0
        h_row[0] = h_left
        e = NEG
        for j in range(1, m + 1):
            e = max(e - ge, h_left - go)
            f = max(f_row[j] - ge, h_row[j] - go)
            h = diag + row[b[j - 1]]
            h = max(h, f)
            h = max(h, e)
            if mode == LOCAL:
                if h < 0:
                    h = 0
                if h > best:
                    best, bi, bj = h, i, j
            diag = h_row[j]
            h_row[j] = h
            f_row[j] = f
            h_left = h
    if mode == GLOBAL:
        best, bi, bj = h_row[m], n, m
    elif mode == SEMIGLOBAL:
        for j in range(m + 1):
            if h_row[j] > best:
                best, bi, bj = h_row[j], n, j
    return np.int64(best), np.int64(bi), np.int64(bj)


@njit(cache=True, nogil=True)
def fill_scalar(n, m, S, open_a, close_a, open_b, close_b, res_a, res_b, ext, mode, trace):
    """Full DP with direction bits in ``trace [n+1, m+1]``: ``(score, end_i, end_j)``."""
    h_row = np.empty(m + 1, np.int32)
    f_row = np.empty(m + 1, np.int32)
    h_row[0] = 0
    for j in range(1, m + 1):
        if mode == GLOBAL:
            lead = facing(open_a[0], res_b[1]) + facing(close_a[0], res_b[j])
            h_row[j] = -(lead + (j - 1) * ext)
        else:
            h_row[j] = 0
        f_row[j] = NEG
    best, bi, bj = NEG, 0, 0
    if mode == LOCAL:
        best = 0
    for i in range(1, n + 1):
        if mode == SEMIGLOBAL and h_row[m] > best:
            best, bi, bj = h_row[m], i - 1, m
        diag = h_row[0]
        h_left = 0
        if mode == GLOBAL:
            lead = facing(open_b[0], res_a[1]) + facing(close_b[0], res_a[i])
            h_left = -(lead + (i - 1) * ext)
        h_row[0] = h_left
        e = NEG
        oa = open_a[i]
        ca = close_a[i]
        ra = res_a[i]
        for j in range(1, m + 1):
            bits = 0
            e_ext = e - ext
            e_open = h_left - facing(oa, res_b[j])
            if e_ext >= e_open:
                e = e_ext
                bits |= E_EXT
            else:
                e = e_open
            f_ext = f_row[j] - ext
            f_open = h_row[j] - facing(open_b[j], ra)
            if f_ext >= f_open:
                f = f_ext
                bits |= F_EXT
            else:
                f = f_open
            h = diag + S[i - 1, j - 1]
            fc = f - facing(close_b[j], ra)
            ec = e - facing(ca, res_b[j])
            if fc > h:
                h = fc
                bits |= H_UP
            if ec > h:
                h = ec
                bits = (bits & 12) | H_LEFT
            if mode == LOCAL:
                if h <= 0:
                    h = 0
                    bits |= H_STOP
                elif h > best:
                    best, bi, bj = h, i, j
            trace[i, j] = bits
            diag = h_row[j]
            h_row[j] = h
            f_row[j] = f
            h_left = h
    if mode == GLOBAL:
        best, bi, bj = h_row[m], n, m
    elif mode == SEMIGLOBAL:
        for j in range(m + 1):
            if h_row[j] > best:
                best, bi, bj = h_row[j], n, j
    return np.int64(best), np.int64(bi), np.int64(bj)


@njit(cache=True, nogil=True)
def _traceback(n, m, trace, mode, end_i, end_j, ops):
    """Write ops into ``ops`` (length >= n + m) in order; returns ``(n_ops, start_i, start_j)``."""
    k = 0
    if mode == SEMIGLOBAL:
        k = end_gaps(ops, k, n - end_i, m - end_j)
    i, j, state = end_i, end_j, 0
    while i > 0 and j > 0:
        stop, state, di, dj, k = trace_step(trace[i, j], state, ops, k)
        if stop:
            break
        i -= di
        j -= dj
    if mode != LOCAL:
        k = end_gaps(ops, k, i, j)
        i, j = 0, 0
    ops[:k] = ops[:k][::-1].copy()
    return k, i, j


@njit(cache=True, nogil=True)
def profile_align_one(S, open_a, close_a, open_b, close_b, res_a, res_b, ext, mode, ops):
    """Profile-profile DP with traceback: ``(score, n_ops, start_i, start_j, end_i, end_j)``."""
    n, m = S.shape
    trace = np.empty((n + 1, m + 1), np.uint8)
    score, ei, ej = fill_rows(
        n, m, S, open_a, close_a, open_b, close_b, res_a, res_b, ext, mode, trace
    )
    k, si, sj = _traceback(n, m, trace, mode, ei, ej, ops)
    return score, k, si, sj, ei, ej


@njit(cache=True, nogil=True)
def _pair_matrix(a, n, b, m, mat):
    S = np.empty((n, m), np.int32)
    for i in range(n):
        row = mat[a[i]]
        for j in range(m):
            S[i, j] = row[b[j]]
    return S


STRIPED_MIN_A = 128


@njit(cache=True, parallel=True)
def _pair_score_batch(codes_a, len_a, codes_b, len_b, mat, go, ge, mode, out):
    """Scores of many pairs; ``out int32 [P, 3]`` gets ``(score, end_i, end_j)``.

    Local pairs with ``a`` of at least ``STRIPED_MIN_A`` residues take the striped kernel
    (``dp_long``: one core, BLOSUM62, 10/1, about 1.3x the row kernel at 128 x 1,000, 2x at
    128 x 300,000, 6x at 1,000 x 300,000; even or slower below 100 x 1,000), the rest the row
    kernel.
    """
    mat_max = max(1, np.abs(mat).max()) if mat.size else 1
    for p in prange(codes_a.shape[0]):
        n, m = len_a[p], len_b[p]
        if mode == LOCAL and n >= STRIPED_MIN_A and dp_long.fits(n, mat_max, go, ge):
            s, ei, ej = dp_long.local_score_striped(
                codes_a[p], n, codes_b[p], m, mat, go, ge, mat_max
            )
        else:
            s, ei, ej = pair_score_rows(codes_a[p], n, codes_b[p], m, mat, go, ge, mode)
        out[p, 0] = s
        out[p, 1] = ei
        out[p, 2] = ej


@njit(cache=True, nogil=True)
def _pair_score_rows(codes_a, len_a, codes_b, len_b, mat, go, ge, mode, out):
    """:func:`_pair_score_batch` on one thread and the row kernel only, for batches of few
    cells (:mod:`torchmsa.cpu.twins`): the striped kernel gives the same scores and end cells
    and pays only on long pairs, and leaving it out saves compiling it (15 s on two cores)."""
    for p in range(codes_a.shape[0]):
        s, ei, ej = pair_score_rows(codes_a[p], len_a[p], codes_b[p], len_b[p], mat, go, ge, mode)
        out[p, 0] = s
        out[p, 1] = ei
        out[p, 2] = ej


def _pair_align_batch(codes_a, len_a, codes_b, len_b, mat, go, ge, mode, ops, out):
    """Alignments of many pairs.

    ``ops uint8 [P, La + Lb]`` gets each pair's ops; ``out int32 [P, 6]`` gets
    ``(score, n_ops, start_i, start_j, end_i, end_j)``.
    """
    for p in prange(codes_a.shape[0]):
        n, m = len_a[p], len_b[p]
        S = _pair_matrix(codes_a[p], n, codes_b[p], m, mat)
        open_a = np.full(n + 1, go, np.int32)
        open_b = np.full(m + 1, go, np.int32)
        close_a = np.zeros(n + 1, np.int32)
        close_b = np.zeros(m + 1, np.int32)
        res_a = np.full(n + 1, RES_ONE, np.int32)
        res_b = np.full(m + 1, RES_ONE, np.int32)
        score, k, si, sj, ei, ej = profile_align_one(
            S, open_a, close_a, open_b, close_b, res_a, res_b, ge, mode, ops[p]
        )
        out[p, 0] = score
        out[p, 1] = k
        out[p, 2] = si
        out[p, 3] = sj
        out[p, 4] = ei
        out[p, 5] = ej


_pair_align_parallel = njit(cache=True, parallel=True)(_pair_align_batch)
_pair_align_serial = njit(cache=True, nogil=True)(twin(_pair_align_batch))


def _profile_align_batch(
    S,
    s_off,
    n,
    m,
    open_a,
    close_a,
    res_a,
    a_off,
    open_b,
    close_b,
    res_b,
    b_off,
    ext,
    mode,
    ops,
    ops_off,
    out,
):
    """Many profile-profile alignments from packed buffers.

    Pair p's score matrix is ``S[s_off[p] : s_off[p] + n[p] * m[p]]`` (row-major
    ``[n[p], m[p]]``); its boundary costs are ``open_a[a_off[p] : a_off[p] + n[p] + 1]`` (and
    ``close_a``), ``open_b[b_off[p] : b_off[p] + m[p] + 1]`` (and ``close_b``); its ops go to
    ``ops[ops_off[p] :]``; ``out int32 [P, 6]`` gets ``(score, n_ops, start_i, start_j, end_i,
    end_j)``.
    """
    for p in prange(n.shape[0]):
        ni, mi = n[p], m[p]
        sp = S[s_off[p] : s_off[p] + ni * mi].reshape((ni, mi))
        oa = open_a[a_off[p] : a_off[p] + ni + 1]
        ca = close_a[a_off[p] : a_off[p] + ni + 1]
        ob = open_b[b_off[p] : b_off[p] + mi + 1]
        cb = close_b[b_off[p] : b_off[p] + mi + 1]
        ra = res_a[a_off[p] : a_off[p] + ni + 1]
        rb = res_b[b_off[p] : b_off[p] + mi + 1]
        score, k, si, sj, ei, ej = profile_align_one(
            sp, oa, ca, ob, cb, ra, rb, ext, mode, ops[ops_off[p] : ops_off[p] + ni + mi]
        )
        out[p, 0] = score
        out[p, 1] = k
        out[p, 2] = si
        out[p, 3] = sj
        out[p, 4] = ei
        out[p, 5] = ej


_profile_parallel = njit(cache=True, parallel=True)(_profile_align_batch)
_profile_serial = njit(cache=True, nogil=True)(twin(_profile_align_batch))


def _np(t: torch.Tensor) -> np.ndarray:
    return t.detach().cpu().contiguous().numpy()


def _cells(len_a: np.ndarray, len_b: np.ndarray) -> int:
    """DP cells of the pairs of these lengths."""
    return int(np.dot(len_a.astype(np.int64), len_b.astype(np.int64)))


def pairwise_score(codes_a, len_a, codes_b, len_b, matrix, gap_open, gap_extend, mode):
    """Scores of pairs ``(codes_a[p, :len_a[p]], codes_b[p, :len_b[p]])``.

    Arguments:
        codes_a, codes_b: ``uint8 [P, La]``, ``uint8 [P, Lb]`` residue codes.
        len_a, len_b: ``int32 [P]`` lengths.
        matrix: ``int32 [A, A]`` substitution scores.
        gap_open, gap_extend: ``int`` costs.
        mode: ``GLOBAL``, ``LOCAL`` or ``SEMIGLOBAL``.

    Returns:
        ``int32 [P, 3]``: score, end_i, end_j.
    """
    out = np.empty((codes_a.shape[0], 3), np.int32)
    la, lb = _np(len_a), _np(len_b)
    # the row-kernel twin only for few cells: on one thread too, long pairs want the striped one
    run = pick(_pair_score_batch, _pair_score_rows, _cells(la, lb), one_thread=False)
    run(
        _np(codes_a),
        la,
        _np(codes_b),
        lb,
        _np(matrix),
        int(gap_open),
        int(gap_extend),
        int(mode),
        out,
    )
    return torch.from_numpy(out)


def pairwise_align(
    codes_a, len_a, codes_b, len_b, matrix, gap_open, gap_extend, mode, budget=None, wide=None
):
    """Alignments of pairs (arguments as :func:`pairwise_score`).

    ``budget``: bytes the call may use; pairs whose full matrices would not fit
    (:func:`dp_linear.needs_linear`), or of more than ``wide`` cells, are aligned in linear
    space instead, with equal results. ``None``: every pair takes the full-matrix path.

    Returns:
        ``(info int32 [P, 6], ops uint8 [P, La + Lb])``; info is ``(score, n_ops, start_i,
        start_j, end_i, end_j)`` and ``ops[p, :n_ops]`` the pair's ops in order.

    Raises:
        ResourceError: a pair does not fit ``budget`` even in linear space.
    """
    P = codes_a.shape[0]
    ops = np.zeros((P, codes_a.shape[1] + codes_b.shape[1]), np.uint8)
    out = np.empty((P, 6), np.int32)
    ca, la, cb, lb, mat = (_np(t) for t in (codes_a, len_a, codes_b, len_b, matrix))
    huge = None if budget is None else dp_linear.needs_linear(la, lb, budget)
    if huge is not None and wide is not None:
        huge |= la.astype(np.int64) * lb > wide
    la_full, lb_full = la, lb
    if huge is not None and huge.any():  # the batch sees them as empty pairs
        la_full, lb_full = la.copy(), lb.copy()
        la_full[huge] = 0
        lb_full[huge] = 0
    run = pick(_pair_align_parallel, _pair_align_serial, _cells(la_full, lb_full))
    run(ca, la_full, cb, lb_full, mat, int(gap_open), int(gap_extend), int(mode), ops, out)
    if la_full is not la:
        dp_linear.align_huge(
            ca, la, cb, lb, mat, int(gap_open), int(gap_extend), int(mode), huge, ops, out, budget
        )
    return torch.from_numpy(out), torch.from_numpy(ops)


def full_residues(costs) -> np.ndarray:
    """Residue factors of ``RES_ONE`` for every boundary of ``costs`` (plain gap costs)."""
    return np.full(costs.shape[0], RES_ONE, np.int32)


def profile_align(
    S,
    s_off,
    n,
    m,
    open_a,
    close_a,
    a_off,
    open_b,
    close_b,
    b_off,
    ext,
    mode,
    res_a=None,
    res_b=None,
):
    """Many profile-profile alignments from packed buffers.

    Arguments:
        S: ``int32 [sum(n*m)]`` row-major score matrices, pair p's at ``s_off[p]``.
        s_off: ``int64 [P]``.
        n, m: ``int32 [P]`` column counts of each pair's two profiles.
        open_a, close_a: ``int32 [sum(n+1)]`` boundary gap costs of the first profiles, pair
            p's at ``a_off[p]`` (``int64 [P]``).
        open_b, close_b, b_off: the same for the second profiles.
        ext: ``int`` gap extension cost.
        mode: ``GLOBAL``, ``LOCAL`` or ``SEMIGLOBAL``.
        res_a, res_b: ``int32`` residue factors (``0 .. RES_ONE``) of the columns, laid out as
            ``open_a`` and ``open_b`` (index 0 of each profile unused); ``None``: ``RES_ONE``.

    Returns:
        ``(info int32 [P, 6], ops uint8 [sum(n+m)], ops_off int64 [P])``; pair p's ops are
        ``ops[ops_off[p] : ops_off[p] + info[p, 1]]``.
    """
    n_np, m_np = _np(n).astype(np.int64), _np(m).astype(np.int64)
    sizes = n_np + m_np
    ops_off = np.zeros(len(sizes), np.int64)
    np.cumsum(sizes[:-1], out=ops_off[1:])
    ops = np.zeros(int(sizes.sum()), np.uint8)
    out = np.empty((len(sizes), 6), np.int32)
    open_a, open_b = _np(open_a), _np(open_b)
    res_a = full_residues(open_a) if res_a is None else _np(res_a).astype(np.int32)
    res_b = full_residues(open_b) if res_b is None else _np(res_b).astype(np.int32)
    run = pick(_profile_parallel, _profile_serial, int(np.dot(n_np, m_np)))
    run(
        _np(S),
        _np(s_off),
        n_np,
        m_np,
        open_a,
        _np(close_a),
        res_a,
        _np(a_off),
        open_b,
        _np(close_b),
        res_b,
        _np(b_off),
        int(ext),
        int(mode),
        ops,
        ops_off,
        out,
    )
    return torch.from_numpy(out), torch.from_numpy(ops), torch.from_numpy(ops_off)
