"""Boundary gap costs: a new gap at a profile boundary opens a gap in exactly the sequences
with residues on both sides of it, so it costs ``gap_open`` times their share of the weight,
half paid where the gap opens and half where it closes (:mod:`torchmsa.cpu.rules.gap_costs`
is the numba twin)."""

from __future__ import annotations

import torch

from torchmsa.constants import OCC_SHIFT


def gap_costs(
    both: torch.Tensor,
    group_w: torch.Tensor,
    ends: torch.Tensor,
    gap_open: int,
    terminal: tuple[int, int],
    occ_shift: int = OCC_SHIFT,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(opening, closing) int32 [B]`` halves of the gap costs of profile boundaries.

    Arguments:
        both: ``int64 [B]`` weight of the sequences with residues on both sides of each
            boundary.
        group_w: ``int64 [B]`` total weight of the boundary's profile.
        ends: ``bool [B]`` True at a profile's first and last boundary (terminal gaps, which
            cost ``terminal[0] / terminal[1]`` of the inner cost).
        gap_open: DP units for opening a gap in every sequence of a profile.
        occ_shift: a boundary that some but fewer than ``group_w / 2^occ_shift`` of the weight
            crosses costs as if that much did (the occupancy floor of
            :mod:`torchmsa.ops.rules.column_scores`).
    """
    both = torch.where(both > 0, torch.maximum(both, group_w >> occ_shift), both)
    cost = (gap_open * both) // group_w
    num, den = terminal
    cost = torch.where(ends, cost * num // den, cost).to(torch.int32)
    close = cost // 2
    return cost - close, close
