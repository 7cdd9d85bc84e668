"""Row-vectorised versions of the fills in ``dp.py``: same results, SIMD-friendly loops.

The scalar recurrence carries a dependency from each cell to the next through E (gaps in a).
Rewritten per row i, with ``T[j] = max(diag, up)`` computed for the whole row first and the
row's opening and closing costs ``o[j]``, ``c[j]`` of gaps in a (facing column j)::

    E[j] = max(E[j-1] - ext, H[j-1] - o[j]),  H[j-1] = max(T[j-1], E[j-1] - c[j-1])

When ``c[j-1] + o[j] >= ext`` for every j the second term of H never beats extending, so
``E[j] = max_{k<j} (T'[k] - o[k+1] - (j-1-k) ext)`` with ``T'`` = T (clamped at 0 in local
mode, and H[i, 0] at k = 0): a running maximum of ``T'[k] - o[k+1] + k ext``, scanned as
four interleaved chains of one ``max`` each (:func:`prefix_max`). Every other step is
elementwise over the row and vectorises. Rows where the condition fails (or where
``m * ext`` could overflow int32) run the scalar row instead, so the result is always that of
``dp.fill_scalar``, bits included.
"""

from __future__ import annotations

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
from torchmsa.cpu.rules.facing import facing


@njit(cache=True, nogil=True, inline="always")
def _facing_at(cost, rb, j):
    """``cost`` facing column j of residue factors ``rb``; ``rb`` None: plain costs (pairwise
    DP), where the branch is settled at compile time and no multiply is left."""
    if rb is None:
        return cost
    return facing(cost, rb[j])


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
def prefix_max(u, e, m):
    """``e[k + 1] = max(NEG, u[0..k])`` for k < m.

    Four quarters of the row are scanned side by side, then each later quarter takes the
    maximum of those before it: four short dependency chains instead of one long one. A
    single running maximum waits on a compare per element, which the x86 back end turns into
    a branch that mispredicts on real scores: the fill took 2.6-4.1 ns per cell at 550 and
    1,000 columns, 1.9-2.3 with the chains (``benchmarks/results/colscores_cpu-c1388f0.md``
    against ``colscores_cpu-4bf7b59.md``).
    """
    q = m // 4
    r0 = r1 = r2 = r3 = np.int32(NEG)
    for k in range(q):
        r0 = max(r0, u[k])
        e[k + 1] = r0
        r1 = max(r1, u[q + k])
        e[q + k + 1] = r1
        r2 = max(r2, u[2 * q + k])
        e[2 * q + k + 1] = r2
        r3 = max(r3, u[3 * q + k])
        e[3 * q + k + 1] = r3
    for k in range(4 * q, m):
        r3 = max(r3, u[k])
        e[k + 1] = r3
    carry = r0
    for j in range(q + 1, 2 * q + 1):
        e[j] = max(e[j], carry)
    carry = max(carry, r1)
    for j in range(2 * q + 1, 3 * q + 1):
        e[j] = max(e[j], carry)
    carry = max(carry, r2)
    for j in range(3 * q + 1, m + 1):
        e[j] = max(e[j], carry)


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
def _row_e(t, e, u, h0, m, ext, o_i, c_i, rb, mode, scan_ok):
    """E of one row into ``e[1..m]`` from ``t`` (max of diagonal and up) and ``h0 = H[i, 0]``.

    The row's costs of gaps facing column j are ``o[j] = facing(o_i, rb[j])`` (opening) and
    ``c[j] = facing(c_i, rb[j])`` (closing), computed where they are used rather than stored
    per row (a pass that cost about a tenth of the fill); ``rb`` None: ``o_i`` and ``c_i``
    everywhere (pairwise DP); ``u``: scratch of ``m + 1``. A
    running maximum when ``scan_ok`` and ``c[j-1] + o[j] >= ext`` (module docstring), else
    the scalar chain through H.
    """
    zero = np.int32(0)
    if scan_ok and ext > 0:
        short = 0
        for j in range(2, m + 1):
            short |= _facing_at(c_i, rb, j - 1) + _facing_at(o_i, rb, j) < ext
        scan_ok = short == 0
    if scan_ok:
        # u[k]: what enters the running maximum at column k + 1 (k = 0: H[i, 0])
        if m > 0:
            u[0] = h0 - _facing_at(o_i, rb, 1)
        for k in range(1, m):
            tk = t[k]
            if mode == LOCAL:
                tk = max(tk, zero)
            u[k] = tk - _facing_at(o_i, rb, k + 1) + k * ext
        prefix_max(u, e, m)
        for j in range(1, m + 1):
            e[j] = e[j] - (j - 1) * ext
    else:
        ev = np.int32(NEG)
        hl = h0
        for j in range(1, m + 1):
            ev = max(ev - ext, hl - _facing_at(o_i, rb, j))
            e[j] = ev
            hl = max(t[j], ev - _facing_at(c_i, rb, j))
            if mode == LOCAL:
                hl = max(hl, zero)


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
def fill_rows(n, m, S, open_a, close_a, open_b, close_b, res_a, res_b, ext, mode, trace):
    """As ``dp.fill_scalar``: direction bits into ``trace [n+1, m+1]``, returns (score, i, j)."""
    hp = np.empty(m + 1, np.int32)
    f = np.full(m + 1, NEG, np.int32)
    first_row(hp, m, open_a, close_a, res_b, ext, mode)
    best, bi, bj = NEG, 0, 0
    if mode == LOCAL:
        best = 0
    costs = (open_a, close_a, open_b, close_b, res_a, res_b)
    best, bi, bj = fill_block(1, n, m, S, 0, costs, ext, mode, hp, f, trace, 0, True, best, bi, bj)
    return last_row_end(hp, n, m, mode, best, bi, bj)


@njit(cache=True, nogil=True, inline="always")
def last_row_end(hp, n, m, mode, best, bi, bj):
    """``(score, end_i, end_j)`` once ``hp`` holds row ``n``: the corner in global mode, the
    first maximum of the last column (``best`` so far) then of the last row in semiglobal
    mode, ``best`` itself in local mode."""
    if mode == GLOBAL:
        best, bi, bj = hp[m], n, m
    elif mode == SEMIGLOBAL:
        for j in range(m + 1):
            if hp[j] > best:
                best, bi, bj = hp[j], n, j
    return np.int64(best), np.int64(bi), np.int64(bj)


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False, inline="always")
def first_row(hp, m, open_a, close_a, res_b, ext, mode):
    """Row 0 of H into ``hp[0 .. m]`` (the boundary of ``dp.fill_scalar``)."""
    hp[0] = 0
    for j in range(1, m + 1):
        if mode == GLOBAL:
            lead = facing(open_a[0], res_b[1]) + facing(close_a[0], res_b[j])
            hp[j] = -(lead + (j - 1) * ext)
        else:
            hp[j] = 0


# inlined where it is called (numba IR): compiled once inside each caller rather than on its own
# and again by LLVM's inliner (a second of every first align)
@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False, inline="always")
def fill_block(i_lo, i_hi, m, S, s0, costs, ext, mode, hp, f, trace, t0, keep, best, bi, bj):
    """Rows ``i_lo .. i_hi`` of :func:`fill_rows`, columns ``0 .. m``, from row ``i_lo - 1``.

    ``hp``, ``f``: H and F of row ``i_lo - 1`` (``int32 [>= m + 1]``), left holding row
    ``i_hi``'s. Row i reads the scores ``S[i - 1 - s0]`` and, when ``keep``, writes its
    direction bits to ``trace[i - t0]``. ``costs``: ``(open_a, close_a, open_b, close_b,
    res_a, res_b)``. ``best, bi, bj``: the local or semiglobal maximum so far, returned
    updated (``fill_rows``' rules). Columns past ``m`` are not read: the first ``m`` columns
    of a row depend on nothing to their right, so a prefix of the columns gives the same
    cells (the linear-space traceback's recomputations).
    """
    open_a, close_a, open_b, close_b, res_a, res_b = costs
    hn = np.empty(m + 1, np.int32)
    t = np.empty(m + 1, np.int32)
    e = np.empty(m + 1, np.int32)
    u = np.empty(m + 1, np.int32)
    bits = np.empty(m + 1, np.uint8)
    # gaps in b face a's row i: each row scales these by res_a[i] where they are used. Loops,
    # not slices and astype: a slice's shape checks compile error paths (seconds of a first
    # align).
    rb = np.empty(m + 1, np.int32)
    ob = np.empty(m + 1, np.int32)
    cb = np.empty(m + 1, np.int32)
    for j in range(m + 1):
        rb[j] = res_b[j]
        ob[j] = open_b[j]
        cb[j] = close_b[j]
    ext = np.int32(ext)
    zero = np.int32(0)
    scan_ok = m * int(ext) < SCAN_LIMIT
    cur, nxt = hp, hn
    for i in range(i_lo, i_hi + 1):
        if mode == SEMIGLOBAL and cur[m] > best:
            best, bi, bj = cur[m], i - 1, m
        srow = S[i - 1 - s0]
        ra = np.int32(res_a[i])
        o_i = np.int32(open_a[i])
        c_i = np.int32(close_a[i])
        h0 = zero
        if mode == GLOBAL:
            h0 = np.int32(-(facing(open_b[0], res_a[1]) + facing(close_b[0], ra) + (i - 1) * ext))
        # F and T = max(diag, up), elementwise.
        for j in range(1, m + 1):
            f_ext = f[j] - ext
            f_open = cur[j] - facing(ob[j], ra)
            fv = max(f_ext, f_open)
            f[j] = fv
            d = cur[j - 1] + srow[j - 1]
            fc = fv - facing(cb[j], ra)
            up = fc > d
            t[j] = fc if up else d
            bits[j] = (F_EXT if f_ext >= f_open else 0) | (H_UP if up else 0)
        nxt[0] = h0
        _row_e(t, e, u, h0, m, ext, o_i, c_i, rb, mode, scan_ok)
        rowmax = np.int32(NEG)
        for j in range(1, m + 1):
            ec = e[j] - facing(c_i, rb[j])
            tj = t[j]
            left = ec > tj
            h = ec if left else tj
            b = bits[j]
            if left:
                b = (b & 12) | H_LEFT
            if mode == LOCAL:
                stop = h <= 0
                h = zero if stop else h
                b = (b | H_STOP) if stop else b
            nxt[j] = h
            bits[j] = b
            rowmax = max(rowmax, h)
        if keep:
            e[0] = NEG
            row = trace[i - t0]
            for j in range(1, m + 1):
                e_ext = e[j - 1] - ext
                e_open = nxt[j - 1] - facing(o_i, rb[j])
                row[j] = bits[j] | (E_EXT if e_ext >= e_open else 0)
        if mode == LOCAL and rowmax > best:
            for j in range(1, m + 1):
                if nxt[j] == rowmax:
                    best, bi, bj = rowmax, i, j
                    break
        cur, nxt = nxt, cur
    if (i_hi - i_lo + 1) % 2 == 1 and i_hi >= i_lo:  # the last row is in hn
        for j in range(m + 1):
            hp[j] = hn[j]
    return best, bi, bj


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
def pair_score_rows(a, n, b, m, mat, go, ge, mode):
    """As ``dp.pair_score_scalar`` (score, end_i, end_j), row-vectorised with a query profile."""
    n_codes = mat.shape[0]
    qp = np.empty((n_codes, m + 1), np.int32)
    for c in range(n_codes):
        for j in range(m):
            qp[c, j] = mat[c, b[j]]
    go = np.int32(go)
    ge = np.int32(ge)
    zero = np.int32(0)
    hp = np.empty(m + 1, np.int32)
    hn = np.empty(m + 1, np.int32)
    f = np.full(m + 1, NEG, np.int32)
    t = np.empty(m + 1, np.int32)
    e = np.empty(m + 1, np.int32)
    u = np.empty(m + 1, np.int32)
    hp[0] = 0
    for j in range(1, m + 1):
        hp[j] = -(go + (j - 1) * ge) if mode == GLOBAL else 0
    best, bi, bj = NEG, 0, 0
    if mode == LOCAL:
        best = 0
    scan_ok = m * int(ge) < SCAN_LIMIT
    for i in range(1, n + 1):
        if mode == SEMIGLOBAL and hp[m] > best:
            best, bi, bj = hp[m], i - 1, m
        row = qp[a[i - 1]]
        h0 = np.int32(-(go + (i - 1) * ge)) if mode == GLOBAL else zero
        for j in range(1, m + 1):
            fv = max(f[j] - ge, hp[j] - go)
            f[j] = fv
            t[j] = max(hp[j - 1] + row[j - 1], fv)
        _row_e(t, e, u, h0, m, ge, go, zero, None, mode, scan_ok)
        rowmax = np.int32(NEG)
        for j in range(1, m + 1):
            h = max(t[j], e[j])
            if mode == LOCAL:
                h = max(h, zero)
            hn[j] = h
            rowmax = max(rowmax, h)
        hn[0] = h0
        if mode == LOCAL and rowmax > best:
            for j in range(1, m + 1):
                if hn[j] == rowmax:
                    best, bi, bj = rowmax, i, j
                    break
        hp, hn = hn, hp
    return last_row_end(hp, n, m, mode, best, bi, bj)
