"""Borůvka rounds of single linkage on the GPU (Triton); ``torchmsa.ops.linkage`` runs them,
the twin of ``torchmsa.cpu.tree.single_linkage``.

Single linkage is the minimum spanning tree of the complete graph on the leaves, leaf pairs
``a < b`` ordered by ``(d(a, b), a, b)`` (a strict order, so the tree is unique), its edges then
taken in that order as joins (``torchmsa.cpu.tree.spanning_joins``). The host finds the tree
with Prim's algorithm, n - 1 steps each waiting on the last; here it is Borůvka's: every round,
each component takes its lightest edge to another component, and those edges join them. Each
round at least halves the number of components, so ``log2 n`` rounds at most.

A round is one kernel, one program per row: the row's lightest edge to a leaf of another
component, the first leaf on equal distances (within one row, leaf order is pair order). The
components' own minima over their rows (distance, then pair) are two scatter-minima in torch
(:func:`boruvka_round`), and the host unites the chosen edges (``torchmsa.ops.linkage`` with
``cpu.tree.merge_components``: each edge names two components; two components may name the
same edge). A round reads the matrix once and writes nothing to it, where the slot rule's
n - 1 sequential joins each read two rows and wrote a row and a column.
"""

from __future__ import annotations

import numpy as np
import torch
import triton
import triton.language as tl

__all__ = ["boruvka_round", "BLOCK", "INTERPRETER_BLOCK"]

BLOCK = 1024  # lanes of a row's program (linkage_gpu.md)
INTERPRETER_BLOCK = 16


@triton.jit(do_not_specialize=["n"])
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


def boruvka_round(d: torch.Tensor, comp: torch.Tensor, block=BLOCK, num_warps=4) -> np.ndarray:
    """One round: every component's lightest edge to another component.

    Arguments:
        d: a checked ``float64 [n, n]`` matrix (contiguous; only read).
        comp: ``int32 [n]`` each leaf's component label (a leaf id), on the device of ``d``.
        block, num_warps: the row programs' shape on a GPU (the interpreter uses
            :data:`INTERPRETER_BLOCK` and one warp).

    Returns:
        The chosen edges as keys ``a * n + b`` (``a < b``), ascending and distinct, ``int64``
        on the host: one per component, two components naming the same edge once. Empty only
        for a matrix that was not checked (NaN, inf).
    """
    n = d.shape[0]
    dev = d.device
    if dev.type == "cpu":
        block, num_warps = INTERPRETER_BLOCK, 1
    near_d = torch.empty(n, dtype=torch.float64, device=dev)
    near_j = torch.empty(n, dtype=torch.int32, device=dev)
    _nearest_kernel[(n,)](d, comp, near_d, near_j, n, BLOCK=block, num_warps=num_warps)
    rows = torch.arange(n, device=dev)
    none = n * n  # past every pair's key a * n + b
    j = near_j.long()
    key = torch.minimum(rows, j) * n + torch.maximum(rows, j)
    label = comp.long()
    least = torch.full((n,), float("inf"), dtype=torch.float64, device=dev)
    least = least.scatter_reduce(0, label, near_d, "amin")
    key = torch.where(near_d == least[label], key, none)
    chosen = torch.full((n,), none, dtype=torch.int64, device=dev)
    chosen = chosen.scatter_reduce(0, label, key, "amin")
    return torch.unique(chosen[chosen < none]).cpu().numpy()
