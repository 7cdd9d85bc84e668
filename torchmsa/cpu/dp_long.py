"""Score-only local alignment of a short ``a`` against a long ``b``: Farrar's striped layout.

``a`` (length n) is cut into ``L`` stripes of ``seg = ceil(n / L)`` residues; lane l of
segment s holds residue ``p = l * seg + s``, so one pass over the segments updates a whole column
of ``b`` with ``L``-wide operations that carry F (gaps in b, down the column) only from
segment s to s + 1 inside each lane. E (gaps in a) comes from the previous column elementwise.
Residues past n score the lane type's ``neg`` (their H never passes the real rows' maximum,
and only real rows are scanned for the end cell).

**Lane vectors.** The lanes are LLVM vector values (``<L x i16>`` or ``<L x i32>``) made and
combined by the small numba intrinsics of :mod:`torchmsa.cpu.vec` (``vload``, ``vmax``,
``vshift_in``, ...), so the diagonal H, F and the column maximum stay in registers from
segment to segment: the segment loop compiles to about ten vector instructions and five
memory accesses per segment, with no alias checks and no store-to-load chain (the lane loops
of plain numba code were vectorised only over a workspace, the carried vectors going through
memory). int16 lanes run 16 wide (a ymm register) below ``WIDE16`` residues and 32 wide (zmm)
from there; the int32 fallback runs 16 wide. The profile (``[A, seg, L]``), H of the previous
and of this column, E and the main loop's F sit in one buffer that starts on a 64-byte line.

**Lazy F.** F crossing from lane l to l + 1 is added after the main loop: lane l - 1's outgoing
F enters lane l at segment 0 and goes down while, in some lane, the extended F beats both the
F the main loop used at the next segment (kept per segment) and 0. Past that it changes
nothing: a smaller F was already outdone there and decays as fast, and an F <= 0 never raises a
local H (which is at least 0). Exact when ``open >= ext`` (:func:`fits`), since then a gap in b
seen from an H that F raised is never better than extending F. Where F raises H, E into the next
column is raised too (``H - open``).

Scores run in int16 lanes while the column maximum stays below ``LIMIT16``, whose margin keeps
the next column from wrapping; past it, or when the costs or lengths could wrap int16
(:func:`fits16`), the pair is run again in int32 lanes.

**End cell.** ``dp.py``'s rule (first maximum in row-major order): a column is looked at only
when its maximum (taken before the lazy F, which never raises it) reaches ``max(best, 1)``, one
vector compare; then its smallest row holding that maximum is found (lane-major order is row
order), and a tie keeps the earlier column unless the row is smaller.

Measured in decision 0054 (about 3x the plain-numba striped kernel on one core).
"""

from __future__ import annotations

import numpy as np
from numba import njit, types

from torchmsa.constants import NEG, SCAN_LIMIT
from torchmsa.cpu.vec import lane_count as _count
from torchmsa.cpu.vec import lanes as _proto
from torchmsa.cpu.vec import vadd, vany_gt, vhmax, vload, vmax, vshift_in, vsplat, vstore, vsub

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


# ---- lane vectors (torchmsa.cpu.vec): LLVM vector values, kept in registers ----------------

_p16x16 = _proto(types.int16, 16)
_p16x32 = _proto(types.int16, 32)
_p32x16 = _proto(types.int32, 16)


# ---- the kernel ------------------------------------------------------------------------------


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False, inline="always")
def _striped(a, n, b, m, mat, go, ge, zero, neg, limit, p):
    """``(ok, score, end_i, end_j)`` in lanes of ``type(zero)``, as many as ``p`` (a vector)
    has; ok False: a column maximum passed ``limit``."""
    dt = type(zero)
    L = _count(p)
    seg = max(1, (n + L - 1) // L)
    w = seg * L
    # one buffer from a 64-byte line (each part then starts on a whole vector): the [A, seg, L]
    # profile, H of two columns ([2, seg, L]: the previous one and this one), E into the next
    # column ([seg, L]) and the main loop's F into segment s + 1 ([seg + 1, L], row 0 unused)
    buf = np.empty((mat.shape[0] + 4) * w + L + 64, dt)
    base = ((-buf.ctypes.data) % 64) // buf.itemsize
    for c in range(mat.shape[0]):
        for s in range(seg):
            for lane in range(L):
                q = lane * seg + s
                buf[base + c * w + s * L + lane] = mat[a[q], c] if q < n else neg
    hbase = base + mat.shape[0] * w
    buf[hbase : hbase + 2 * w] = zero
    ebase = hbase + 2 * w
    buf[ebase : ebase + w] = neg
    fbase = ebase + w
    vzero, vneg = vsplat(zero, p), vsplat(neg, p)
    vgo, vge = vsplat(go, p), vsplat(ge, p)
    best, bi, bj = 0, 0, 0
    vthr = vsplat(zero, p)  # a column reaching vthr + 1 = max(best, 1) is looked at
    hp, hc = hbase, hbase + w  # offsets of the previous column's H and this one's
    last = w - L
    for j in range(1, m + 1):
        pb = base + np.int64(b[j - 1]) * w
        vh = vshift_in(vload(buf, hp + last, p), zero)  # diagonal of segment 0
        vf = vneg
        vm = vzero
        for s in range(seg):
            o = s * L
            ve = vload(buf, ebase + o, p)
            vh = vmax(vmax(vmax(vadd(vh, vload(buf, pb + o, p)), ve), vf), vzero)
            vm = vmax(vm, vh)
            vstore(buf, hc + o, vh)
            g = vsub(vh, vgo)
            vstore(buf, ebase + o, vmax(vsub(ve, vge), g))
            vf = vmax(vsub(vf, vge), g)
            vstore(buf, fbase + o + L, vf)
            vh = vload(buf, hp + o, p)  # the next segment's diagonal
        # lazy F: lane l - 1's outgoing F enters lane l at segment 0, and goes on down while,
        # in some lane, it beats both 0 and the F the main loop used at the next segment
        vf = vshift_in(vf, neg)
        s = 0
        while True:
            o = s * L
            hold = vload(buf, hc + o, p)
            h = vmax(hold, vf)
            vstore(buf, hc + o, h)
            vstore(buf, ebase + o, vmax(vload(buf, ebase + o, p), vsub(h, vgo)))
            vf = vsub(vf, vge)
            if not vany_gt(vf, vmax(vload(buf, fbase + o + L, p), vzero)):
                break
            s += 1
            if s == seg:
                s = 0
                vf = vshift_in(vf, neg)
        if vany_gt(vm, vthr):
            cm = vhmax(vm)
            if cm > limit:
                return False, 0, 0, 0
            row = _first_row(buf, hc, cm, n, seg, L)
            if cm > best or row < bi:
                best, bi, bj = cm, row, j
                vthr = vsplat(best - 1, p)
        hp, hc = hc, hp
    return True, best, bi, bj


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False, inline="always")
def _first_row(buf, hc, cm, n, seg, L):
    """The 1-based row of the first cell holding ``cm`` in the column at ``hc`` (row q is lane
    ``q // seg``, segment ``q % seg``, so lane-major order is row order)."""
    for lane in range(L):
        for s in range(seg):
            q = lane * seg + s
            if q >= n:
                return n + 1
            if buf[hc + s * L + lane] == cm:
                return q + 1
    return n + 1


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
def _striped16x16(a, n, b, m, mat, go, ge):
    return _striped(a, n, b, m, mat, go, ge, np.int16(0), np.int16(NEG16), LIMIT16, _p16x16())


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
def _striped16x32(a, n, b, m, mat, go, ge):
    return _striped(a, n, b, m, mat, go, ge, np.int16(0), np.int16(NEG16), LIMIT16, _p16x32())


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
def _striped32x16(a, n, b, m, mat, go, ge):
    return _striped(a, n, b, m, mat, go, ge, np.int32(0), np.int32(NEG), SCAN_LIMIT, _p32x16())


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
