"""Identical and aligned residue pairs of every two rows of an alignment: the dispatcher.

On a GPU, exact integer counts from float64 matrix products over one-hot blocks of columns; on
the CPU, the numba twin :mod:`torchmsa.cpu.identity` (direct comparisons, the same integers).
"""

from __future__ import annotations

import torch

from torchmsa.config import ExecutionPolicy
from torchmsa.cpu import identity as cpu_identity

__all__ = ["identity_counts", "identity_counts_products"]


def identity_counts(
    codes: torch.Tensor, gap: int, *, policy: ExecutionPolicy | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(same, pairs)``: ``float64 [n, n]`` integer counts, on the device of ``codes``
    (``uint8 [n, w]``): columns where rows i and j hold the same residue, and where both
    hold residues (codes other than ``gap``, the largest code)."""
    if codes.device.type != "cpu":
        return identity_counts_products(codes, gap, policy=policy)
    same, pairs = cpu_identity.identity_counts(codes.numpy(), gap)
    return torch.from_numpy(same).to(torch.float64), torch.from_numpy(pairs).to(torch.float64)


def identity_counts_products(
    codes: torch.Tensor, gap: int, *, policy: ExecutionPolicy | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`identity_counts` as matrix products on any device, over column blocks of about
    ``policy.retree_block`` one-hot entries."""
    policy = ExecutionPolicy() if policy is None else policy
    n, width = codes.shape
    residue = (codes != gap).to(torch.float64)
    pairs = residue @ residue.T
    same = torch.zeros(n, n, dtype=torch.float64, device=codes.device)
    step = max(1, policy.retree_block // max(1, n * gap))
    for c0 in range(0, width, step):
        block = codes[:, c0 : c0 + step].long()
        hot = torch.nn.functional.one_hot(block, gap + 1)[..., :gap].reshape(n, -1)
        hot = hot.to(torch.float64)
        same += hot @ hot.T
    return same, pairs
