"""Two groups of an alignment merged along a path (:mod:`torchmsa.cpu.rules.apply_path` is
the numba twin)."""

from __future__ import annotations

import torch

from torchmsa.constants import OP_LEFT, OP_UP


def apply_path(
    codes: torch.Tensor, side: torch.Tensor, ops: torch.Tensor, gap: int
) -> torch.Tensor:
    """``[N, len(ops)]``: ``codes`` with the rows of ``side`` (group A) and the others (group B),
    each without its all-gap columns, merged along the path ``ops``, on ``codes``' device."""
    ops = ops.to(codes.device)
    res = codes != gap
    rows_a = torch.nonzero(side).squeeze(1)
    rows_b = torch.nonzero(~side).squeeze(1)
    keep_a, keep_b = res[rows_a].any(0), res[rows_b].any(0)
    width = ops.numel()
    out = torch.full((codes.shape[0], width), gap, dtype=codes.dtype, device=codes.device)
    pos = torch.arange(width, device=codes.device)
    pos_a, pos_b = pos[ops != OP_LEFT], pos[ops != OP_UP]
    out[rows_a[:, None], pos_a[None, :]] = codes[rows_a][:, keep_a]
    out[rows_b[:, None], pos_b[None, :]] = codes[rows_b][:, keep_b]
    return out
