"""LCS lengths of all pairs and FAMSA's LCS distance: the dispatcher.

The guide tree ``tree="lcs"`` (single linkage on these distances) follows FAMSA (Deorowicz et
al. 2016): similarity ``LCS / indel`` with ``indel = |a| + |b| - 2 LCS``. Single linkage depends
only on the order of the distances, so any decreasing function of that similarity gives the same
tree; the one used here is ``indel / (indel + LCS)``, in ``[0, 1]`` and 0 for equal sequences.
"""

from __future__ import annotations

import torch

from torchmsa.config import MemoryBudget
from torchmsa.cpu import lcs as cpu_lcs
from torchmsa.ops.backend import budget_bytes, resolve_backend

__all__ = ["lcs_lengths", "lcs_distances"]


def lcs_lengths(
    codes: torch.Tensor,
    lengths: torch.Tensor,
    backend: str = "auto",
    *,
    budget: MemoryBudget | int | None = None,
) -> torch.Tensor:
    """``int32 [N, N]`` LCS lengths of every pair, on the device of ``codes``.

    Arguments:
        codes: ``uint8 [N, L]`` residue codes (positions past a sequence's length ignored).
        lengths: ``int [N]`` sequence lengths.
        backend: ``"auto"``, ``"cpu"`` (numba, ``torchmsa/cpu/lcs.py``) or ``"triton"``
            (``triton_kernels/lcs.py``); both give the same integers.
        budget: the memory the Triton backend may use (bytes or a
            :class:`~torchmsa.config.MemoryBudget`; ``None``: the default one).
    """
    if resolve_backend(backend, codes.device) == "triton":
        from torchmsa._triton import lcs as triton_lcs

        limit = budget_bytes(budget, codes.device)
        return triton_lcs.lcs_lengths(codes, lengths.to(codes.device), budget=limit)
    return cpu_lcs.lcs_lengths(codes, lengths).to(codes.device)


def lcs_distances(lcs: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """``float64 [N, N]`` distances ``indel / (indel + LCS)`` from :func:`lcs_lengths`.

    ``indel + LCS = |a| + |b| - LCS`` is 0 only for two empty sequences, whose distance is 0;
    an empty sequence is at distance 1 from any other. The diagonal is 0.
    """
    lens = lengths.to(device=lcs.device, dtype=torch.float64)
    dist = lcs.to(torch.float64)
    union = lens[:, None] + lens[None, :]
    union -= dist
    dist.sub_(union).neg_()  # indel = union - LCS; two N x N buffers in all
    dist /= union.clamp_min_(1.0)
    dist.fill_diagonal_(0.0)
    return dist
