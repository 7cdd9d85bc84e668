"""Score-only local alignment of a short ``a`` against a long ``b``: Farrar's striped layout.

``a`` (length n) is cut into ``L`` stripes of ``seg = ceil(n / L)`` residues; lane l of
segment s holds residue ``p = l * seg + s``, so one pass over the segments updates a whole column
of ``b`` with ``L``-wide operations that carry F (gaps in b, down the column) only from
segment s to s + 1 inside each lane. F crossing from lane l to l + 1 is added afterwards by the
lazy-F loop, which stops as soon as extending a gap can no longer beat opening one
(``F - ext <= H_old - open``): exact when ``open >= ext`` (:func:`fits`). E (gaps in a) comes
from the previous column elementwise. Residues past n score ``NEG`` (their H is never read).

numba does not run LLVM's SLP vectoriser, and a lane loop over several arrays is vectorised
only behind run-time alias checks, with the carried vectors (diagonal H, F, column maximum)
spilled to small arrays. So everything a segment touches lives in one workspace, row s
holding the fields ``[D, H, E, F, M]`` of ``L`` lanes each: every address in the lane loop is
the same base plus a constant, which LLVM proves disjoint, and the carried vectors go to row
s + 1. Indices are ``uint64`` so numba emits no negative-index wrap-around; sums are cast back
to the lane type so the vectors stay narrow (numba widens ``int32 + int32`` to int64).

Scores run in int16 lanes (32 per 512-bit vector) while the column maximum stays below
``LIMIT16``, whose margin keeps the next column from wrapping; past it, or when the costs or
lengths could wrap int16 (:func:`fits16`), the pair is run again in int32 lanes.

The end cell follows ``dp.py``'s rule (first maximum in row-major order): the column maximum
(taken before the lazy F, which never raises it) is compared with the best so far; a column
that reaches or beats it is scanned for its smallest row with that value, and a tie keeps the
earlier column unless the row is smaller.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from torchmsa.constants import NEG, SCAN_LIMIT

_R = 5  # fields per workspace row: H of even columns, H of odd ones, E, incoming F, running max
_HA, _HB, _E, _F, _M = 0, 1, 2, 3, 4
NEG16 = -(1 << 13)
LIMIT16 = 32000
WIDE16 = 512  # from this length of a, int16 lanes go 32 wide (16 below: shorter segments)


@njit(cache=True, nogil=True)
def fits(n, mat_max, go, ge):
    """Whether :func:`local_score_striped` is exact for these costs and length (int32 room)."""
    return go >= ge >= 0 and (n + 64) * ge + go < SCAN_LIMIT and (n + 1) * mat_max < SCAN_LIMIT


@njit(cache=True, nogil=True)
def fits16(n, mat_max, go, ge):
    """Whether the int16 lanes cannot wrap except through the score, which is checked.

    A lane's F falls by at most ``(n + 64) * ge`` below ``NEG16`` in one column's lazy loop,
    and ``go < -NEG16`` keeps a lane holding ``NEG16`` from counting as "extending beats
    opening" (which would never stop when ``ge`` is 0); H stays below ``LIMIT16 + mat_max``.
    """
    return go >= ge >= 0 and (n + 64) * ge + go < 8000 and mat_max < 700


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False, inline="always")
def _striped(a, n, b, m, mat, go, ge, zero, neg, limit, L):
    """``(ok, score, end_i, end_j)`` in lanes of ``type(zero)``; ok False: a column maximum
    passed ``limit``."""
    dt = type(zero)
    RL = _R * L
    seg = max(1, (n + L - 1) // L)
    w = seg * L
    prof = np.empty(mat.shape[0] * w, dt)  # [A, seg, L]
    for c in range(mat.shape[0]):
        for s in range(seg):
            for lane in range(L):
                p = lane * seg + s
                prof[c * w + s * L + lane] = mat[a[p], c] if p < n else neg
    ws = np.zeros((seg + 2) * RL, dt)  # [seg + 2, _R, L]: segment s in row s + 1
    for s in range(1, seg + 1):
        for lane in range(L):
            ws[s * RL + _E * L + lane] = neg
    best, bi, bj = 0, 0, 0
    for j in range(1, m + 1):
        pb = np.int64(b[j - 1]) * w
        if j & 1:
            cm = _column(ws, prof, pb, seg, dt(go), dt(ge), zero, neg, L, _HB, _HA)
        else:
            cm = _column(ws, prof, pb, seg, dt(go), dt(ge), zero, neg, L, _HA, _HB)
        if cm > limit:
            return False, 0, 0, 0
        if cm > 0 and cm >= best:
            cur = _HA if j & 1 else _HB
            for p in range(n):
                if ws[(p % seg + 1) * RL + cur * L + p // seg] == cm:
                    if cm > best or p + 1 < bi:
                        best, bi, bj = cm, p + 1, j
                    break
    return True, best, bi, bj


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False, inline="always")
def _column(ws, prof, pb, seg, go, ge, zero, neg, L, P, C):
    """One column of b: H from field ``P`` (previous column) to field ``C``; returns the
    column maximum. ``P`` and ``C`` are constants in each inlined copy, so that every address
    of the lane loops is the row's base plus a constant."""
    dt = type(zero)
    RL = _R * L
    fin = (seg + 1) * RL
    ws[P * L] = zero  # row 0: the diagonal of segment 0, lane l - 1's last H
    for lane in range(1, L):
        ws[P * L + lane] = ws[seg * RL + P * L + lane - 1]
    for lane in range(L):
        ws[RL + _F * L + lane] = neg
        ws[RL + _M * L + lane] = zero
    for s in range(seg):
        o = (s + 1) * RL
        po = pb + s * L
        for lane in range(L):
            d = ws[np.uint64(o - RL + P * L + lane)]
            ev = ws[np.uint64(o + _E * L + lane)]
            fv = ws[np.uint64(o + _F * L + lane)]
            mv = ws[np.uint64(o + _M * L + lane)]
            h = max(max(max(dt(d + prof[np.uint64(po + lane)]), ev), fv), zero)
            ws[np.uint64(o + C * L + lane)] = h
            g = dt(h - go)
            ws[np.uint64(o + _E * L + lane)] = max(dt(ev - ge), g)
            ws[np.uint64(o + RL + _F * L + lane)] = max(dt(fv - ge), g)
            ws[np.uint64(o + RL + _M * L + lane)] = max(mv, h)
    cm = zero
    for lane in range(L):
        cm = max(cm, ws[fin + _M * L + lane])
    # lazy F: lane l - 1's outgoing F enters lane l at segment 0 until extending no longer
    # beats H_old - go in any lane
    _shift_f(ws, fin, neg, L)
    s = 0
    while True:
        o = (s + 1) * RL
        more = np.int32(-1)
        for lane in range(L):
            fv = ws[np.uint64(fin + _F * L + lane)]
            hold = ws[np.uint64(o + C * L + lane)]
            h = max(hold, fv)
            ws[np.uint64(o + C * L + lane)] = h
            e_at = np.uint64(o + _E * L + lane)
            ws[e_at] = max(ws[e_at], dt(h - go))
            fv = dt(fv - ge)
            ws[np.uint64(fin + _F * L + lane)] = fv
            more = max(more, np.int32(np.int32(fv) + np.int32(go) - np.int32(hold)))
        if more <= 0:
            return cm
        s += 1
        if s == seg:
            s = 0
            _shift_f(ws, fin, neg, L)


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False, inline="always")
def _shift_f(ws, fin, neg, L):
    """Lane l - 1's outgoing F becomes lane l's incoming one (lane 0: none)."""
    for lane in range(L - 1, 0, -1):
        ws[fin + _F * L + lane] = ws[fin + _F * L + lane - 1]
    ws[fin + _F * L] = neg


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
def _striped16x16(a, n, b, m, mat, go, ge):
    return _striped(a, n, b, m, mat, go, ge, np.int16(0), np.int16(NEG16), LIMIT16, 16)


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
def _striped16x32(a, n, b, m, mat, go, ge):
    return _striped(a, n, b, m, mat, go, ge, np.int16(0), np.int16(NEG16), LIMIT16, 32)


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
def _striped32x16(a, n, b, m, mat, go, ge):
    return _striped(a, n, b, m, mat, go, ge, np.int32(0), np.int32(NEG), SCAN_LIMIT, 16)


@njit(cache=True, nogil=True)
def local_score_striped(a, n, b, m, mat, go, ge, mat_max):
    """As ``dp.pair_score_scalar`` in LOCAL mode: ``(score, end_i, end_j)``.

    Needs :func:`fits`; ``mat_max`` is the largest ``abs`` entry of ``mat``.
    """
    if fits16(n, mat_max, go, ge):
        if n >= WIDE16:
            ok, s, i, j = _striped16x32(a, n, b, m, mat, go, ge)
        else:
            ok, s, i, j = _striped16x16(a, n, b, m, mat, go, ge)
        if ok:
            return np.int64(s), np.int64(i), np.int64(j)
    ok, s, i, j = _striped32x16(a, n, b, m, mat, go, ge)
    return np.int64(s), np.int64(i), np.int64(j)
