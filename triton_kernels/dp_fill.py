"""Forward pass of the affine DP on the GPU: a wavefront of row strips, the twin of the CPU fill
(``cpu/dp.py``'s ``fill_scalar``, ``cpu/dp_rows.py``'s ``fill_rows``).

One kernel serves pairwise and profile-profile alignment, score-only and traceback, every mode.
A program takes ``PB`` pairs and gives each pair ``Q`` lanes, a block ``[PB, Q]``. Lane ``q``
holds a strip of ``R`` consecutive DP rows in registers (``R``-tuples of ``[PB, Q]`` values) and
sweeps the columns one per step, one step behind lane ``q - 1``: at step ``t`` it computes
column ``j = t - q + 1`` of its rows. The only traffic between lanes is the bottom row of each
strip (H and F of one cell per step), moved one lane down with a warp shuffle (``tl.gather``).
A pass covers ``Q * R`` rows; between passes the bottom row of the last lane goes through a
per-pair horizontal buffer in global memory (``m`` cells of H and F), so a pair of any length
runs in ``O(m)`` memory besides the optional direction bits.

Steps ``t < Q - 1`` and ``t >= min(m)`` have idle lanes (before their first column or past
their last) and run masked: an idle lane keeps its state, so after a pass every lane holds
``H[i, m]`` of its rows and the best cells of its rows. The steps in between run unmasked.

Direction bits (``TRACE``): the 4-bit code of ``cpu/dp.py`` (H source in bits 0-1, ``E_EXT``,
``F_EXT``) of 8 rows packed in an ``int32`` word, ``NW = cdiv(R, 8)`` words per strip and
column: the word of cell ``(i, j)``, ``i, j >= 1``, is
``tr[tr_off + ((i - 1) // R * m + j - 1) * NW + (i - 1) % R // 8]``.

Scores: pairwise alignment reads a query profile (``dp_query.py``) whose ``int32`` words pack
``32 // EB`` consecutive rows of ``matrix[a[i], b] + gap_open``, and keeps ``G = H - gap_open``
in its lanes (one subtraction per cell serves both gap openings); profile alignment reads the
packed ``int32`` column-score matrices and keeps H.

Best cells (local, and row ``n`` in semiglobal mode) are tracked per row; with ``PACKED`` as
one key ``h * 2**14 - j`` whose maximum is the first maximum (the launcher checks that
``|H| < 2**17`` and ``m < 2**14``), else as a value and a column.
"""

from __future__ import annotations

import triton
import triton.language as tl

from torchmsa import constants

# the kernels' copies of the shared values (torchmsa/constants.py)
GLOBAL: tl.constexpr = tl.constexpr(constants.GLOBAL)
LOCAL: tl.constexpr = tl.constexpr(constants.LOCAL)
SEMIGLOBAL: tl.constexpr = tl.constexpr(constants.SEMIGLOBAL)
NEG: tl.constexpr = tl.constexpr(constants.NEG)
BIG: tl.constexpr = tl.constexpr(constants.BIG)
H_UP: tl.constexpr = tl.constexpr(constants.H_UP)
H_LEFT: tl.constexpr = tl.constexpr(constants.H_LEFT)
H_STOP: tl.constexpr = tl.constexpr(constants.H_STOP)
E_EXT: tl.constexpr = tl.constexpr(constants.E_EXT)
F_EXT: tl.constexpr = tl.constexpr(constants.F_EXT)
# packed best-cell keys h * KEY - j: max picks the larger h, then the smaller j
KEY_BITS: tl.constexpr = tl.constexpr(constants.KEY_BITS)
KEY: tl.constexpr = tl.constexpr(1 << constants.KEY_BITS)
RES_SHIFT: tl.constexpr = tl.constexpr(constants.RES_SHIFT)  # cpu/dp_rows.py: facing


@triton.jit
def _facing(cost, res):
    """A gap cost scaled by the residue factor of the column it faces (``cpu/dp_rows.facing``)."""
    return (cost * res) >> RES_SHIFT


@triton.jit
def _boundary(i, first_open, last_close, ext, MODE: tl.constexpr):
    """H on row 0 or column 0 at distance ``i`` from the corner (0 at the corner).

    ``first_open`` and ``last_close`` are the costs as the gap's first and i-th columns face
    them (profiles: scaled by those columns' residue factors).
    """
    if MODE == GLOBAL:
        return tl.where(i > 0, -(first_open + (i - 1) * ext + last_close), 0)
    else:
        return i * 0


@triton.jit
def _scores(
    sc_ptr,
    s_base,
    b_ptr,
    b_base,
    r0,
    j,
    n_p,
    m_p,
    act,
    WPR,
    A,
    R: tl.constexpr,
    EB: tl.constexpr,
    PROFILE: tl.constexpr,
    MASKED: tl.constexpr,
):
    """The ``R`` scores ``S[r0 + k, j - 1]`` of a lane's strip at column ``j``: a tuple."""
    out = ()
    if PROFILE:
        col_ok = act & (j >= 1) & (j <= m_p)
        for k in tl.static_range(R):
            m_k = col_ok & (r0 + k < n_p)
            off = s_base + (r0 + k).to(tl.int64) * m_p + (j - 1)
            out = out + (tl.load(sc_ptr + off, mask=m_k, other=0),)
    else:
        PER: tl.constexpr = 32 // EB
        if MASKED:
            b = tl.load(b_ptr + b_base + (j - 1), mask=act, other=0).to(tl.int32)
        else:
            b = tl.load(b_ptr + b_base + (j - 1)).to(tl.int32)
        row = s_base + tl.minimum(b, A - 1).to(tl.int64) * WPR
        for w in tl.static_range(R // PER):
            word = tl.load(sc_ptr + row + (r0 // PER + w))
            for k in tl.static_range(PER):
                if EB == 32:
                    out = out + (word,)
                else:
                    out = out + ((word << (32 - EB * (k + 1))) >> (32 - EB),)
    return out


@triton.jit
def _step(
    hl,
    ee,
    bs,
    bj,
    diag,
    out_h,
    out_f,
    sc,
    oa,
    ca,
    ra,
    ob,
    cb,
    rb,
    up_h,
    up_f,
    ext,
    j,
    act,
    R: tl.constexpr,
    MODE: tl.constexpr,
    PROFILE: tl.constexpr,
    TRACE: tl.constexpr,
    PACKED: tl.constexpr,
    MASKED: tl.constexpr,
):
    """One column of a lane's strip: new ``(hl, ee, bs, bj, diag, out_h, out_f, words)``.

    Pairwise runs keep ``G = H - gap_open`` in ``hl``, ``diag``, ``up_h`` (and the scores
    include ``+ gap_open``): both gap openings then read G as it is and each cell pays one
    subtraction instead of two. Profile runs keep H (their opening costs vary): row k's costs
    ``oa[k]``, ``ca[k]`` scaled by column j's residue factor ``rb``, column j's ``ob``, ``cb``
    by row k's ``ra[k]``.
    """
    d = diag
    hu = up_h
    fu = up_f
    n_hl = ()
    n_ee = ()
    n_bs = ()
    n_bj = ()
    words = ()
    word = j * 0
    for k in tl.static_range(R):
        e_ext = ee[k] - ext
        f_ext = fu - ext
        if PROFILE:
            e_open = hl[k] - _facing(oa[k], rb)
            f_open = hu - _facing(ob, ra[k])
        else:
            e_open = hl[k]
            f_open = hu
        e = tl.maximum(e_ext, e_open)
        f = tl.maximum(f_ext, f_open)
        if PROFILE:
            fc = f - _facing(cb, ra[k])
            ec = e - _facing(ca[k], rb)
        else:
            fc = f
            ec = e
        h = d + sc[k]
        if TRACE:
            src = tl.where(fc > h, H_UP, 0)
            h = tl.maximum(h, fc)
            src = tl.where(ec > h, H_LEFT, src)
            h = tl.maximum(h, ec)
            if MODE == LOCAL:
                src = tl.where(h <= 0, H_STOP, src)
                h = tl.maximum(h, 0)
            nib = src | tl.where(e_ext >= e_open, E_EXT, 0) | tl.where(f_ext >= f_open, F_EXT, 0)
            word = word | (nib << (4 * (k % 8)))
            if k % 8 == 7 or k == R - 1:
                words = words + (word,)
                word = j * 0
        else:
            h = tl.maximum(tl.maximum(h, fc), ec)
            if MODE == LOCAL:
                h = tl.maximum(h, 0)
        if MODE != GLOBAL:
            if PACKED:
                key = h * KEY - j
                if MASKED:
                    key = tl.where(act, key, bs[k])
                n_bs = n_bs + (tl.maximum(bs[k], key),)
            else:
                upd = h > bs[k]
                if MASKED:
                    upd = upd & act
                n_bs = n_bs + (tl.where(upd, h, bs[k]),)
                n_bj = n_bj + (tl.where(upd, j, bj[k]),)
        if not PROFILE:
            h = h - oa
        d = hl[k]
        if MASKED:
            n_hl = n_hl + (tl.where(act, h, hl[k]),)
            n_ee = n_ee + (tl.where(act, e, ee[k]),)
        else:
            n_hl = n_hl + (h,)
            n_ee = n_ee + (e,)
        hu = h
        fu = f
    if MODE == GLOBAL:
        n_bs = bs
    if MODE == GLOBAL or PACKED:
        n_bj = bj
    if MASKED:
        diag = tl.where(act, up_h, diag)
    else:
        diag = up_h
    return n_hl, n_ee, n_bs, n_bj, diag, hu, fu, words


@triton.jit
def _merge_rows(
    res, hl, bs, bj, r0, n_p, off, R: tl.constexpr, MODE: tl.constexpr, PACKED: tl.constexpr
):
    """Fold a finished strip into a lane's running results, rows in ascending order.

    ``res = (lb, li, lj, cv, ci, rv, rj, gs)``: the local best ``(value, i, j)``; the
    semiglobal best of the last column ``(value, i)`` and the best of row ``n`` ``(value, j)``;
    the global ``H[n, m]``. ``hl`` holds ``H[i, m] - off`` of the strip's rows.
    """
    lb, li, lj, cv, ci, rv, rj, gs = res
    for k in tl.static_range(R):
        i = r0 + 1 + k
        if PACKED:
            b_val = (bs[k] + (KEY - 1)) >> KEY_BITS
            b_col = b_val * KEY - bs[k]
        else:
            b_val = bs[k]
            b_col = bj[k]
        if MODE == LOCAL:
            upd = (i <= n_p) & (b_val > lb)
            lb = tl.where(upd, b_val, lb)
            li = tl.where(upd, i, li)
            lj = tl.where(upd, b_col, lj)
        elif MODE == SEMIGLOBAL:
            upd = (i < n_p) & (hl[k] + off > cv)
            cv = tl.where(upd, hl[k] + off, cv)
            ci = tl.where(upd, i, ci)
            rv = tl.where(i == n_p, b_val, rv)
            rj = tl.where(i == n_p, b_col, rj)
        else:
            gs = tl.where(i == n_p, hl[k] + off, gs)
    return lb, li, lj, cv, ci, rv, rj, gs


@triton.jit
def _finish(res, n_1, m_1, m_p, oa0, ca0_m, ext, MODE: tl.constexpr):
    """``(score, end_i, end_j)`` of each pair (``[PB]``) from its lanes' results (``[PB, Q]``).

    Ties go to the smallest row (rows belong to one lane each), then to the lane's column.
    """
    lb, li, lj, cv, ci, rv, rj, gs = res
    if MODE == LOCAL:
        score = tl.max(lb, axis=1)
        hit = lb == score[:, None]
        end_i = tl.min(tl.where(hit, li, BIG), axis=1)
        end_j = tl.max(tl.where(hit & (li == end_i[:, None]), lj, -1), axis=1)
    elif MODE == SEMIGLOBAL:
        c_best = tl.max(cv, axis=1)
        c_i = tl.min(tl.where(cv == c_best[:, None], ci, BIG), axis=1)
        r_best = tl.max(rv, axis=1)
        r_j = tl.max(tl.where(rv == r_best[:, None], rj, -1), axis=1)
        use_col = c_best >= r_best  # the last column's cells come first
        empty = n_1 == 0
        score = tl.where(empty, 0, tl.where(use_col, c_best, r_best))
        end_i = tl.where(empty, 0, tl.where(use_col, c_i, n_1))
        end_j = tl.where(empty, 0, tl.where(use_col, m_1, r_j))
    else:
        h_nm = tl.max(gs, axis=1)
        row0_m = tl.max(_boundary(m_p, oa0, ca0_m, ext, MODE), axis=1)
        score = tl.where(n_1 == 0, row0_m, h_nm)
        end_i = n_1
        end_j = m_1
    return score, end_i, end_j


# Scalar sizes and costs vary from launch to launch: specialising on them (== 1, % 16 == 0)
# would compile new variants mid-run.
@triton.jit(do_not_specialize=["b_stride", "gap_open", "ext", "P", "WPR", "A"])
def _dp_fill_kernel(
    sc_ptr,
    sc_off_ptr,
    b_ptr,
    b_stride,
    n_ptr,
    m_ptr,
    oa_ptr,
    ca_ptr,
    ra_ptr,
    a_off_ptr,
    ob_ptr,
    cb_ptr,
    rb_ptr,
    b_off_ptr,
    gap_open,
    ext,
    hb_h_ptr,
    hb_f_ptr,
    hb_off_ptr,
    tr_ptr,
    tr_off_ptr,
    order_ptr,
    out_ptr,
    P,
    WPR,
    A,
    MODE: tl.constexpr,
    PROFILE: tl.constexpr,
    TRACE: tl.constexpr,
    Q: tl.constexpr,
    R: tl.constexpr,
    PB: tl.constexpr,
    EB: tl.constexpr,
    PACKED: tl.constexpr,
):
    """Fill ``PB`` pairs; ``out int32 [P, 3]`` gets ``(score, end_i, end_j)`` of each."""
    NW: tl.constexpr = (R + 7) // 8
    pid = tl.program_id(0).to(tl.int64)
    o_slot = pid * PB + tl.arange(0, PB)
    m_slot = o_slot < P
    p = tl.load(order_ptr + o_slot, mask=m_slot, other=0).to(tl.int64)
    n_1 = tl.load(n_ptr + p, mask=m_slot, other=0)
    m_1 = tl.load(m_ptr + p, mask=m_slot, other=0)
    n_p = n_1[:, None]  # [PB, 1]
    m_p = m_1[:, None]
    q = tl.arange(0, Q)[None, :]  # [1, Q]
    zero = tl.zeros([PB, Q], tl.int32)
    src_lane = tl.maximum(q - 1, 0) + zero
    if PROFILE:
        s_base = tl.load(sc_off_ptr + p, mask=m_slot, other=0)[:, None]
    else:
        # the query profile is in slot order; a block's idle slots read slot 0's, not past it
        s_base = (tl.where(m_slot, o_slot, 0) * A * WPR)[:, None]
    if PROFILE:
        a_base = tl.load(a_off_ptr + p, mask=m_slot, other=0)[:, None]
        b_base = tl.load(b_off_ptr + p, mask=m_slot, other=0)[:, None]
        # boundary gaps: the opening faces column 1 / row 1, the closing the last one
        ra1 = tl.load(ra_ptr + a_base + 1, mask=m_slot[:, None] & (n_p > 0), other=0)
        rb1 = tl.load(rb_ptr + b_base + 1, mask=m_slot[:, None] & (m_p > 0), other=0)
        rb_m = tl.load(rb_ptr + b_base + m_p, mask=m_slot[:, None] & (m_p > 0), other=0)
        oa0 = _facing(tl.load(oa_ptr + a_base, mask=m_slot[:, None], other=0), rb1)
        ca0 = tl.load(ca_ptr + a_base, mask=m_slot[:, None], other=0)
        ca0_m = _facing(ca0, rb_m)
        ob0 = _facing(tl.load(ob_ptr + b_base, mask=m_slot[:, None], other=0), ra1)
        cb0 = tl.load(cb_ptr + b_base, mask=m_slot[:, None], other=0)
        off = 0
    else:
        b_base = p[:, None] * b_stride
        oa0 = gap_open
        ca0 = 0
        ca0_m = 0
        ob0 = gap_open
        cb0 = 0
        off = gap_open  # the lanes keep G = H - gap_open (see _step)
    hb_base = tl.load(hb_off_ptr + o_slot, mask=m_slot, other=0)[:, None]
    if TRACE:
        tr_base = tl.load(tr_off_ptr + o_slot, mask=m_slot, other=0)[:, None]
    m_max = tl.max(m_1, axis=0)
    m_min = tl.min(tl.where(m_slot, m_1, BIG), axis=0)
    n_pass = tl.max(tl.cdiv(n_1, Q * R), axis=0)
    steady_end = tl.maximum(m_min, Q - 1)

    res = (zero, zero, zero, zero, zero, zero + NEG, zero, zero + NEG)  # see _merge_rows
    for kp in range(0, n_pass):
        strip = kp * Q + q
        r0 = strip * R + zero  # interior row index (DP row r0 + 1) of the strip's first row
        if PROFILE:
            oa = ()
            ca = ()
            ra = ()
            for k in tl.static_range(R):
                row_ok = (r0 + 1 + k <= n_p) & m_slot[:, None]
                oa = oa + (tl.load(oa_ptr + a_base + r0 + 1 + k, mask=row_ok, other=0),)
                ca = ca + (tl.load(ca_ptr + a_base + r0 + 1 + k, mask=row_ok, other=0),)
                ra = ra + (tl.load(ra_ptr + a_base + r0 + 1 + k, mask=row_ok, other=0),)
            ra_top = tl.load(ra_ptr + a_base + r0, mask=(r0 <= n_p) & m_slot[:, None], other=0)
            diag = _boundary(r0, ob0, _facing(cb0, ra_top), ext, MODE)
        else:
            oa = gap_open
            ca = 0
            ra = 0
            diag = _boundary(r0, ob0, cb0, ext, MODE) - off
        hl = ()
        ee = ()
        bs = ()
        bj = ()
        for k in tl.static_range(R):
            if PROFILE:
                hl = hl + (_boundary(r0 + 1 + k, ob0, _facing(cb0, ra[k]), ext, MODE),)
            else:
                hl = hl + (_boundary(r0 + 1 + k, ob0, cb0, ext, MODE) - off,)
            ee = ee + (zero + NEG,)
            bs = bs + (zero,)
            bj = bj + (zero,)
        out_h = zero
        out_f = zero
        strip_ok = r0 < n_p
        first = kp == 0
        for phase in tl.static_range(3):
            if phase == 0:
                t_lo = 0
                t_hi = Q - 1
            elif phase == 1:
                t_lo = Q - 1
                t_hi = steady_end
            else:
                t_lo = steady_end
                t_hi = m_max + Q - 1
            for t in range(t_lo, t_hi):
                j = t - q + 1 + zero
                if phase != 1:
                    act = (j >= 1) & (j <= m_p)
                else:
                    act = j >= 0
                # the row above the strip at column j: lane q - 1's last row, or for lane 0
                # row 0 (first pass) or the horizontal buffer
                g_h = tl.gather(out_h, src_lane, 1)
                g_f = tl.gather(out_f, src_lane, 1)
                lane0 = q == 0
                m_hb = lane0 & act & (kp > 0) & strip_ok  # a pair past its rows has no buffer
                hb_h = tl.load(hb_h_ptr + hb_base + (j - 1), mask=m_hb, other=0)
                hb_f = tl.load(hb_f_ptr + hb_base + (j - 1), mask=m_hb, other=0)
                if PROFILE:
                    m_col = act & (j <= m_p)
                    ob = tl.load(ob_ptr + b_base + j, mask=m_col, other=0)
                    cb = tl.load(cb_ptr + b_base + j, mask=m_col, other=0)
                    rb = tl.load(rb_ptr + b_base + j, mask=m_col, other=0)
                    row0 = _boundary(j, oa0, _facing(ca0, rb), ext, MODE)
                else:
                    ob = gap_open
                    cb = 0
                    rb = 0
                    row0 = _boundary(j, oa0, ca0, ext, MODE) - off
                up_h = tl.where(lane0, tl.where(first, row0, hb_h), g_h)
                up_f = tl.where(lane0, tl.where(first, NEG, hb_f), g_f)
                sc = _scores(
                    sc_ptr, s_base, b_ptr, b_base, r0, j, n_p, m_p, act, WPR, A, R, EB,
                    PROFILE, phase != 1,
                )  # fmt: skip
                hl, ee, bs, bj, diag, out_h, out_f, words = _step(
                    hl, ee, bs, bj, diag, out_h, out_f, sc, oa, ca, ra, ob, cb, rb, up_h, up_f, ext,
                    j, act, R, MODE, PROFILE, TRACE, PACKED, phase != 1,
                )  # fmt: skip
                last = (q == Q - 1) & act & (strip + 1 < tl.cdiv(n_p, R))
                tl.store(hb_h_ptr + hb_base + (j - 1), out_h, mask=last)
                tl.store(hb_f_ptr + hb_base + (j - 1), out_f, mask=last)
                if TRACE:
                    m_tr = act & strip_ok
                    o_tr = tr_base + (strip.to(tl.int64) * m_p + (j - 1)) * NW
                    for w in tl.static_range(NW):
                        tl.store(tr_ptr + o_tr + w, words[w], mask=m_tr)
        # the horizontal buffer is read by another thread in the next pass
        tl.debug_barrier()
        res = _merge_rows(res, hl, bs, bj, r0, n_p, off, R, MODE, PACKED)
    score, end_i, end_j = _finish(res, n_1, m_1, m_p + zero, oa0, ca0_m, ext, MODE)
    tl.store(out_ptr + p * 3, score, mask=m_slot)
    tl.store(out_ptr + p * 3 + 1, end_i, mask=m_slot)
    tl.store(out_ptr + p * 3 + 2, end_j, mask=m_slot)


def launch_fill(grid, *args, **meta):
    """Launch the fill kernel on ``grid`` (arguments as :func:`_dp_fill_kernel`); returns the
    compiled kernel."""
    return _dp_fill_kernel[grid](*args, **meta)
