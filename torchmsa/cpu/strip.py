"""Strips of a local affine DP with start tracking and forbidden pairs (numba), the CPU twin of
``triton_kernels/strip.py``: the kernels of best-K local alignment (Waterman-Eggert), decision
``docs/decisions/0038-best-k-local-alignment.md``.

Rows ``i = 1..n`` walk the query, columns ``j = 1..m`` the subject (indices of the DP, so column
``j`` is subject residue ``j - 1``). The recurrence is the local one of ``cpu/dp.py`` with its tie
rule (diagonal, then up, then left; extend before open; ``H <= 0`` stops), except that a
forbidden pair ``(i, j)`` has no diagonal move into it. Each cell also carries the column where
its tie-rule path starts (``SH``; ``SE``, ``SF`` inside gaps): stop -> 0; diagonal -> ``j`` when
``H[i-1, j-1] == 0`` else ``SH[i-1, j-1]``; up -> ``SF``; left -> ``SE``. Row 0 and the column
before the first strip are ``H = 0``, ``E = F = NEG``, starts 0.

A strip ``k`` is columns ``k * W + 1 .. min((k + 1) * W, m)``; its checkpoint is its last column
(``H``, ``E``, ``SH``, ``SE`` for rows ``0..n``) and its best cell ``(score, i, j, SH)`` is the
first maximum in row-major order, ``(0, 0, 0, 0)`` when every ``H`` is 0.
"""

from __future__ import annotations

import numpy as np
import torch
from numba import get_num_threads, njit, prange

from torchmsa.constants import (
    E_EXT,
    F_EXT,
    H_LEFT,
    H_STOP,
    H_UP,
    NEG,
)
from torchmsa.cpu.rules.trace_step import trace_step
from torchmsa.errors import ArgumentError, ResourceError

__all__ = [
    "query_profile", "strip_fill", "refill_until", "rect_first_row", "rect_traceback", "workers",
]  # fmt: skip


@njit(cache=True, nogil=True)
def _fill_segment(prof, s, go, ge, W, lo, hi, col, out, fptr, fcol, ckpt, best):
    """Fill strips ``lo .. hi - 1`` from ``col [4, n + 1]`` (updated in place); strip ``k``'s
    outputs go to ``ckpt[out + k - lo]``, ``best[out + k - lo]``."""
    n = col.shape[1] - 1
    m = s.shape[0]
    A = prof.shape[0]
    H, E, SH, SE = col[0], col[1], col[2], col[3]
    H[0], E[0], SH[0], SE[0] = 0, NEG, 0, 0
    fp = np.empty(n + 1, np.int64)  # row i's next forbidden pair
    for k in range(lo, hi):
        jlo = k * W + 1
        jhi = min((k + 1) * W, m)
        nf = fcol.shape[0] > 0
        if nf:
            for i in range(1, n + 1):
                a, b = fptr[i], fptr[i + 1]
                fp[i] = a + np.searchsorted(fcol[a:b], jlo)
        bs, bi, bj, bsh = 0, 0, 0, 0
        for j in range(jlo, jhi + 1):
            p = prof[min(s[j - 1], A - 1)]  # [n + 1]; a code past the matrix reads its last row
            hdiag, shdiag = 0, 0  # (i - 1, j - 1)
            hup, shup = 0, 0  # (i - 1, j)
            f, sf = NEG, 0
            for i in range(1, n + 1):
                hl, shl = H[i], SH[i]
                e = E[i] - ge
                se = SE[i]
                if e < hl - go:
                    e = hl - go
                    se = shl
                if f - ge < hup - go:
                    f = hup - go
                    sf = shup
                else:
                    f = f - ge
                forbidden = False
                if nf and fp[i] < fptr[i + 1] and fcol[fp[i]] == j:
                    forbidden = True
                    fp[i] += 1
                if forbidden:
                    h, sh = f, sf
                else:
                    h = hdiag + p[i]
                    sh = j if hdiag == 0 else shdiag
                    if f > h:
                        h, sh = f, sf
                if e > h:
                    h, sh = e, se
                if h <= 0:
                    h, sh = 0, 0
                elif h > bs or (h == bs and i < bi):
                    bs, bi, bj, bsh = h, i, j, sh
                hdiag, shdiag = hl, shl
                H[i], E[i], SH[i], SE[i] = h, e, sh, se
                hup, shup = h, sh
        r = out + k - lo
        ckpt[r, :, :] = col
        best[r, 0], best[r, 1], best[r, 2], best[r, 3] = bs, bi, bj, bsh


@njit(cache=True, nogil=True)
def query_profile(q, mat):
    """``int32 [A, n + 1]``: ``mat[q[i - 1], a]`` at ``[a, i]`` (column 0 unused)."""
    n = q.shape[0]
    prof = np.zeros((mat.shape[0], n + 1), np.int32)  # [A, n + 1] query profile
    for a in range(mat.shape[0]):
        for i in range(1, n + 1):
            prof[a, i] = mat[q[i - 1], a]
    return prof


@njit(cache=True, nogil=True)
def _refill_until(q, s, mat, go, ge, W, k, end, stop_from, col, fptr, fcol, ckpt, best):
    prof = query_profile(q, mat)
    n1 = col.shape[1]
    sck = np.empty((1, 4, n1), np.int32)
    sbest = np.empty((1, 4), np.int32)
    while k < end:
        _fill_segment(prof, s, go, ge, W, k, k + 1, col, 0, fptr, fcol, sck, sbest)
        same = True
        for t in range(4):
            for i in range(n1):
                if sck[0, t, i] != ckpt[k, t, i]:
                    same = False
                    break
            if not same:
                break
        ckpt[k, :, :] = sck[0]
        best[k, :] = sbest[0]
        k += 1
        if same and k > stop_from:
            break
    return k


@njit(cache=True, parallel=True)
def _strip_fill(q, s, mat, go, ge, W, seg_lo, seg_hi, col_in, slot, fptr, fcol, ckpt, best):
    prof = query_profile(q, mat)
    for c in prange(seg_lo.shape[0]):
        col = col_in[c].copy()
        _fill_segment(
            prof, s, go, ge, W, seg_lo[c], seg_hi[c], col, slot[c], fptr, fcol, ckpt, best
        )


def _host(x, name: str, dtype, writable: bool = False) -> np.ndarray:
    """``x`` (numpy array or CPU tensor) as a numpy array sharing its memory."""
    if isinstance(x, torch.Tensor):
        if x.device.type != "cpu":
            raise ArgumentError(
                f"`{name}` is on {x.device}; the CPU strip kernel takes CPU tensors (use the "
                f"Triton backend for CUDA tensors)"
            )
        x = x.detach().numpy()
    x = np.asarray(x)
    if x.dtype != dtype or (writable and not x.flags.c_contiguous):
        raise ArgumentError(
            f"`{name}` must be a {'C-contiguous ' if writable else ''}{np.dtype(dtype)} array; "
            f"got {x.dtype} {x.shape}"
        )
    return x if writable else np.ascontiguousarray(x)


def _check_layout(q, s, mat, W, seg_lo, seg_hi, col_in, slot, fptr, ckpt, best) -> None:
    """Raise :class:`ArgumentError` where the kernel would read or write out of bounds."""
    n, m, C, S = q.shape[0], s.shape[0], seg_lo.shape[0], ckpt.shape[0]
    shapes = {
        "mat": (mat.shape, (mat.shape[0], mat.shape[0])),
        "seg_hi": (seg_hi.shape, (C,)),
        "col_in": (col_in.shape, (C, 4, n + 1)),
        "slot": (slot.shape, (C,)),
        "forbid_ptr": (fptr.shape, (n + 2,)),
        "ckpt": (ckpt.shape, (S, 4, n + 1)),
        "best": (best.shape, (S, 4)),
    }
    for name, (got, want) in shapes.items():
        if got != want or (name == "mat" and not mat.size):
            raise ArgumentError(f"`{name}` has shape {got}; expected {want} (n={n}, C={C})")
    if n and int(q.max()) >= mat.shape[0]:
        raise ArgumentError(f"`q` holds code {int(q.max())}; `mat` has {mat.shape[0]} rows")
    lo, hi = seg_lo.astype(np.int64), seg_hi.astype(np.int64)
    if W < 1 or (lo < 0).any() or (hi < lo).any() or ((hi > lo) & ((hi - 1) * W >= m)).any():
        raise ArgumentError(f"Invalid segments: strips {lo.tolist()} .. {hi.tolist()} of W={W}")
    if (slot < 0).any() or (slot + hi - lo > S).any():
        raise ArgumentError(f"`slot` {slot.tolist()} writes past the {S} rows of `ckpt`")


def strip_fill(
    q, s, mat, go, ge, W, seg_lo, seg_hi, col_in, slot, forbid_ptr, forbid_col, ckpt, best
):
    """Fill segments of consecutive strips, the segments in parallel (one numba task each).

    Arguments:
        q: ``uint8 [n]`` query codes.
        s: ``uint8 [m]`` subject codes.
        mat: ``int32 [A, A]`` substitution scores.
        go, ge: gap open (a gap's first column) and gap extend (each further one) costs.
        W: strip width (columns).
        seg_lo, seg_hi: ``int32 [C]``: segment ``c`` fills strips ``seg_lo[c] .. seg_hi[c] - 1``.
        col_in: ``int32 [C, 4, n + 1]``: ``H``, ``E``, ``SH``, ``SE`` of the column before segment
            ``c``'s first strip (row 0 is not read: it is always ``(0, NEG, 0, 0)``).
        slot: ``int64 [C]``: strip ``k`` of segment ``c`` is written at ``slot[c] + k - seg_lo[c]``.
        forbid_ptr: ``int32 [n + 2]``: the forbidden pairs of row ``i`` are
            ``forbid_col[forbid_ptr[i] : forbid_ptr[i + 1]]``.
        forbid_col: ``int32 [F]`` their DP columns (``1..m``), sorted within a row.
        ckpt: ``int32 [S, 4, n + 1]``, written: each strip's last column (row 0 is
            ``(0, NEG, 0, 0)``).
        best: ``int32 [S, 4]``, written: each strip's best cell ``(score, i, j, SH)``.

    Numpy arrays or CPU tensors; the outputs are written in place.
    """
    q = _host(q, "q", np.uint8)
    s = _host(s, "s", np.uint8)
    mat = _host(mat, "mat", np.int32)
    seg_lo, seg_hi = _host(seg_lo, "seg_lo", np.int32), _host(seg_hi, "seg_hi", np.int32)
    col_in, slot = _host(col_in, "col_in", np.int32), _host(slot, "slot", np.int64)
    fptr, fcol = (
        _host(forbid_ptr, "forbid_ptr", np.int32),
        _host(forbid_col, "forbid_col", np.int32),
    )
    ckpt, best = _host(ckpt, "ckpt", np.int32, True), _host(best, "best", np.int32, True)
    _check_layout(q, s, mat, W, seg_lo, seg_hi, col_in, slot, fptr, ckpt, best)
    if seg_lo.shape[0] == 0:
        return
    _strip_fill(
        q, s, mat, int(go), int(ge), int(W), seg_lo, seg_hi, col_in, slot, fptr, fcol, ckpt, best
    )


def refill_until(q, s, mat, go, ge, W, k, stop_from, col, forbid_ptr, forbid_col, ckpt, best):
    """Refill strips ``k, k + 1, ...`` of the store ``ckpt``, ``best`` in place, one at a time
    from ``col`` (the exact column before strip ``k``), until the first strip at or past
    ``stop_from`` whose new checkpoint equals the stored one (the strips after it are already
    right), or the last strip. A CPU-only shortcut of the chunked refill: nothing is filled past
    the stop.

    Arguments:
        q, s, mat, go, ge, W, forbid_ptr, forbid_col, ckpt, best: as :func:`strip_fill`
            (``ckpt``, ``best`` the whole store, ``S`` strips).
        k: the first strip to fill.
        stop_from: the first strip whose unchanged checkpoint may end the refill.
        col: ``int32 [4, n + 1]`` the column before strip ``k`` (overwritten).

    Returns:
        One past the last strip filled.
    """
    q, s, mat = _host(q, "q", np.uint8), _host(s, "s", np.uint8), _host(mat, "mat", np.int32)
    fptr = _host(forbid_ptr, "forbid_ptr", np.int32)
    fcol = _host(forbid_col, "forbid_col", np.int32)
    col = _host(col, "col", np.int32, True)
    ckpt, best = _host(ckpt, "ckpt", np.int32, True), _host(best, "best", np.int32, True)
    n, S = q.shape[0], ckpt.shape[0]
    if col.shape != (4, n + 1) or ckpt.shape[1:] != (4, n + 1) or best.shape != (S, 4):
        raise ArgumentError(
            f"`col` {col.shape}, `ckpt` {ckpt.shape} and `best` {best.shape} do not fit n={n}"
        )
    if not 0 <= k < S or (S - 1) * W >= s.shape[0] or S * W < s.shape[0]:
        raise ArgumentError(f"Invalid refill: strip {k} of {S} strips of W={W}, m={s.shape[0]}")
    return int(
        _refill_until(q, s, mat, int(go), int(ge), int(W), int(k), S, int(stop_from), col,
                      fptr, fcol, ckpt, best)
    )  # fmt: skip


def workers() -> int:
    """Threads the CPU kernel spreads segments over."""
    return get_num_threads()


@njit(cache=True, nogil=True)
def _rect_fill(q, s, i_first, j_first, mat, go, ge, fptr, fcol, trace):
    """Direction bits (``cpu/dp.py``'s) of rectangle rows ``1..len(q)`` (DP rows ``i_first ..``)
    and columns ``1..w`` (DP columns ``j_first .. j_first + w - 1``) from a zero boundary;
    returns the last ``H``."""
    n1, w1 = trace.shape
    h_row = np.zeros(w1, np.int32)
    f_row = np.full(w1, NEG, np.int32)
    h = 0
    for i in range(1, n1):
        a, b = fptr[i_first - 1 + i], fptr[i_first + i]
        t = a + np.searchsorted(fcol[a:b], j_first)
        row = mat[q[i - 1]]
        diag = 0
        h_left = 0
        e = NEG
        for jj in range(1, w1):
            j = j_first + jj - 1
            bits = 0
            if e - ge >= h_left - go:
                e = e - ge
                bits |= E_EXT
            else:
                e = h_left - go
            f = f_row[jj]
            if f - ge >= h_row[jj] - go:
                f = f - ge
                bits |= F_EXT
            else:
                f = h_row[jj] - go
            forbidden = t < b and fcol[t] == j
            if forbidden:
                t += 1
                h = f
                bits |= H_UP
            else:
                h = diag + row[s[jj - 1]]
                if f > h:
                    h = f
                    bits |= H_UP
            if e > h:
                h = e
                bits = (bits & 12) | H_LEFT
            if h <= 0:
                h = 0
                bits = (bits & 12) | H_STOP
            trace[i, jj] = bits
            diag = h_row[jj]
            h_row[jj] = h
            f_row[jj] = f
            h_left = h
    return h


@njit(cache=True, nogil=True)
def _rect_trace(trace, ops):
    """Tie-rule traceback from the rectangle's last cell in ``H``: ``(n_ops, i, j)``, the ops
    reversed into ``ops`` and the cell where the path stops."""
    i, j = trace.shape[0] - 1, trace.shape[1] - 1
    k, state = 0, 0
    while i > 0 and j > 0:
        stop, state, di, dj, k = trace_step(trace[i, j], state, ops, k)
        if stop:
            break
        i -= di
        j -= dj
    ops[:k] = ops[:k][::-1].copy()
    return k, i, j


def rect_first_row(score, i_end, s_part, col_max, go, ge) -> int:
    """The top row of a hit's traceback rectangle: no row below it is needed.

    Arguments:
        score: ``h*``, the hit's score (``> 0``).
        i_end: ``i*``, its DP row.
        s_part: ``uint8 [w]`` the subject codes of its columns ``j0 .. j*``.
        col_max: ``int [A]``: ``col_max[c]`` is the best ``mat[a, c]`` over the query's codes ``a``.
        go, ge: gap costs.

    Returns:
        A DP row ``r0`` in ``1 .. i*``: the hit's tie-rule path lies in rows ``r0 .. i*``.

    Proof. Let the path start with a diagonal move into ``(a, j0)`` and make ``D`` diagonal,
    ``U`` up and ``L`` left moves to ``(i*, j*)``. Each column ``j0 .. j*`` is entered once, so
    ``D + L = w`` and ``D <= w``; each row ``a .. i*`` once, so ``i* - a + 1 = D + U``. The
    diagonal moves fall in distinct columns, so they score at most
    ``P = sum(max(0, col_max[s_j]))`` over the ``w`` columns; left gaps cost ``>= 0``; ``U >= 1``
    up moves in ``r`` runs cost ``r go + (U - r) ge``, at least ``go + (U - 1) ge`` when
    ``go >= ge`` and ``U go`` when ``go < ge``. So ``h* <= P - cost(U)``: with ``slack = P - h*``,
    ``U <= 1 + (slack - go) // ge`` (``0`` when ``slack < go``) for ``go >= ge > 0`` and
    ``U <= slack // go`` for ``0 < go < ge``; with ``min(go, ge) == 0`` there is no bound and
    ``r0 = 1``. Hence ``a = i* + 1 - D - U >= i* + 1 - w - U_max =: r0``. Every cell of the path
    and every predecessor it reads lies in rows ``a - 1 .. i*`` and columns ``j0 - 1 .. j*``: in
    the rectangle of rows ``max(r0, 1) ..`` and columns ``j0 ..``, or on its zero boundary
    (``(a - 1, j0 - 1)`` has ``H = 0`` in the full matrix too), so decision 0038's argument
    holds for it unchanged: a zero boundary only lowers values (full ``H >= 0``), the path's
    cells keep their full-matrix values, and no tie-order predecessor can win that did not.
    """
    w = len(s_part)
    if min(go, ge) <= 0:
        return 1
    P = int(np.maximum(np.asarray(col_max, np.int64)[np.asarray(s_part, np.intp)], 0).sum())
    slack = P - int(score)
    if slack < 0:  # impossible for a real hit; stay safe
        return 1
    if go >= ge:
        u_max = 0 if slack < go else 1 + (slack - go) // ge
    else:
        u_max = slack // go
    return max(1, int(i_end) + 1 - w - int(u_max))


def rect_traceback(q, s_part, j_first, mat, go, ge, forbid_ptr, forbid_col, max_bytes, i_first=1):
    """The alignment ending at the last cell of a rectangle of the DP, traced back in ``H``.

    The rectangle is DP rows ``i_first .. i_first + len(q) - 1`` and DP columns
    ``j_first .. j_first + len(s_part) - 1``, filled from a zero boundary (``H = 0``,
    ``E = F = NEG``) with the forbidden pairs that fall in it. For a hit's end cell ``(i*, j*)``
    and start column ``j0 = SH[i*, j*]``, the rectangle of rows ``r0 .. i*``
    (:func:`rect_first_row`) and columns ``j0..j*`` gives the traceback of the full matrix
    (decision 0038).

    The direction bits take ``len(q) + 1`` by ``len(s_part) + 1`` bytes; a linear-space
    (Hirschberg-style) traceback is future work.

    Arguments:
        q: ``uint8 [i* - i_first + 1]`` the query codes of the rectangle's rows.
        s_part: ``uint8 [w]`` the subject codes of the rectangle's columns.
        j_first: the DP column of ``s_part[0]`` (``1..m``).
        mat, go, ge, forbid_ptr, forbid_col: as :func:`strip_fill` (numpy arrays).
        max_bytes: the memory the direction bits may take.
        i_first: the DP row of ``q[0]`` (``1..n``).

    Returns:
        ``(ops, i0, j0, score)``: ``uint8`` ops in order (``OP_MATCH``, ``OP_UP`` a query residue
        against a gap, ``OP_LEFT`` a gap against a subject residue); the alignment covers query
        residues ``i0 .. i* - 1`` and subject residues ``j0 .. j* - 1`` (0-based); ``score`` is
        ``H`` at the last cell.

    Raises:
        ResourceError: the direction bits do not fit in ``max_bytes``.
    """
    n, w = len(q), len(s_part)
    need = (n + 1) * (w + 1)
    if need > max_bytes:
        raise ResourceError(
            f"the traceback rectangle of a local hit ({n + 1} query rows x {w + 1} subject "
            f"columns of direction bits)",
            need,
            max_bytes,
            "raise the host memory budget (MemoryBudget(host_bytes=...)); a linear-space "
            "traceback is not implemented yet",
        )
    trace = np.empty((n + 1, w + 1), np.uint8)
    fptr = np.ascontiguousarray(forbid_ptr, np.int32)
    fcol = np.ascontiguousarray(forbid_col, np.int32)
    score = _rect_fill(
        np.ascontiguousarray(q, np.uint8),
        np.ascontiguousarray(s_part, np.uint8),
        int(i_first),
        int(j_first),
        np.ascontiguousarray(mat, np.int32),
        int(go),
        int(ge),
        fptr,
        fcol,
        trace,
    )
    ops = np.empty(n + w, np.uint8)
    k, i0, jj = _rect_trace(trace, ops)
    return ops[:k].copy(), int(i_first) - 1 + int(i0), int(j_first) - 1 + int(jj), int(score)
