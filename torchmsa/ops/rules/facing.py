"""A gap cost facing a column pays the residue fraction of that column: a gap against a gap
costs nothing (:mod:`torchmsa.cpu.rules.facing` is the numba twin)."""

from __future__ import annotations

import torch

from torchmsa.constants import RES_SHIFT


def facing(cost: torch.Tensor, res: torch.Tensor) -> torch.Tensor:
    """``int64``: ``(cost * res) >> RES_SHIFT`` elementwise (``res`` in units of ``1 /
    RES_ONE``)."""
    return (cost.long() * res.long()) >> RES_SHIFT
