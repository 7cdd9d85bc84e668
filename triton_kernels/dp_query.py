"""Query profiles for the pairwise fill kernel: each row of ``a`` scored against every residue.

``qp[slot, b, w]`` (``int32 [count, A, WPR]``) packs rows ``w * PER .. w * PER + PER - 1``
(``PER = 32 // EB``) of the sequence ``a`` of pair ``order[slot]`` as ``EB``-bit integers
``matrix[a[i], b] + shift``, row ``i`` in bits ``EB * (i % PER)``; rows past ``n`` hold 0 (the
fill kernel reads them for strips past the end and discards what they give).
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit(do_not_specialize=["stride", "shift", "A", "WPR"])
def _query_profile_kernel(
    codes_ptr,
    stride,
    n_ptr,
    order_ptr,
    mat_ptr,
    shift,
    qp_ptr,
    A,
    WPR,
    EB: tl.constexpr,
    BW: tl.constexpr,
):
    """``BW`` words of one pair's query profile, for every residue ``b``."""
    PER: tl.constexpr = 32 // EB
    slot = tl.program_id(0).to(tl.int64)
    o_w = tl.program_id(1) * BW + tl.arange(0, BW)  # [BW]
    o_k = tl.arange(0, PER)  # [PER]
    p = tl.load(order_ptr + slot).to(tl.int64)
    n = tl.load(n_ptr + p)
    row = o_w[:, None] * PER + o_k[None, :]  # [BW, PER]
    m_row = row < n
    code = tl.load(codes_ptr + p * stride + row, mask=m_row, other=0).to(tl.int32)
    code = tl.minimum(code, A - 1)
    p_qp = qp_ptr + slot * A * WPR + o_w
    for b in range(0, A):
        v = tl.where(m_row, tl.load(mat_ptr + code * A + b) + shift, 0)
        if EB < 32:
            v = (v & ((1 << EB) - 1)) << (EB * o_k[None, :])
        tl.store(p_qp + b * WPR, tl.sum(v, axis=1), mask=o_w < WPR)


def launch_query_profile(grid, *args, **meta):
    """Launch :func:`_query_profile_kernel` on ``grid``; returns the compiled kernel."""
    return _query_profile_kernel[grid](*args, **meta)
