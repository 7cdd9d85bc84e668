"""Strip fill of the best-K local alignment (decision 0038) on the GPU: the twin of
``torchmsa/cpu/strip.py``, same launcher signature, bit-identical results.

One program per segment. The query's rows go in passes of ``Q * R`` rows: lane ``q`` of a
program holds rows ``r0 + 1 .. r0 + R`` (``r0 = pass * Q * R + q * R``) in registers and sweeps
the segment's columns one per step, one step behind lane ``q - 1`` (at step ``t`` it is at
segment column ``u = t - q + 1``, subject column ``j = seg_lo * W + u``). Per row a lane keeps
``H``, ``E``, ``SH``, ``SE`` of its last column and the row's first maximum in the current strip
(value, column, start): ``7 R`` registers of ``[Q]`` values. The only traffic between lanes is
the bottom row of each lane (``H``, ``F``, ``SH``, ``SF`` of one cell per step), moved one lane
down with ``tl.gather`` (warp shuffles while ``Q <= 32``). Between passes the last lane's bottom
row goes through a horizontal buffer in global memory (4 ``int32`` per column of the segment),
read by lane 0 of the next pass; the left boundary of a pass is ``col_in``.

Piped (``PIPE``, the default): each pass of each segment is a program of its own, taking a
ticket in start order, and runs at most about ``2 SYNC`` steps behind the pass above. Every
``SYNC`` steps a pass publishes how many columns of the horizontal buffer it has written (a
barrier, then a release store of its counter) and waits until the pass above has published
the next ``SYNC`` columns it reads (acquire loads; reads of other programs' data bypass L1).
A program waits only on a lower ticket, so on one already running: no deadlock whatever the
grid. One buffer per segment serves every pass: a pass overwrites a column only after reading
it, and the pass below reads it only after that. A refill of three segments runs about 7x
faster than with its passes in turn, and a full launch about 10% faster (``strip_pipe.csv``).

Steps: the first ``Q - 1`` steps of a pass, and the ``Q`` steps around each strip's last
column, run masked (an idle lane keeps its state; a lane at a strip's last column writes its
rows of the checkpoint and folds its rows' maxima into a per-lane, per-strip scratch entry);
the steps in between, where every lane is inside a strip, run unmasked with no strip-end test.
After the passes, each strip's best cell is the first maximum of its lanes' entries (rows
belong to one lane each, so ``(score desc, i asc)`` decides), and row 0 of its checkpoint is
written (the boundary: ``H = 0``, ``E = NEG``, starts 0).

Scores come from a query profile ``int32 [A, WPR]`` that packs ``32 // EB`` consecutive rows of
``mat[q_i, b]`` per word (``EB = 8`` when every score fits an ``int8`` and ``R % 4 == 0``, else
32); a lane reads ``R * EB / 32`` words per step. Forbidden pairs (constexpr ``FORBID``, only
when there are any) are walked per row: a lane keeps the next forbidden column of each of its
rows (a binary search at the start of a pass) and advances when its column reaches it.

Launch shapes (``SHAPES``): ``(Q, R, num_warps)`` from a fixed menu of two, one warp per
segment: ``(32, 16, 1)`` (255 registers, no spills; 549-567 GCUPS on an H100 at n = 10^4) and,
for short queries, ``(32, 4, 1)``; at most ``len(SHAPES) * 2 * 2`` variants compile (``EB``,
``FORBID``). A segment is one program of one warp, so a launch wants ``C`` of at least about
8 segments per SM (1,000 on an H100) and strips of ``W >> Q`` columns; see
``docs/kernels/strip.md`` for the measurements.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from torchmsa import constants
from torchmsa.errors import ArgumentError

__all__ = [
    "GLOBAL_SHAPE", "SHAPES", "choose_shape", "crossings", "global_strip_fill", "strip_fill",
]  # fmt: skip

NEG: tl.constexpr = tl.constexpr(constants.NEG)
BIG: tl.constexpr = tl.constexpr(constants.BIG)

# The launch-shape menu: (lanes Q, rows per lane R, warps) -> cells per second (GCUPS) measured
# on an H100 (docs/kernels/strip.md; n = 128 and n = 10^4 against 10^7..10^8 residues).
# choose_shape takes the one of least modelled time for the rows it pads a query to.
SHAPES = {(32, 4, 1): 435.0, (32, 16, 1): 549.0}
# The shape of one long global pair's single segment (decision 0060): its passes run behind
# one another, so a short step beats many rows a step.
GLOBAL_SHAPE = (32, 8, 1)
# Steps between a piped pass's synchronisations with the pass above: short where a launch of
# under one segment per SM is bound by the passes' lag (a refill), long where the launch
# fills the GPU (benchmarks/results/strip_pipe.csv; docs/kernels/strip.md).
SYNC_FEW, SYNC_MANY = 16, 64
# scores and lengths such that no H, E, F nor column index wraps int32
SCORE_LIMIT = 1 << 27
INDEX_LIMIT = 1 << 30


@triton.jit
def _scores(prof_ptr, s_ptr, j, act, WPR, A, r0, R: tl.constexpr, EB: tl.constexpr):
    """``mat[q[r0 + k], s[j - 1]]`` for ``k < R``: a tuple of ``[Q]`` values."""
    PER: tl.constexpr = 32 // EB
    b = tl.load(s_ptr + (j - 1), mask=act, other=0).to(tl.int32)
    row = tl.minimum(b, A - 1) * WPR + r0 // PER
    out = ()
    for w in tl.static_range(R // PER):
        word = tl.load(prof_ptr + row + w)
        for k in tl.static_range(PER):
            if EB == 32:
                out = out + (word,)
            else:
                out = out + ((word << (32 - EB * (k + 1))) >> (32 - EB),)
    return out


@triton.jit
def _column(
    hl, ee, sl, se, bv, bj, bs, fn, fp, fe, d, ds, hu, fu, su, sfu, sc, j, act, go, ge, fcol_ptr,
    R: tl.constexpr, MASKED: tl.constexpr, FORBID: tl.constexpr, GLOBAL: tl.constexpr,
):  # fmt: skip
    """One column ``j`` of a lane's ``R`` rows, top to bottom (``GLOBAL``: the global
    recurrence, ``SH``/``SE`` carrying crossings, no best cells).

    ``hl, ee, sl, se``: H, E, SH, SE of the rows at column ``j - 1`` (then ``j``); ``bv, bj,
    bs``: each row's first maximum so far in the strip; ``fn, fp, fe``: each row's next
    forbidden column, its index and end in ``forbid_col``; ``d, ds``: H and SH above-left of the
    first row; ``hu, fu, su, sfu``: H, F, SH, SF above the first row. Returns the new tuples,
    ``d, ds`` for the next column and the bottom row's ``H, F, SH, SF``.
    """
    n_hl = ()
    n_ee = ()
    n_sl = ()
    n_se = ()
    n_bv = ()
    n_bj = ()
    n_bs = ()
    n_fn = ()
    n_fp = ()
    for k in tl.static_range(R):
        hd = d + sc[k]
        if FORBID:
            forb = fn[k] == j
            if MASKED:
                forb = forb & act
            hd = tl.where(forb, NEG, hd)
            p_next = fp[k] + forb.to(tl.int32)
            f_next = tl.load(fcol_ptr + p_next, mask=forb & (p_next < fe[k]), other=BIG)
            n_fn = n_fn + (tl.where(forb, f_next, fn[k]),)
            n_fp = n_fp + (p_next,)
        if GLOBAL:
            sd = ds
        else:
            sd = tl.where(d == 0, j, ds)
        e_ext = ee[k] - ge
        e_open = hl[k] - go
        e = tl.maximum(e_ext, e_open)
        s_e = tl.where(e_ext >= e_open, se[k], sl[k])
        f_ext = fu - ge
        f_open = hu - go
        f = tl.maximum(f_ext, f_open)
        s_f = tl.where(f_ext >= f_open, sfu, su)
        s = tl.where(f > hd, s_f, sd)
        h = tl.maximum(hd, f)
        s = tl.where(e > h, s_e, s)
        h = tl.maximum(h, e)
        if not GLOBAL:
            s = tl.where(h > 0, s, 0)
            h = tl.maximum(h, 0)
            upd = h > bv[k]
            if MASKED:
                upd = upd & act
            n_bv = n_bv + (tl.where(upd, h, bv[k]),)
            n_bj = n_bj + (tl.where(upd, j, bj[k]),)
            n_bs = n_bs + (tl.where(upd, s, bs[k]),)
        d = hl[k]
        ds = sl[k]
        if MASKED:
            n_hl = n_hl + (tl.where(act, h, hl[k]),)
            n_ee = n_ee + (tl.where(act, e, ee[k]),)
            n_sl = n_sl + (tl.where(act, s, sl[k]),)
            n_se = n_se + (tl.where(act, s_e, se[k]),)
        else:
            n_hl = n_hl + (h,)
            n_ee = n_ee + (e,)
            n_sl = n_sl + (s,)
            n_se = n_se + (s_e,)
        hu = h
        fu = f
        su = s
        sfu = s_f
    if not FORBID:
        n_fn = fn
        n_fp = fp
    if GLOBAL:
        n_bv = bv
        n_bj = bj
        n_bs = bs
    return n_hl, n_ee, n_sl, n_se, n_bv, n_bj, n_bs, n_fn, n_fp, hu, fu, su, sfu


@triton.jit
def _strip_end(
    hl, ee, sl, se, bv, bj, bs, end, later, sidx, r0, n, N1, slot, ckpt_ptr, scr_ptr, scr_base,
    SCR, Q: tl.constexpr, R: tl.constexpr, PIPE: tl.constexpr,
):  # fmt: skip
    """Lanes at their strip's last column (``end``): write their rows of the checkpoint, fold
    their rows' maxima (rows ascending) into their scratch entry (``later``: a pass after the
    first has written it, in another program when ``PIPE``); returns the reset maxima."""
    o_ck = (slot + sidx).to(tl.int64) * 4 * N1
    lv = sidx * 0
    li = lv
    lj = lv
    ls = lv
    n_bv = ()
    for k in tl.static_range(R):
        i = r0 + 1 + k
        m_k = end & (i <= n)
        p_ck = ckpt_ptr + o_ck + i
        tl.store(p_ck, hl[k], mask=m_k)
        tl.store(p_ck + N1, ee[k], mask=m_k)
        tl.store(p_ck + 2 * N1, sl[k], mask=m_k)
        tl.store(p_ck + 3 * N1, se[k], mask=m_k)
        upd = (bv[k] > lv) & (i <= n)
        lv = tl.where(upd, bv[k], lv)
        li = tl.where(upd, i, li)
        lj = tl.where(upd, bj[k], lj)
        ls = tl.where(upd, bs[k], ls)
        n_bv = n_bv + (tl.where(end, 0, bv[k]),)
    # rows of earlier passes come first: they keep their entry unless this pass beats it
    p_sc = scr_ptr + ((scr_base + sidx) * Q + tl.arange(0, Q))
    plane = SCR * Q
    m_old = end & later
    ov = _shared_load(p_sc, m_old, 0, PIPE)
    oi = _shared_load(p_sc + plane, m_old, 0, PIPE)
    oj = _shared_load(p_sc + 2 * plane, m_old, 0, PIPE)
    os = _shared_load(p_sc + 3 * plane, m_old, 0, PIPE)
    new = lv > ov
    tl.store(p_sc, tl.where(new, lv, ov), mask=end)
    tl.store(p_sc + plane, tl.where(new, li, oi), mask=end)
    tl.store(p_sc + 2 * plane, tl.where(new, lj, oj), mask=end)
    tl.store(p_sc + 3 * plane, tl.where(new, ls, os), mask=end)
    return n_bv


@triton.jit
def _prefetch(
    prof_ptr, s_ptr, hb_ptr, hb_base, hb_plane, hb_rd, j, j_base, L, WPR, A, r0,
    R: tl.constexpr, EB: tl.constexpr, PIPE: tl.constexpr,
):  # fmt: skip
    """What the step at column ``j`` (``[Q]``, one per lane) reads: lane 0's row above from
    the horizontal buffer (``hb_rd``) and the lanes' scores; masked outside the segment."""
    u = j - j_base
    act = (u >= 1) & (u <= L)
    m_hb = hb_rd & act
    p_hb = hb_ptr + (hb_base + u - 1)
    h = _shared_load(p_hb, m_hb, 0, PIPE)
    f = _shared_load(p_hb + hb_plane, m_hb, NEG, PIPE)
    s = _shared_load(p_hb + 2 * hb_plane, m_hb, 0, PIPE)
    sf = _shared_load(p_hb + 3 * hb_plane, m_hb, 0, PIPE)
    return h, f, s, sf, _scores(prof_ptr, s_ptr, j, act, WPR, A, r0, R, EB)


@triton.jit
def _row_above(
    out_h, out_f, out_s, out_sf, pf_h, pf_f, pf_s, pf_sf, src_lane, lane0, j, top_lane, go, ge,
    W, GLOBAL: tl.constexpr,
):  # fmt: skip
    """``H``, ``F`` and the two codes above each lane's first row: the bottom row of the lane
    above (moved one lane down), for lane 0 the prefetched row of the pass above (``GLOBAL``:
    below row 0, the leading gap)."""
    up_h = tl.where(lane0, pf_h, tl.gather(out_h, src_lane, 0))
    up_f = tl.where(lane0, pf_f, tl.gather(out_f, src_lane, 0))
    up_s = tl.where(lane0, pf_s, tl.gather(out_s, src_lane, 0))
    up_sf = tl.where(lane0, pf_sf, tl.gather(out_sf, src_lane, 0))
    if GLOBAL:
        up_h, up_f, up_s, up_sf = _top_row(up_h, up_f, up_s, up_sf, j, top_lane, go, ge, W)
    return up_h, up_f, up_s, up_sf


@triton.jit
def _top(x, go, ge):
    """``H[0, x]`` of the global DP: the leading gap of ``x`` columns."""
    return tl.where(x == 0, 0, -(go + (x - 1) * ge))


@triton.jit
def _reset_crossings(sl, se, end, r0, R: tl.constexpr):
    """At a strip's last column (``end``), the lane's rows become the next strip's input
    column: their crossing codes are ``2 i`` (``H``) and ``2 i + 1`` (``E``)."""
    n_sl = ()
    n_se = ()
    for k in tl.static_range(R):
        i = r0 + 1 + k
        n_sl = n_sl + (tl.where(end, 2 * i, sl[k]),)
        n_se = n_se + (tl.where(end, 2 * i + 1, se[k]),)
    return n_sl, n_se


@triton.jit
def _top_row(up_h, up_f, up_s, up_sf, j, top_lane, go, ge, W):
    """Row 0 above pass 0's lane 0 in the global DP: ``H[0, j]``, no ``F``, and the leading
    gap's crossing (1 past the first strip, else 0)."""
    code0 = (j > W).to(tl.int32)
    up_h = tl.where(top_lane, _top(j, go, ge), up_h)
    up_f = tl.where(top_lane, NEG, up_f)
    up_s = tl.where(top_lane, code0, up_s)
    up_sf = tl.where(top_lane, code0, up_sf)
    return up_h, up_f, up_s, up_sf


@triton.jit
def _shared_load(ptr, mask, other, PIPE: tl.constexpr):
    """A load of what another program may have written (``PIPE``): from L2, past this SM's L1."""
    if PIPE:
        return tl.load(ptr, mask=mask, other=other, cache_modifier=".cg")
    else:
        return tl.load(ptr, mask=mask, other=other)


@triton.jit
def _pipe_sync(flag_ptr, t, L, B, kp, Q: tl.constexpr):
    """Before step ``t`` of pass ``kp`` (every ``B`` steps): publish the columns of the
    horizontal buffer this pass has written (its last lane wrote column ``t - Q + 1`` at step
    ``t - 1``), then wait until the pass above has published the ``B`` columns lane 0 reads
    next. ``flag_ptr`` points at this pass's counter, the one above it precedes it."""
    if t % B == 0:
        tl.debug_barrier()
        done = tl.minimum(tl.maximum(t - Q + 1, 0), L)
        tl.atomic_xchg(flag_ptr, done, sem="release", scope="gpu")
        if kp > 0:
            need = tl.minimum(t + B + 1, L)  # one more: the next step's reads are prefetched
            got = tl.atomic_add(flag_ptr - 1, 0, sem="acquire", scope="gpu")
            while got < need:
                got = tl.atomic_add(flag_ptr - 1, 0, sem="acquire", scope="gpu")
            tl.debug_barrier()


# Sizes, costs and offsets vary from launch to launch: specialising on them would compile new
# variants mid-run (decision 0037).
@triton.jit(do_not_specialize=["WPR", "A", "n", "m", "go", "ge", "W", "NB", "SCR", "SYNC"])
def _strip_fwd_kernel(
    prof_ptr,
    WPR,
    A,
    s_ptr,
    n,
    m,
    go,
    ge,
    W,
    lo_ptr,
    hi_ptr,
    col_ptr,
    slot_ptr,
    fptr_ptr,
    fcol_ptr,
    NB,
    ckpt_ptr,
    best_ptr,
    hb_ptr,
    hb_off_ptr,
    scr_ptr,
    scr_off_ptr,
    SCR,
    flag_ptr,
    SYNC,
    Q: tl.constexpr,
    R: tl.constexpr,
    EB: tl.constexpr,
    FORBID: tl.constexpr,
    PIPE: tl.constexpr,
    GLOBAL: tl.constexpr,
):
    """Fill segment ``program_id(0)``: its strips' checkpoints and best cells. With ``PIPE``,
    ``C * passes`` programs: each takes a ticket from the counter at ``flag_ptr[C * passes]``
    (ticket ``C kp + c``: pass ``kp`` of segment ``c``) and runs that pass alone, ``SYNC`` steps
    at most behind the pass above through its counter ``flag_ptr[c * passes + kp]`` (a program
    waits only on one that took an earlier ticket, so on one already running)."""
    N1 = n + 1
    n_pass = tl.cdiv(n, Q * R)
    if PIPE:
        C = tl.num_programs(0) // n_pass
        tk = tl.atomic_add(flag_ptr + tl.num_programs(0), 1).to(tl.int64)
        c = tk % C
        kp_lo = (tk // C).to(tl.int32)
        kp_hi = kp_lo + 1
        hb_plane = tl.load(hb_off_ptr + C)  # total columns of the launch
    else:
        c = tl.program_id(0).to(tl.int64)
        kp_lo = 0
        kp_hi = n_pass
        hb_plane = tl.load(hb_off_ptr + tl.num_programs(0))
    p_flag = flag_ptr + c * n_pass + kp_lo
    lo = tl.load(lo_ptr + c)
    hi = tl.load(hi_ptr + c)
    slot = tl.load(slot_ptr + c)
    ns = hi - lo
    j_base = lo * W
    L = tl.maximum(tl.minimum(hi * W, m) - j_base, 0)
    p_col = col_ptr + c * 4 * N1
    hb_base = tl.load(hb_off_ptr + c)
    scr_base = tl.load(scr_off_ptr + c)
    o_q = tl.arange(0, Q)  # [Q]
    zero = tl.zeros([Q], tl.int32)
    src_lane = tl.maximum(o_q - 1, 0)
    lane0 = o_q == 0
    lane_last = o_q == Q - 1
    for kp in range(kp_lo, kp_hi):
        r0 = kp * (Q * R) + o_q * R  # [Q] the row above the lane's first row
        later = zero + kp > 0  # [Q]
        hb_rd = lane0 & later  # lane 0 reads the pass above
        hb_wr = lane_last & (zero + kp + 1 < n_pass)  # the last lane writes for the next
        hl = ()
        ee = ()
        sl = ()
        se = ()
        bv = ()
        bj = ()
        bs = ()
        fn = ()
        fp = ()
        fe = ()
        for k in tl.static_range(R):
            i = r0 + 1 + k
            m_i = i <= n
            hl = hl + (tl.load(p_col + i, mask=m_i, other=0),)
            ee = ee + (tl.load(p_col + N1 + i, mask=m_i, other=NEG),)
            sl = sl + (tl.load(p_col + 2 * N1 + i, mask=m_i, other=0),)
            se = se + (tl.load(p_col + 3 * N1 + i, mask=m_i, other=0),)
            bv = bv + (zero,)
            bj = bj + (zero,)
            bs = bs + (zero,)
            if FORBID:
                # the first forbidden column of row i in the segment: a binary search
                f_lo = tl.load(fptr_ptr + i, mask=m_i, other=0)
                f_hi = tl.load(fptr_ptr + i + 1, mask=m_i, other=0)
                a = f_lo
                b = f_hi
                for _ in range(0, NB):
                    mid = (a + b) >> 1
                    m_mid = a < b
                    v = tl.load(fcol_ptr + mid, mask=m_mid, other=BIG)
                    less = m_mid & (v <= j_base)
                    a = tl.where(less, mid + 1, a)
                    b = tl.where(m_mid & (v > j_base), mid, b)
                fn = fn + (tl.load(fcol_ptr + a, mask=a < f_hi, other=BIG),)
                fp = fp + (a,)
                fe = fe + (f_hi,)
            else:
                fn = fn + (zero,)
                fp = fp + (zero,)
                fe = fe + (zero,)
        # row 0 of col_in is not read: it is the boundary (0, NEG, 0, 0)
        m_r0 = (r0 > 0) & (r0 <= n)
        d = tl.load(p_col + r0, mask=m_r0, other=0)
        ds = tl.load(p_col + 2 * N1 + r0, mask=m_r0, other=0)
        top_lane = lane0 & (zero + kp == 0)  # below row 0 (GLOBAL: the leading gap)
        if GLOBAL:  # col_in's crossings are not read: every strip starts from its own column
            d = tl.where(r0 == 0, _top(j_base, go, ge), d)
            ds = 2 * r0
            sl, se = _reset_crossings(sl, se, zero == 0, r0, R)
        out_h = zero
        out_f = zero + NEG
        out_s = zero
        out_sf = zero
        nxt = zero + tl.minimum(W, L)  # the lane's next strip end (segment column)
        sidx = zero  # the lane's strip (index in the segment)
        # Masked steps: the pass's first Q - 1, then the Q around each strip's last column
        # e_k = min((k + 1) W, L) (lane 0 reaches it at step e_k - 1, lane Q - 1 at e_k + Q - 2);
        # between them every lane is inside a strip. Iteration sk runs the masked steps
        # [start, e_{sk-1} + Q - 1), then the quiet ones up to e_sk - 1. The bounds are closed
        # forms of sk: Triton 3.6 drops a loop-carried scalar used as an inner loop's lower
        # bound (docs/kernels/strip.md).
        # Each step's scores and lane 0's row above are loaded one step ahead (their latency
        # hides behind a step's work); the first ones after the first synchronisation.
        if PIPE:
            _pipe_sync(p_flag, 0, L, SYNC, kp, Q)
        pf_h, pf_f, pf_s, pf_sf, sc_nx = _prefetch(
            prof_ptr, s_ptr, hb_ptr, hb_base, hb_plane, hb_rd, j_base + 1 - o_q, j_base, L, WPR,
            A, r0, R, EB, PIPE,
        )  # fmt: skip
        for sk in range(0, ns + 1):
            e_prev = tl.minimum(sk * W, L)  # e_{sk-1}, 0 for sk = 0
            e_prev2 = tl.minimum(tl.maximum(sk - 1, 0) * W, L)  # e_{sk-2}
            start = tl.where(sk == 0, 0, tl.maximum(e_prev2 + Q - 1, e_prev - 1))
            m_end = e_prev + Q - 1
            for t in range(start, m_end):
                if PIPE:
                    _pipe_sync(p_flag, t, L, SYNC, kp, Q)
                j = j_base + t - o_q + 1
                u = j - j_base
                act = (u >= 1) & (u <= L)
                p_hb = hb_ptr + (hb_base + u - 1)
                up_h, up_f, up_s, up_sf = _row_above(
                    out_h, out_f, out_s, out_sf, pf_h, pf_f, pf_s, pf_sf, src_lane, lane0, j,
                    top_lane, go, ge, W, GLOBAL,
                )  # fmt: skip
                sc = sc_nx
                pf_h, pf_f, pf_s, pf_sf, sc_nx = _prefetch(
                    prof_ptr, s_ptr, hb_ptr, hb_base, hb_plane, hb_rd, j + 1, j_base, L, WPR,
                    A, r0, R, EB, PIPE,
                )  # fmt: skip
                hl, ee, sl, se, bv, bj, bs, fn, fp, out_h, out_f, out_s, out_sf = _column(
                    hl, ee, sl, se, bv, bj, bs, fn, fp, fe, d, ds, up_h, up_f, up_s, up_sf, sc,
                    j, act, go, ge, fcol_ptr, R, True, FORBID, GLOBAL,
                )  # fmt: skip
                d = tl.where(act, up_h, d)
                ds = tl.where(act, up_s, ds)
                m_st = hb_wr & act
                tl.store(p_hb, out_h, mask=m_st)
                tl.store(p_hb + hb_plane, out_f, mask=m_st)
                tl.store(p_hb + 2 * hb_plane, out_s, mask=m_st)
                tl.store(p_hb + 3 * hb_plane, out_sf, mask=m_st)
                end = act & (u == nxt)
                bv = _strip_end(
                    hl, ee, sl, se, bv, bj, bs, end, later, sidx, r0, n, N1, slot, ckpt_ptr,
                    scr_ptr, scr_base, SCR, Q, R, PIPE,
                )  # fmt: skip
                if GLOBAL:
                    sl, se = _reset_crossings(sl, se, end, r0, R)
                    ds = tl.where(end, 2 * r0, ds)
                sidx = sidx + end.to(tl.int32)
                nxt = tl.where(end, tl.minimum(nxt + W, L), nxt)
            q_lo = tl.maximum(start, m_end)
            q_end = tl.where(sk < ns, tl.minimum((sk + 1) * W, L) - 1, q_lo)
            for t in range(q_lo, q_end):
                if PIPE:
                    _pipe_sync(p_flag, t, L, SYNC, kp, Q)
                j = j_base + t - o_q + 1
                p_hb = hb_ptr + (hb_base + (j - j_base) - 1)
                up_h, up_f, up_s, up_sf = _row_above(
                    out_h, out_f, out_s, out_sf, pf_h, pf_f, pf_s, pf_sf, src_lane, lane0, j,
                    top_lane, go, ge, W, GLOBAL,
                )  # fmt: skip
                sc = sc_nx
                pf_h, pf_f, pf_s, pf_sf, sc_nx = _prefetch(
                    prof_ptr, s_ptr, hb_ptr, hb_base, hb_plane, hb_rd, j + 1, j_base, L, WPR,
                    A, r0, R, EB, PIPE,
                )  # fmt: skip
                hl, ee, sl, se, bv, bj, bs, fn, fp, out_h, out_f, out_s, out_sf = _column(
                    hl, ee, sl, se, bv, bj, bs, fn, fp, fe, d, ds, up_h, up_f, up_s, up_sf, sc,
                    j, j >= 0, go, ge, fcol_ptr, R, False, FORBID, GLOBAL,
                )  # fmt: skip
                d = up_h
                ds = up_s
                m_st = hb_wr
                tl.store(p_hb, out_h, mask=m_st)
                tl.store(p_hb + hb_plane, out_f, mask=m_st)
                tl.store(p_hb + 2 * hb_plane, out_s, mask=m_st)
                tl.store(p_hb + 3 * hb_plane, out_sf, mask=m_st)
        # the horizontal buffer and the scratch entries are read by other threads
        tl.debug_barrier()
        if PIPE:
            tl.atomic_xchg(p_flag, L, sem="release", scope="gpu")
    # the best cells, once the last pass has folded its rows into the scratch entries
    plane = SCR * Q
    ns_out = tl.where(kp_hi == n_pass, ns, 0)
    for sk in range(0, ns_out):
        p_sc = scr_ptr + ((scr_base + sk) * Q + o_q)
        has = zero + n_pass > 0
        v = _shared_load(p_sc, has, 0, PIPE)
        vi = _shared_load(p_sc + plane, has, 0, PIPE)
        vj = _shared_load(p_sc + 2 * plane, has, 0, PIPE)
        vs = _shared_load(p_sc + 3 * plane, has, 0, PIPE)
        b_v = tl.max(v, axis=0)
        b_i = tl.min(tl.where(v == b_v, vi, BIG), axis=0)
        hit = (v == b_v) & (vi == b_i)
        b_j = tl.max(tl.where(hit, vj, -1), axis=0)
        b_s = tl.max(tl.where(hit, vs, -1), axis=0)
        o = slot + sk
        p_b = best_ptr + o * 4
        tl.store(p_b, b_v)
        tl.store(p_b + 1, b_i)
        tl.store(p_b + 2, b_j)
        tl.store(p_b + 3, b_s)
        p_ck = ckpt_ptr + o * 4 * N1
        if GLOBAL:  # row 0: the leading gap, its crossing twice
            k_abs = lo + sk
            code0 = (k_abs > 0).to(tl.int32)
            tl.store(p_ck, _top(tl.minimum((k_abs + 1) * W, m), go, ge))
            tl.store(p_ck + N1, NEG)
            tl.store(p_ck + 2 * N1, code0)
            tl.store(p_ck + 3 * N1, code0)
        else:
            tl.store(p_ck, 0)
            tl.store(p_ck + N1, NEG)
            tl.store(p_ck + 2 * N1, 0)
            tl.store(p_ck + 3 * N1, 0)


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def choose_shape(n: int) -> tuple[int, int, int]:
    """The menu's launch shape ``(Q, R, num_warps)`` for a query of ``n`` residues: least
    ``padded rows / measured rate`` (a pass covers ``Q * R`` rows; ties to the smaller)."""
    return min(SHAPES, key=lambda s: (_cdiv(max(n, 1), s[0] * s[1]) * s[0] * s[1] / SHAPES[s], s))


def _check(name: str, t: torch.Tensor, dtype: torch.dtype, shape: tuple | None, device) -> None:
    if not isinstance(t, torch.Tensor) or t.dtype != dtype:
        got = t.dtype if isinstance(t, torch.Tensor) else type(t).__name__
        raise ArgumentError(f"Invalid `{name}`: expected a {dtype} tensor, got {got}")
    if shape is not None and tuple(t.shape) != shape:
        raise ArgumentError(f"Invalid `{name}` shape {tuple(t.shape)}: expected {shape}")
    if t.device != device:
        raise ArgumentError(f"Invalid `{name}` device {t.device}: expected {device} like `q`")


def strip_fill(
    q: torch.Tensor,
    s: torch.Tensor,
    mat: torch.Tensor,
    go: int,
    ge: int,
    W: int,
    seg_lo: torch.Tensor,
    seg_hi: torch.Tensor,
    col_in: torch.Tensor,
    slot: torch.Tensor,
    forbid_ptr: torch.Tensor,
    forbid_col: torch.Tensor,
    ckpt: torch.Tensor,
    best: torch.Tensor,
    *,
    shape: tuple[int, int, int] | None = None,
    pipe: bool = True,
    sync: int | None = None,
    global_: bool = False,
):
    """Fill the strips of every segment; writes ``ckpt`` and ``best`` in place (``global_``:
    the global DP of decision 0060, see :func:`global_strip_fill`).

    Arguments are those of decision 0038's kernel contract (``torchmsa/cpu/strip.py``), all on
    one device. ``shape`` pins the launch shape ``(Q, R, num_warps)`` (powers of two; tests),
    else :func:`choose_shape` picks it. ``pipe`` runs each pass of ``Q * R`` rows of a segment
    in its own program, at most about ``2 sync`` steps behind the pass above (``None``:
    :data:`SYNC_FEW` for launches of fewer segments than SMs, else :data:`SYNC_MANY`); without
    it one program runs a segment's passes one after another (same results; the benchmarks'
    baseline). Subject codes past the matrix read its last row.

    Returns:
        The compiled kernel (register counts for benchmarks), or None when there is no segment.

    Raises:
        ArgumentError: a tensor of the wrong dtype, shape or device, a non-positive ``W``,
            negative gap costs, a segment outside the subject, slots past ``ckpt``, forbidden
            pair offsets out of order or range, or sizes that could wrap int32.

    ``ckpt`` and ``best`` must start 16-byte aligned (their rows then are); unaligned views of
    the inputs are copied. The launcher copies the segment bounds and a few checks to the host
    (one synchronisation) to size its buffers: the query profile, a horizontal buffer of 16
    bytes per column of the launch's segments when the query needs more than one pass of
    ``Q * R`` rows, and 16 ``Q`` bytes of scratch per strip.
    """
    dev = q.device
    n = q.numel()
    m = s.numel()
    C = seg_lo.numel()
    A = mat.shape[0] if mat.dim() == 2 else 0
    _check("q", q, torch.uint8, (n,), dev)
    _check("s", s, torch.uint8, (m,), dev)
    _check("mat", mat, torch.int32, (A, A), dev)
    _check("seg_lo", seg_lo, torch.int32, (C,), dev)
    _check("seg_hi", seg_hi, torch.int32, (C,), dev)
    _check("col_in", col_in, torch.int32, (C, 4, n + 1), dev)
    _check("slot", slot, torch.int64, (C,), dev)
    _check("forbid_ptr", forbid_ptr, torch.int32, (n + 2,), dev)
    _check("forbid_col", forbid_col, torch.int32, None, dev)
    S = ckpt.shape[0] if ckpt.dim() == 3 else 0
    _check("ckpt", ckpt, torch.int32, (S, 4, n + 1), dev)
    _check("best", best, torch.int32, (S, 4), dev)
    if W < 1 or W >= INDEX_LIMIT:
        raise ArgumentError(f"Invalid `W` argument: {W!r} (a strip width 1 .. {INDEX_LIMIT - 1})")
    if go < 0 or ge < 0 or go >= SCORE_LIMIT or ge >= SCORE_LIMIT:
        raise ArgumentError(f"Invalid gap costs `go`={go!r}, `ge`={ge!r}: 0 .. {SCORE_LIMIT - 1}")
    if sync is not None and (isinstance(sync, bool) or not isinstance(sync, int) or sync < 1):
        raise ArgumentError(f"Invalid `sync` argument: {sync!r} (steps between syncs, >= 1)")
    if A == 0 or m >= INDEX_LIMIT or n >= INDEX_LIMIT:
        raise ArgumentError(f"Invalid sizes: {A} residue types, n={n}, m={m}")
    if not (ckpt.is_contiguous() and best.is_contiguous() and col_in.is_contiguous()):
        raise ArgumentError("`ckpt`, `best` and `col_in` must be contiguous")
    if ckpt.data_ptr() % 16 or best.data_ptr() % 16:
        raise ArgumentError("`ckpt` and `best` must start 16-byte aligned (whole rows of one)")
    if C == 0:
        return None
    # everything the checks and the buffer sizes need, in one copy to the host
    fp = forbid_ptr.long()
    host = torch.cat([
        seg_lo.long(), seg_hi.long(), slot, mat.abs().max().long().view(1),
        mat.min().long().view(1), fp[1:2], fp[-1:], (fp[2:] < fp[1:-1]).sum().view(1),
    ]).cpu()  # fmt: skip
    lo, hi, slot_h = host[:C], host[C : 2 * C], host[2 * C : 3 * C]
    top, low, f_first, f_last, f_down = host[3 * C :].tolist()
    if (n + 1) * top >= SCORE_LIMIT or (global_ and go + (n + m + 1) * max(top, ge) >= SCORE_LIMIT):
        raise ArgumentError(f"Scores up to {top} over {n} rows could wrap int32: use smaller ones")
    if bool((lo < 0).any() or (hi < lo).any() or ((hi > lo) & (hi * W >= m + W)).any()):
        raise ArgumentError(f"Invalid segments: strips {lo.tolist()} .. {hi.tolist()} of W={W}")
    if bool((slot_h < 0).any() or (slot_h + hi - lo > S).any()):
        raise ArgumentError(f"`slot` {slot_h.tolist()} writes past the {S} rows of `ckpt`")
    if f_first < 0 or f_last > forbid_col.numel() or f_down:
        raise ArgumentError(
            f"Invalid `forbid_ptr`: rows 1..n must index `forbid_col` ({forbid_col.numel()} "
            f"entries) in ascending order"
        )
    Q, R, warps = shape if shape is not None else choose_shape(n)
    eb = 8 if R % 4 == 0 and low >= -128 and top <= 127 else 32
    per = 32 // eb
    n_pad = max(_cdiv(n, Q * R), 1) * Q * R
    # query profile [A, n_pad]: prof[b, i - 1] = mat[q_i, b], rows packed 32 // EB to a word
    prof = torch.zeros((A, n_pad), dtype=torch.int32, device=dev)
    prof[:, :n] = mat[q.long(), :].T
    if eb == 8:
        prof = prof.to(torch.int8).contiguous().view(torch.int32)
    wpr = n_pad // per
    L = (torch.minimum(hi * W, torch.tensor(m)) - lo * W).clamp(min=0)
    hb_off = torch.cumsum(L, 0) - L
    ns = hi - lo
    sc_off = torch.cumsum(ns, 0) - ns
    n_scr = max(int(ns.sum()), 1)
    hb_cols = int(L.sum()) if n > Q * R else 0
    # the last entry, past the segments' offsets, is the plane stride of the buffer
    hb_off = torch.cat([hb_off, torch.tensor([max(hb_cols, 1)])]).to(dev)
    hbuf = torch.empty(4 * max(hb_cols, 1), dtype=torch.int32, device=dev)
    scr = torch.empty(4 * n_scr * Q, dtype=torch.int32, device=dev)
    forbid = forbid_col.numel() > 0
    fcol = forbid_col if forbid else torch.zeros(1, dtype=torch.int32, device=dev)
    nb = max(forbid_col.numel(), 1).bit_length()
    # views that start off 16-byte alignment would compile other variants (decision 0037)
    s, seg_lo, seg_hi, col_in, slot, forbid_ptr, fcol = (
        x if x.data_ptr() % 16 == 0 else x.clone()
        for x in (s, seg_lo, seg_hi, col_in, slot, forbid_ptr, fcol)
    )
    n_pass = _cdiv(n, Q * R)
    pipe = bool(pipe) and n_pass > 0
    if sync is None:
        cuda = dev.type == "cuda"
        sms = torch.cuda.get_device_properties(dev).multi_processor_count if cuda else 1
        sync = SYNC_FEW if C < sms else SYNC_MANY
    # per pass of each segment the columns it has published, then the ticket counter
    flags = torch.zeros(C * n_pass + 1 if pipe else 1, dtype=torch.int32, device=dev)
    return _strip_fwd_kernel[(C * n_pass if pipe else C,)](
        prof, wpr, A, s, n, m, go, ge, W, seg_lo, seg_hi, col_in, slot, forbid_ptr, fcol, nb,
        ckpt, best, hbuf, hb_off, scr, sc_off.to(dev), n_scr, flags, sync,
        Q=Q, R=R, EB=eb, FORBID=forbid, PIPE=pipe, GLOBAL=global_, num_warps=warps,
    )  # fmt: skip


def global_strip_fill(q, s, mat, go, ge, W, seg_lo, seg_hi, col_in, slot, ckpt, **launch):
    """The global DP's strips with crossings (decision 0060): the twin of
    ``torchmsa/cpu/strip_global.py``'s ``global_strip_fill``, same arguments, bit-identical
    checkpoints; ``launch``: :func:`strip_fill`'s ``shape``, ``pipe``, ``sync``."""
    dev = q.device
    fptr = torch.zeros(q.numel() + 2, dtype=torch.int32, device=dev)
    fcol = torch.zeros(0, dtype=torch.int32, device=dev)
    best = torch.empty((ckpt.shape[0], 4), dtype=torch.int32, device=dev)
    args = (q, s, mat, go, ge, W, seg_lo, seg_hi, col_in, slot, fptr, fcol, ckpt, best)
    return strip_fill(*args, global_=True, **launch)


@triton.jit(do_not_specialize=["S", "n"])
def _crossings_kernel(ckpt_ptr, out_ptr, S, n):
    N1 = n + 1
    r = n
    st = 0
    tl.store(out_ptr + 2 * S, r.to(tl.int64))
    tl.store(out_ptr + 2 * S + 1, st)
    for t in range(0, S):
        k = S - 1 - t
        c = tl.load(ckpt_ptr + k.to(tl.int64) * 4 * N1 + (2 + st) * N1 + r)
        r = c // 2
        st = c % 2
        tl.store(out_ptr + 2 * k, r.to(tl.int64))
        tl.store(out_ptr + 2 * k + 1, st.to(tl.int64))


def crossings(ckpt: torch.Tensor, n: int) -> torch.Tensor:
    """``int64 [S + 1, 2]`` on the device: the twin of ``cpu/strip_global.py``'s
    ``crossings`` on the checkpoints ``ckpt [S, 4, n + 1]`` (one program follows the codes)."""
    S = ckpt.shape[0]
    out = torch.empty((S + 1, 2), dtype=torch.int64, device=ckpt.device)
    _crossings_kernel[(1,)](ckpt, out, S, n)
    return out
