"""A consistency tile joins the column scores: each cell that library entries touch gains
``floor(weight * (sum of their values) / denom)``, an integer, so the sum's order never matters
(:mod:`torchmsa.cpu.rules.consistency_tile` is the numba twin)."""

from __future__ import annotations

import torch


def add_tile(
    S: torch.Tensor, cell: torch.Tensor, value: torch.Tensor, weight: int, denom: torch.Tensor
) -> None:
    """Adds the entries' tile to the packed scores ``S`` (``int32``), in place.

    Arguments:
        cell: ``int64 [E]`` each entry's index in ``S``.
        value: ``int64 [E]`` each entry's value (``w w_x w_y``).
        weight: DP units per unit of consistency.
        denom: ``int64 [E]`` the denominator of each entry's cell (its pair's weight product;
            equal for all entries of one cell).
    """
    cells, inv = torch.unique(cell, return_inverse=True)
    acc = torch.zeros(cells.numel(), dtype=torch.int64, device=S.device)
    acc.index_add_(0, inv, value)
    d = torch.ones(cells.numel(), dtype=torch.int64, device=S.device)
    d[inv] = denom
    S[cells] += torch.div(acc * int(weight), d, rounding_mode="floor").to(torch.int32)
