"""Integer profile scoring and sequence weights of the progressive pass and the refinement."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from torchmsa.constants import OCC_SHIFT

__all__ = ["ProfileScoring", "quantize_weights", "WEIGHT_TOTAL"]

WEIGHT_TOTAL = 1 << 19


@dataclass(frozen=True)
class ProfileScoring:
    """Integer profile scoring.

    Attributes:
        matrix: ``int64 [A, A]`` substitution scores in DP units (matrix * scale + offset).
        gap_open: DP units for opening a gap in every sequence of a profile.
        gap_extend: DP units per further gap column.
        terminal: factor (numerator, denominator) on the opening cost at a profile's ends.
        occ_shift: the occupancy floor: columns with under 2^-occ_shift of their profile's
            weight in residues count as if they had that much
            (:mod:`torchmsa.ops.rules.column_scores`).
    """

    matrix: torch.Tensor
    gap_open: int
    gap_extend: int
    terminal: tuple[int, int] = (1, 1)
    occ_shift: int = OCC_SHIFT


def quantize_weights(weights: np.ndarray | torch.Tensor) -> torch.Tensor:
    """Integer weights, each >= 1, summing to about ``WEIGHT_TOTAL``: ``int64 [N]``."""
    w = torch.as_tensor(weights, dtype=torch.float64).clamp_min(0)
    total = float(w.sum())
    if total <= 0:
        w = torch.ones_like(w)
        total = float(w.numel())
    return torch.floor(w * (WEIGHT_TOTAL / total)).to(torch.int64).clamp_min(1)
