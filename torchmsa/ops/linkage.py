"""Single linkage of a distance matrix: the dispatcher.

Single linkage is the minimum spanning tree of the complete graph on the leaves, its edges
taken in the order ``(d(a, b), a, b)`` as joins (``torchmsa/cpu/tree.py``). The host finds the
tree with Prim's algorithm (``cpu.tree.single_linkage``); on a GPU it is Borůvka's: each round
(``triton_kernels/linkage.py``) gives every component its lightest edge to another one, the
host unites them (``cpu.tree.merge_components``), and the rounds stop when ``n - 1`` edges are
found, ``log2 n`` rounds at most. The spanning tree is unique, so both give the same joins.
"""

from __future__ import annotations

import numpy as np
import torch

from torchmsa.cpu import tree as cpu_tree
from torchmsa.ops.backend import resolve_backend

__all__ = ["single_linkage"]


def single_linkage(
    dist: np.ndarray | torch.Tensor,
    backend: str = "auto",
    *,
    block: int | None = None,
    num_warps: int = 4,
    rounds: list | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Single linkage of a checked distance matrix (only read).

    Arguments:
        dist: ``[n, n]`` distances (a numpy array or a tensor on any device): symmetric,
            finite, non-negative off the diagonal (the diagonal is ignored).
        backend: ``"auto"`` (Triton for a CUDA tensor, else the host), ``"cpu"`` or
            ``"triton"`` (on CPU tensors only in Triton's interpreter).
        block, num_warps: the Triton row programs' shape (``benchmarks.linkage_gpu``);
            ``None``: the kernel's default block.
        rounds: a list that gets the number of Borůvka rounds appended (Triton only).

    Returns:
        ``(children int64 [n-1, 2], heights float64 [n-1])`` as numpy arrays, in join order,
        the same on every backend.
    """
    device = dist.device if isinstance(dist, torch.Tensor) else torch.device("cpu")
    if resolve_backend(backend, device) == "cpu":
        host = dist.cpu().numpy() if isinstance(dist, torch.Tensor) else dist
        return cpu_tree.single_linkage(host)
    from torchmsa._triton import linkage as kernels

    d = torch.as_tensor(dist).to(torch.float64).contiguous()
    n = d.shape[0]
    if n < 2:
        if rounds is not None:
            rounds.append(0)
        return cpu_tree.spanning_joins(np.empty(0), np.empty(0), np.empty(0))
    parent = np.arange(n)  # the host's union-find; roots are each set's smallest leaf
    comp = torch.arange(n, dtype=torch.int32, device=d.device)
    edges: list[np.ndarray] = []
    found = 0
    while found < n - 1:
        chosen = kernels.boruvka_round(d, comp, block or kernels.BLOCK, num_warps)
        if chosen.shape[0] == 0:  # only an unchecked matrix (NaN, inf) gets here
            raise ValueError("single_linkage needs finite distances (check them first)")
        lo, hi = chosen // n, chosen % n
        comp.copy_(torch.from_numpy(cpu_tree.merge_components(parent, lo, hi)))
        edges.append(chosen)
        found += chosen.shape[0]
    if rounds is not None:
        rounds.append(len(edges))
    keys = np.concatenate(edges)
    w = d.view(-1)[torch.from_numpy(keys).to(d.device)].cpu().numpy()
    return cpu_tree.spanning_joins(keys // n, keys % n, w)
