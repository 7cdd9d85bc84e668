"""Residue factors: the gap costs facing a column scale with the residue fraction of its
weight, in units of ``1 / RES_ONE`` (:mod:`torchmsa.cpu.rules.residue_factors` is the numba
twin)."""

from __future__ import annotations

import torch

from torchmsa.constants import OCC_SHIFT, RES_ONE


def residue_factors(
    col_weight: torch.Tensor, group_w: torch.Tensor, occ_shift: int = OCC_SHIFT
) -> torch.Tensor:
    """``int32 [C]`` factors ``floor(RES_ONE * column residue weight / group weight)``, at least
    ``RES_ONE >> occ_shift`` (the occupancy floor).

    Arguments:
        col_weight: ``float64 [C]`` weight of the sequences with a residue in each column (an
            exact integer, above 0).
        group_w: ``int64 [C]`` total weight of each column's profile.
    """
    res = col_weight.to(torch.int64) * RES_ONE // group_w
    return res.clamp_min_(RES_ONE >> occ_shift).to(torch.int32)
