"""Single linkage of a distance matrix on the GPU (Triton): the twin of ``_linkage`` in
``torchmsa/cpu/tree.py`` with ``method=SINGLE``.

The same steps, slots and tie rule: each step joins the active slots ``i < j`` of smallest
distance, the smallest ``(i, j)`` among equal ones; the new cluster takes slot i. Every row keeps
its minimum over active slots and the first slot holding it. With single linkage the joined
row is ``min(d[i], d[j])`` and no arithmetic happens, so the floating-point values and the tree
are exactly the host's; and a row whose minimum sat in slot i or j keeps that value, now in slot
i (the new distance is the smaller of the two), so no row is ever rescanned.

The row minima start as one program per row (the first slot on ties, as the host's scan); the
diagonal is never read. The n - 1 joins are one program of one block, one pass over rows i and
j per join: the joined row, its mirror column and every row's minimum, and with them the next
pair to join; a barrier separates joins. Each lane keeps its own running minimum over the
chunks of a pass, and the block reduces once per pass. A step reads two rows and
writes a row and a column: about ``3 n^2`` values in all, instead of the matrix's copy to the
host and the host's clustering.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

__all__ = ["single_linkage", "BLOCK"]

BLOCK = 2048  # lanes of the joining program (16 warps: 4 slots a lane; linkage_gpu.md)
ROW_BLOCK = 1024
INTERPRETER_BLOCK = 16


@triton.jit
def _lane_min(v, k, on, lane_v, lane_k):
    """Each lane's running (minimum, first slot), chunks taken in slot order."""
    take = on & (v < lane_v)
    return tl.where(take, v, lane_v), tl.where(take, k, lane_k)


@triton.jit
def _first_of(lane_v, lane_k, n):
    """(minimum, its first slot) over the lanes; ``(inf, -1)`` when no slot was on."""
    m = tl.min(lane_v, axis=0)
    first = tl.min(tl.where(lane_v == m, lane_k, n), axis=0)
    return m, tl.where(first < n, first, -1)


@triton.jit
def _row_min_kernel(d, row_min, row_arg, n, BLOCK: tl.constexpr):
    # one program per row: its minimum off the diagonal and the first slot holding it
    r = tl.program_id(0)
    row = d + r.to(tl.int64) * n
    offs = tl.arange(0, BLOCK)
    lane_v = tl.full([BLOCK], float("inf"), tl.float64)
    lane_k = tl.full([BLOCK], n, tl.int32)
    for c0 in range(0, n, BLOCK):
        k = c0 + offs
        on = (k < n) & (k != r)
        v = tl.load(row + k, mask=on, other=float("inf"))
        lane_v, lane_k = _lane_min(v, k, on, lane_v, lane_k)
    best, arg = _first_of(lane_v, lane_k, n)
    tl.store(row_min + r, best)
    tl.store(row_arg + r, arg)


@triton.jit
def _single_linkage_kernel(
    d,
    row_min,
    row_arg,
    active,
    node,
    children,
    heights,
    n,
    BLOCK: tl.constexpr,
):
    offs = tl.arange(0, BLOCK)
    # the first pair: the first row of smallest minimum, and that minimum's slot
    lane_v = tl.full([BLOCK], float("inf"), tl.float64)
    lane_k = tl.full([BLOCK], n, tl.int32)
    for c0 in range(0, n, BLOCK):
        k = c0 + offs
        v = tl.load(row_min + k, mask=k < n, other=float("inf"))
        lane_v, lane_k = _lane_min(v, k, k < n, lane_v, lane_k)
    best, i = _first_of(lane_v, lane_k, n)
    for step in range(n - 1):
        j = tl.load(row_arg + i)
        a = tl.load(node + i)
        b = tl.load(node + j)
        tl.store(children + 2 * step, tl.minimum(a, b))
        tl.store(children + 2 * step + 1, tl.maximum(a, b))
        tl.store(heights + step, best / 2)
        tl.store(active + j, 0)
        row_i = d + i.to(tl.int64) * n
        row_j = d + j.to(tl.int64) * n
        # one pass: the joined row, its mirror column, every other row's minimum; row i's new
        # minimum and the next pair's candidates among the other rows
        own_v = tl.full([BLOCK], float("inf"), tl.float64)
        own_k = tl.full([BLOCK], n, tl.int32)
        lane_v = tl.full([BLOCK], float("inf"), tl.float64)
        lane_k = tl.full([BLOCK], n, tl.int32)
        for c0 in range(0, n, BLOCK):
            k = c0 + offs
            # every load of a chunk is issued at once (none waits for ``active``)
            inside = k < n
            on = (tl.load(active + k, mask=inside, other=0) != 0) & (k != i) & (k != j)
            x = tl.load(row_i + k, mask=inside, other=float("inf"))
            y = tl.load(row_j + k, mask=inside, other=float("inf"))
            arg = tl.load(row_arg + k, mask=inside, other=0)
            rm = tl.load(row_min + k, mask=inside, other=float("inf"))
            v = tl.minimum(x, y)
            tl.store(row_i + k, v, mask=on)
            tl.store(d + k.to(tl.int64) * n + i, v, mask=on)
            # a minimum in slot i or j was d[k, i] or d[k, j]: v is never above it
            moved = (arg == i) | (arg == j) | (v < rm) | ((v == rm) & (i < arg))
            rm = tl.where(moved, v, rm)
            tl.store(row_min + k, rm, mask=on & moved)
            tl.store(row_arg + k, tl.where(moved, i, arg), mask=on & moved)
            own_v, own_k = _lane_min(v, k, on, own_v, own_k)
            lane_v, lane_k = _lane_min(rm, k, on, lane_v, lane_k)
        best_i, arg_i = _first_of(own_v, own_k, n)
        tl.store(row_min + i, best_i)
        tl.store(row_arg + i, arg_i)
        tl.store(node + i, n + step)
        # the next pair: row i against the first of the others (value, then slot)
        m, f = _first_of(lane_v, lane_k, n)
        take_i = (best_i < m) | ((best_i == m) & (i < f))
        best = tl.where(take_i, best_i, m)
        i = tl.where(take_i, i, f)
        tl.debug_barrier()


def single_linkage(dist: torch.Tensor, overwrite: bool = False, block=BLOCK, num_warps=16):
    """Single linkage of a checked ``float64 [n, n]`` matrix on its device.

    Arguments:
        dist: symmetric, finite, non-negative off the diagonal (the diagonal is ignored).
        overwrite: work in ``dist`` itself (no n x n copy); it is left overwritten.
        block, num_warps: the joining program's shape on a GPU (``benchmarks`` tune them).

    Returns:
        ``(children int64 [n-1, 2], heights float64 [n-1])`` on the device, in join order:
        the same as ``torchmsa.cpu.tree.linkage(dist, SINGLE)``.
    """
    n = dist.shape[0]
    dev = dist.device
    # a private contiguous float64 copy, unless dist may be overwritten and already is one
    own = overwrite and dist.dtype == torch.float64 and dist.is_contiguous()
    d = dist if own else dist.to(torch.float64, memory_format=torch.contiguous_format, copy=True)
    children = torch.empty((max(n - 1, 0), 2), dtype=torch.int64, device=dev)
    heights = torch.empty(max(n - 1, 0), dtype=torch.float64, device=dev)
    if n < 2:
        return children, heights
    row_min = torch.empty(n, dtype=torch.float64, device=dev)
    row_arg = torch.empty(n, dtype=torch.int32, device=dev)
    active = torch.ones(n, dtype=torch.int8, device=dev)
    node = torch.arange(n, dtype=torch.int64, device=dev)
    interp = dev.type == "cpu"
    row_block = INTERPRETER_BLOCK if interp else ROW_BLOCK
    _row_min_kernel[(n,)](d, row_min, row_arg, n, BLOCK=row_block, num_warps=1 if interp else 4)
    block = INTERPRETER_BLOCK if interp else block
    _single_linkage_kernel[(1,)](
        d, row_min, row_arg, active, node, children, heights, n, BLOCK=block,
        num_warps=1 if interp else num_warps,
    )  # fmt: skip
    return children, heights
