"""Traceback on the GPU: one lane per pair walks the direction bits that ``dp_fill`` stored.

The walk is ``_traceback`` of ``torchmsa/cpu/dp.py`` step for step: the semiglobal end gaps,
then the state machine over H / F ("up") / E ("left"), then (global and semiglobal) the gaps
to the corner. The walk writes ops backwards from the end of the pair's region of ``n + m``
bytes in a scratch buffer; ``_ops_forward_kernel`` then copies them, all pairs and positions
in parallel, to the start of the pair's (zeroed) region of the output in forward order.
"""

from __future__ import annotations

import triton
import triton.language as tl

from torchmsa import constants

# the kernels' copies of the shared values (torchmsa/constants.py)
LOCAL: tl.constexpr = tl.constexpr(constants.LOCAL)
SEMIGLOBAL: tl.constexpr = tl.constexpr(constants.SEMIGLOBAL)
H_STOP: tl.constexpr = tl.constexpr(constants.H_STOP)
E_EXT: tl.constexpr = tl.constexpr(constants.E_EXT)
F_EXT: tl.constexpr = tl.constexpr(constants.F_EXT)
OP_MATCH: tl.constexpr = tl.constexpr(constants.OP_MATCH)
OP_UP: tl.constexpr = tl.constexpr(constants.OP_UP)
OP_LEFT: tl.constexpr = tl.constexpr(constants.OP_LEFT)


@triton.jit(do_not_specialize=["P"])
def _dp_traceback_kernel(
    tr_ptr,
    tr_off_ptr,
    n_ptr,
    m_ptr,
    end_ptr,
    ops_ptr,
    ops_off_ptr,
    res_ptr,
    order_ptr,
    P,
    MODE: tl.constexpr,
    R: tl.constexpr,
    TB: tl.constexpr,
):
    """``res int32 [P, 3]`` gets ``(n_ops, start_i, start_j)``; ``end int32 [P, 3]`` holds the
    fill's ``(score, end_i, end_j)``."""
    NW: tl.constexpr = (R + 7) // 8
    pid = tl.program_id(0).to(tl.int64)
    o_slot = pid * TB + tl.arange(0, TB)
    valid = o_slot < P
    p = tl.load(order_ptr + o_slot, mask=valid, other=0).to(tl.int64)
    n = tl.load(n_ptr + p, mask=valid, other=0)
    m = tl.load(m_ptr + p, mask=valid, other=0)
    ei = tl.load(end_ptr + p * 3 + 1, mask=valid, other=0)
    ej = tl.load(end_ptr + p * 3 + 2, mask=valid, other=0)
    tr_base = tl.load(tr_off_ptr + o_slot, mask=valid, other=0)
    o_ops = tl.load(ops_off_ptr + p, mask=valid, other=0)
    o_last = o_ops + (n + m - 1)  # ops go backwards from here
    k = n * 0
    if MODE == SEMIGLOBAL:
        n_up = n - ei
        n_pre = n_up + (m - ej)
        for t in range(0, tl.max(n_pre, axis=0)):
            op = tl.where(t < n_up, OP_UP, OP_LEFT).to(tl.uint8)
            tl.store(ops_ptr + o_last - t, op, mask=valid & (t < n_pre))
        k = n_pre
    i = ei
    j = ej
    state = n * 0
    walking = valid & (i > 0) & (j > 0)
    while tl.max(walking.to(tl.int32), axis=0) > 0:
        r = tl.maximum(i - 1, 0)
        c = tl.maximum(j - 1, 0)
        k_row = r % R
        o_word = tr_base + ((r // R).to(tl.int64) * m + c) * NW + k_row // 8
        word = tl.load(tr_ptr + o_word, mask=walking, other=0)
        bits = (word >> (4 * (k_row % 8))) & 15
        src = bits & 3
        stop = walking & (state == 0) & (src == H_STOP)
        # in H (state 0) the source picks the move; in F / E the move is fixed (up, left) and
        # the EXT bit says whether the gap goes on; the op codes equal the H source codes
        move = tl.where(state == 0, src, state)
        emit = walking & ~stop
        tl.store(ops_ptr + o_last - k, move.to(tl.uint8), mask=emit)
        k += emit.to(tl.int32)
        i -= (emit & (move != OP_LEFT)).to(tl.int32)
        j -= (emit & (move != OP_UP)).to(tl.int32)
        state = tl.where(
            move == OP_UP,
            tl.where((bits & F_EXT) != 0, OP_UP, 0),
            tl.where((bits & E_EXT) != 0, OP_LEFT, 0),
        )
        state = tl.where(move == OP_MATCH, 0, state)
        walking = emit & (i > 0) & (j > 0)
    if MODE == LOCAL:
        si = i
        sj = j
    else:
        n_tail = i + j
        for t in range(0, tl.max(n_tail, axis=0)):
            op = tl.where(t < i, OP_UP, OP_LEFT).to(tl.uint8)
            tl.store(ops_ptr + o_last - k - t, op, mask=valid & (t < n_tail))
        k += n_tail
        si = i * 0
        sj = j * 0
    tl.store(res_ptr + p * 3, k, mask=valid)
    tl.store(res_ptr + p * 3 + 1, si, mask=valid)
    tl.store(res_ptr + p * 3 + 2, sj, mask=valid)


@triton.jit
def _ops_forward_kernel(
    tmp_ptr, ops_ptr, ops_off_ptr, n_ptr, m_ptr, res_ptr, order_ptr, BLOCK: tl.constexpr
):
    """``ops[o + t] = tmp[o + n + m - k + t]`` for ``t < k = n_ops``: one pair, ``BLOCK`` ops."""
    slot = tl.program_id(0).to(tl.int64)
    t = tl.program_id(1).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    p = tl.load(order_ptr + slot).to(tl.int64)
    k = tl.load(res_ptr + p * 3)
    o_ops = tl.load(ops_off_ptr + p)
    o_first = o_ops + tl.load(n_ptr + p) + tl.load(m_ptr + p) - k
    m_t = t < k
    tl.store(ops_ptr + o_ops + t, tl.load(tmp_ptr + o_first + t, mask=m_t), mask=m_t)


def launch_traceback(grid, *args, **meta):
    """Launch :func:`_dp_traceback_kernel` on ``grid``; returns the compiled kernel."""
    return _dp_traceback_kernel[grid](*args, **meta)


def launch_ops_forward(grid, *args, **meta):
    """Launch :func:`_ops_forward_kernel` on ``grid``; returns the compiled kernel."""
    return _ops_forward_kernel[grid](*args, **meta)
