"""Strips of a global affine DP with crossing tracking (numba): the CPU twin of
``triton_kernels/strip.py``'s ``GLOBAL`` variant, and the tracebacks inside the strips; decision
``docs/decisions/0060-global-pair-in-strips.md``.

Rows ``i = 0..n`` walk ``a``, columns ``j = 0..m`` walk ``b``; the recurrence and tie rule are
``cpu/dp.py``'s global ones (``H[0, j] = -(go + (j - 1) ge)``, ``H[i, 0]`` likewise; diagonal,
then up, then left; extend before open). A strip ``k`` is columns ``k W + 1 .. min((k + 1) W,
m)``; its *input column* is ``k W``. Each cell also carries the *crossing* of its tie-rule path
with its strip's input column, as a code ``2 r + state``: the path leaves the input column from
row ``r``, in ``H`` (``state`` 0: a diagonal move or a gap opened there) or inside a gap in
``a`` (``state`` 1, ``E``: a gap extended from there). ``CH`` is the crossing of ``H``, ``CE``
of ``E`` (``CF`` of ``F`` inside a column). At a strip's input column every row's codes are
reset to ``2 i`` and ``2 i + 1``; row 0 (the leading gap in ``a``) has code 1 in a strip whose
input column is past column 0, else 0.

A strip's *checkpoint* is its last column: ``H``, ``E``, ``CH``, ``CE`` for rows ``0..n`` (row 0:
``H[0, j]``, ``NEG``, and its code twice). From the end cell ``(n, m)`` in ``H``, the codes give
the path's crossing of every input column, last strip first (:func:`crossings`); the path
inside strip ``k`` joins its two crossings, and the DP of that rectangle alone, from the exact
input column, traces it back (:func:`strip_tracebacks`).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from torchmsa.constants import E_EXT, F_EXT, H_LEFT, H_UP, NEG, OP_LEFT, OP_UP
from torchmsa.cpu.rules.trace_step import trace_step
from torchmsa.cpu.strip import query_profile
from torchmsa.errors import ArgumentError

__all__ = ["first_column", "global_strip_fill", "crossings", "strip_tracebacks"]


@njit(cache=True, nogil=True)
def _top(j, go, ge):
    """``H[0, j]``: the leading gap in ``a`` of ``j`` columns."""
    return 0 if j == 0 else -(go + (j - 1) * ge)


@njit(cache=True, nogil=True)
def _fill_segment(prof, s, go, ge, W, lo, hi, col, out, ckpt):
    """Fill strips ``lo .. hi - 1`` from ``col [4, n + 1]`` (the exact column ``lo W``,
    updated in place); strip ``k``'s checkpoint goes to ``ckpt[out + k - lo]``."""
    n = col.shape[1] - 1
    m = s.shape[0]
    A = prof.shape[0]
    H, E, CH, CE = col[0], col[1], col[2], col[3]
    for k in range(lo, hi):
        jlo = k * W + 1
        jhi = min((k + 1) * W, m)
        code0 = 1 if jlo > 1 else 0  # row 0's crossing: inside the leading gap, or its start
        for i in range(n + 1):
            CH[i] = 2 * i
            CE[i] = 2 * i + 1
        H[0] = _top(jlo - 1, go, ge)
        for j in range(jlo, jhi + 1):
            p = prof[min(s[j - 1], A - 1)]
            hdiag, cdiag = H[0], CH[0]  # (0, j - 1)
            hup, cup = _top(j, go, ge), code0  # (0, j)
            f, cf = NEG, 0
            for i in range(1, n + 1):
                hl, cl = H[i], CH[i]
                e, ce = E[i] - ge, CE[i]
                if e < hl - go:
                    e, ce = hl - go, cl
                if f - ge < hup - go:
                    f, cf = hup - go, cup
                else:
                    f = f - ge
                h, c = hdiag + p[i], cdiag
                if f > h:
                    h, c = f, cf
                if e > h:
                    h, c = e, ce
                hdiag, cdiag = hl, cl
                H[i], E[i], CH[i], CE[i] = h, e, c, ce
                hup, cup = h, c
            H[0], CH[0] = _top(j, go, ge), code0
        E[0], CE[0] = NEG, code0
        ckpt[out + k - lo, :, :] = col


@njit(cache=True, parallel=True)
def _strip_fill(q, s, mat, go, ge, W, seg_lo, seg_hi, col_in, slot, ckpt):
    prof = query_profile(q, mat)
    for c in prange(seg_lo.shape[0]):
        col = col_in[c].copy()
        _fill_segment(prof, s, go, ge, W, seg_lo[c], seg_hi[c], col, slot[c], ckpt)


def first_column(n: int, go: int, ge: int) -> np.ndarray:
    """``int32 [4, n + 1]``: column 0 of the global DP (``H[i, 0]``, ``E = NEG``, codes)."""
    col = np.empty((4, n + 1), np.int32)
    i = np.arange(n + 1, dtype=np.int64)
    col[0] = np.where(i == 0, 0, -(go + (i - 1) * ge))
    col[1] = NEG
    col[2] = 2 * i
    col[3] = 2 * i + 1
    return col


def global_strip_fill(q, s, mat, go, ge, W, seg_lo, seg_hi, col_in, slot, ckpt) -> None:
    """Fill segments of consecutive strips of the global DP, the segments in parallel.

    Arguments:
        q, s: ``uint8 [n]``, ``uint8 [m]`` codes of ``a`` and ``b``; mat: ``int32 [A, A]``.
        go, ge: gap open (a gap's first column) and extend costs.
        W: strip width; seg_lo, seg_hi: ``int32 [C]``: segment ``c`` fills strips
            ``seg_lo[c] .. seg_hi[c] - 1`` from ``col_in[c]`` (``int32 [C, 4, n + 1]``, the
            exact column ``seg_lo[c] W``; its codes are not read).
        slot: ``int64 [C]``: strip ``k`` of segment ``c`` is written at ``slot[c] + k -
            seg_lo[c]`` of ``ckpt`` (``int32 [S, 4, n + 1]``, written).
    """
    n, m, S = q.shape[0], s.shape[0], ckpt.shape[0]
    lo, hi = seg_lo.astype(np.int64), seg_hi.astype(np.int64)
    if col_in.shape != (lo.shape[0], 4, n + 1) or ckpt.shape[1:] != (4, n + 1):
        raise ArgumentError(f"`col_in` {col_in.shape} or `ckpt` {ckpt.shape} does not fit n={n}")
    if W < 1 or (lo < 0).any() or (hi < lo).any() or ((hi > lo) & ((hi - 1) * W >= m)).any():
        raise ArgumentError(f"Invalid segments: strips {lo.tolist()} .. {hi.tolist()} of W={W}")
    if (slot < 0).any() or (slot + hi - lo > S).any():
        raise ArgumentError(f"`slot` {slot.tolist()} writes past the {S} rows of `ckpt`")
    if lo.shape[0]:
        _strip_fill(q, s, mat, int(go), int(ge), int(W), seg_lo, seg_hi, col_in, slot, ckpt)


@njit(cache=True, nogil=True)
def crossings(codes, n):
    """``int64 [S + 1, 2]``: the end cell's path ``(row, state)`` at every input column ``k W``
    (row ``k``), and at ``(n, m)`` in ``H`` (row ``S``). ``codes [S, 2, n + 1]``: the
    checkpoints' ``CH``, ``CE``."""
    S = codes.shape[0]
    out = np.empty((S + 1, 2), np.int64)
    r, st = n, 0
    out[S, 0], out[S, 1] = r, st
    for k in range(S - 1, -1, -1):
        c = codes[k, st, r]
        r, st = c // 2, c % 2
        out[k, 0], out[k, 1] = r, st
    return out


@njit(cache=True, nogil=True)
def _rect(q, s, mat, go, ge, j0, j1, r_in, r_out, h_in, e_in, st_in, st_out, ops):
    """The path of strip columns ``j0 + 1 .. j1`` from ``(r_in, j0)`` in ``st_in`` to
    ``(r_out, j1)`` in ``st_out``: the rectangle's DP from the input column (``h_in``,
    ``e_in`` of rows ``r_in .. r_out``; rows above ``r_in`` left out, which can only lower
    values off the path) and its tie-rule traceback. Writes the ops last to first into
    ``ops``; returns their count (``-1``: the path does not reach the crossing)."""
    rows, cols = r_out - r_in + 1, j1 - j0
    bits = np.zeros((rows, cols + 1), np.uint8)
    hrow = np.empty(cols + 1, np.int32)  # H of the row above, columns j0 .. j1
    frow = np.full(cols + 1, NEG, np.int32)
    for t in range(rows):
        i = r_in + t
        if i == 0:  # the top row: the leading gap, no recurrence
            for u in range(cols + 1):
                hrow[u] = _top(j0 + u, go, ge)
                bits[t, u] = H_LEFT | E_EXT
            continue
        h_left, e = h_in[t], e_in[t]
        diag = hrow[0] if t > 0 else NEG
        row = mat[q[i - 1]]
        for u in range(1, cols + 1):
            b = 0
            e_open = h_left - go
            if e - ge >= e_open:
                e = e - ge
                b |= E_EXT
            else:
                e = e_open
            up = hrow[u] if t > 0 else NEG
            f_ext = frow[u] - ge if t > 0 else NEG
            f_open = up - go if t > 0 else NEG
            if f_ext >= f_open:
                f = f_ext
                b |= F_EXT
            else:
                f = f_open
            h = diag + row[s[j0 + u - 1]] if t > 0 or diag > NEG else NEG
            if f > h:
                h = f
                b |= H_UP
            if e > h:
                h = e
                b = (b & 12) | H_LEFT
            bits[t, u] = b
            diag = hrow[u] if t > 0 else NEG
            hrow[u] = h
            frow[u] = f
            h_left = h
        hrow[0] = h_in[t]
    i, u, state, k = rows - 1, cols, 2 * st_out, 0
    while u > 0:
        if r_in + i == 0:  # on the leading gap: straight left
            ops[k] = OP_LEFT
            k += 1
            u -= 1
            state = 2 if j0 + u > 0 else 0  # column 0 is where the gap starts
            continue
        _, state, di, dj, k = trace_step(bits[i, u], state, ops, k)
        i -= di
        u -= dj
        if i < 0:
            return -1
    if i != 0 or state != 2 * st_in:
        return -1
    return k


@njit(cache=True, parallel=True)
def _tracebacks(q, s, mat, go, ge, W, cross, h_in, e_in, off, ops, n_ops):
    S = cross.shape[0] - 1
    m = s.shape[0]
    for k in prange(S):
        r_in, st_in = cross[k, 0], cross[k, 1]
        r_out, st_out = cross[k + 1, 0], cross[k + 1, 1]
        j0, j1 = k * W, min((k + 1) * W, m)
        a, b = off[k], off[k + 1]
        part = np.empty(j1 - j0 + r_out - r_in + 1, np.uint8)
        cnt = _rect(
            q, s, mat, go, ge, j0, j1, r_in, r_out, h_in[a:b], e_in[a:b], st_in, st_out, part
        )
        n_ops[k] = cnt
        if cnt >= 0:
            for t in range(cnt):
                ops[k, t] = part[cnt - 1 - t]


def strip_tracebacks(q, s, mat, go, ge, W, cross, h_in, e_in, off):
    """The global path's ops, strip by strip (strips in parallel), in order.

    Arguments:
        q, s, mat, go, ge, W: as :func:`global_strip_fill`.
        cross: ``int64 [S + 1, 2]`` from :func:`crossings`.
        h_in, e_in: ``int32 [T]``: strip ``k``'s input column, rows ``cross[k, 0] ..
            cross[k + 1, 0]``, at ``off[k] .. off[k + 1] - 1``.

    Returns:
        ``uint8`` ops of the whole path (a leading run down column 0 included).

    Raises:
        RuntimeError: a strip's path does not join its crossings (an internal error).
    """
    S = cross.shape[0] - 1
    width = int(W + (cross[1:, 0] - cross[:-1, 0]).max(initial=0) + 1)
    ops = np.zeros((S, width), np.uint8)
    n_ops = np.zeros(S, np.int64)
    _tracebacks(q, s, mat, int(go), int(ge), int(W), cross, h_in, e_in, off, ops, n_ops)
    bad = np.flatnonzero(n_ops < 0)
    if bad.size:
        k = int(bad[0])
        raise RuntimeError(
            f"internal error: the global path in strip {k} does not join its crossings "
            f"{cross[k].tolist()} and {cross[k + 1].tolist()}"
        )
    lead = np.full(int(cross[0, 0]), OP_UP, np.uint8)  # down column 0 to the first crossing
    return np.concatenate([lead, *(ops[k, : n_ops[k]] for k in range(S))])
