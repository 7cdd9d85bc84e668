"""Where paths take each column of the profiles they align (:mod:`torchmsa.cpu.rules.
path_columns` is the numba twin, one path at a time)."""

from __future__ import annotations

import torch

from torchmsa.constants import OP_LEFT, OP_UP


def path_columns(
    ops: torch.Tensor, step: torch.Tensor, valid: torch.Tensor, n_first: int, size: int
) -> torch.Tensor:
    """``int64 [size + 1]``: the step of its path that takes each column of the paths' first
    profiles (columns ``0 .. n_first - 1``, path after path), then of their second profiles;
    the last entry is scratch.

    Arguments:
        ops: ``uint8 [T]`` the paths, one after another (with padding).
        step: ``int64 [T]`` each op's step within its path.
        valid: ``bool [T]`` False on padding.
        n_first: the first profiles' columns together.
        size: all profiles' columns together.
    """
    slot = torch.empty(size + 1, dtype=torch.int64, device=ops.device)
    for take, base in ((ops != OP_LEFT, 0), (ops != OP_UP, n_first)):
        take = valid & take
        slot[torch.where(take, base + torch.cumsum(take, 0) - 1, size)] = step
    return slot
