"""Single linkage of a distance matrix on the GPU (Triton): the twin of
``torchmsa.cpu.tree.single_linkage``.

Single linkage is the minimum spanning tree of the complete graph on the leaves, leaf pairs
``a < b`` ordered by ``(d(a, b), a, b)`` (a strict order, so the tree is unique), its edges then
taken in that order as joins (``torchmsa.cpu.tree.spanning_joins``). The host finds the tree
with Prim's algorithm, n - 1 steps each waiting on the last; here it is Borůvka's: every round,
each component takes its lightest edge to another component, and those edges join them. Each
round at least halves the number of components, so ``log2 n`` rounds at most.

A round is one kernel, one program per row: the row's lightest edge to a leaf of another
component, the first leaf on equal distances (within one row, leaf order is pair order). The
components' own minima over their rows (distance, then pair) are two scatter-minima in torch,
and the host unites the chosen edges (``merge_components``: each edge names two components; two
components may name the same edge). A round reads the matrix once and writes nothing to it,
where the slot rule's n - 1 sequential joins each read two rows and wrote a row and a column.
"""

from __future__ import annotations

import numpy as np
import torch
import triton
import triton.language as tl

from torchmsa.cpu.tree import merge_components, spanning_joins

__all__ = ["single_linkage", "BLOCK"]

BLOCK = 1024  # lanes of a row's program (linkage_gpu.md)
INTERPRETER_BLOCK = 16


@triton.jit
def _nearest_kernel(d, comp, near_d, near_j, n, BLOCK: tl.constexpr):
    # one program per row: the lightest edge to another component, its first leaf on ties
    r = tl.program_id(0)
    row = d + r.to(tl.int64) * n
    own = tl.load(comp + r)
    offs = tl.arange(0, BLOCK)
    lane_v = tl.full([BLOCK], float("inf"), tl.float64)
    lane_k = tl.full([BLOCK], n, tl.int32)
    for c0 in range(0, n, BLOCK):
        k = c0 + offs
        on = tl.load(comp + k, mask=k < n, other=own) != own
        v = tl.load(row + k, mask=on, other=float("inf"))
        take = on & (v < lane_v)  # chunks in leaf order: each lane keeps its first minimum
        lane_v = tl.where(take, v, lane_v)
        lane_k = tl.where(take, k, lane_k)
    best = tl.min(lane_v, axis=0)
    first = tl.min(tl.where(lane_v == best, lane_k, n), axis=0)
    tl.store(near_d + r, best)
    tl.store(near_j + r, tl.where(first < n, first, -1))


def single_linkage(dist: torch.Tensor, block=BLOCK, num_warps=4, rounds: list | None = None):
    """Single linkage of a checked ``float64 [n, n]`` matrix on its device (only read).

    Arguments:
        dist: symmetric, finite, non-negative off the diagonal (the diagonal is ignored).
        block, num_warps: the row programs' shape on a GPU (``benchmarks.linkage_gpu``).
        rounds: a list that gets the number of Borůvka rounds appended.

    Returns:
        ``(children int64 [n-1, 2], heights float64 [n-1])`` as numpy arrays, in join order:
        the same as ``torchmsa.cpu.tree.single_linkage(dist)``.
    """
    n = dist.shape[0]
    dev = dist.device
    d = dist.to(torch.float64).contiguous()
    if n < 2:
        if rounds is not None:
            rounds.append(0)
        return spanning_joins(np.empty(0), np.empty(0), np.empty(0))
    interp = dev.type == "cpu"
    block = INTERPRETER_BLOCK if interp else block
    num_warps = 1 if interp else num_warps
    parent = np.arange(n)  # the host's union-find; roots are each set's smallest leaf
    comp = torch.arange(n, dtype=torch.int32, device=dev)
    near_d = torch.empty(n, dtype=torch.float64, device=dev)
    near_j = torch.empty(n, dtype=torch.int32, device=dev)
    rows = torch.arange(n, device=dev)
    none = n * n  # past every pair's key a * n + b
    edges: list[np.ndarray] = []
    found = 0
    while found < n - 1:
        _nearest_kernel[(n,)](d, comp, near_d, near_j, n, BLOCK=block, num_warps=num_warps)
        j = near_j.long()
        key = torch.minimum(rows, j) * n + torch.maximum(rows, j)
        label = comp.long()
        least = torch.full((n,), float("inf"), dtype=torch.float64, device=dev)
        least = least.scatter_reduce(0, label, near_d, "amin")
        key = torch.where(near_d == least[label], key, none)
        chosen = torch.full((n,), none, dtype=torch.int64, device=dev)
        chosen = chosen.scatter_reduce(0, label, key, "amin")
        chosen = torch.unique(chosen[chosen < none]).cpu().numpy()
        if chosen.shape[0] == 0:  # only an unchecked matrix (NaN, inf) gets here
            raise ValueError("single_linkage needs finite distances (check them first)")
        lo, hi = chosen // n, chosen % n
        comp.copy_(torch.from_numpy(merge_components(parent, lo, hi)))
        edges.append(chosen)
        found += chosen.shape[0]
    if rounds is not None:
        rounds.append(len(edges))
    keys = np.concatenate(edges)
    w = d.view(-1)[torch.from_numpy(keys).to(dev)].cpu().numpy()
    return spanning_joins(keys // n, keys % n, w)
