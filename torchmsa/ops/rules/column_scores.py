"""Profile column scores, exact (:mod:`torchmsa.cpu.rules.column_scores` is the numba twin).

The score of column i of profile a against column j of b is the weighted mean substitution
score over all pairs of their sequences, gaps scoring 0: ``P_a[i] M P_b[j]ᵀ / (w_a w_b)``,
except that a column whose residue weight ``r`` is below ``w / 2^occ_shift`` counts as if its
residue fraction were ``2^-occ_shift``: its divisor is ``min(w, r 2^occ_shift)``
(:func:`occupancy_divisors`), not ``w``. Scores are integers (floors), and without the floor
two sparse columns of large profiles (one residue each among thousands of sequences) score
below one unit: 0 or -1 whatever their residues, so the DP could not tell a good pairing of
rare long sequences from a bad one. The gap costs facing such columns take the same floor
(:mod:`.gap_costs`, :mod:`.residue_factors`), so inside a sparse region the DP is a pairwise
alignment at ``2^(-2 occ_shift)`` of full scale instead of vanishing: with ``occ_shift`` 5 and
the pipeline's 256 units per matrix unit, a quarter of a matrix unit. Columns at or above the
floor score as before.
"""

from __future__ import annotations

import torch

from torchmsa.constants import OCC_SHIFT

__all__ = ["occupancy_divisors", "column_scores"]


def occupancy_divisors(row_sums: torch.Tensor, w, occ_shift: int = OCC_SHIFT) -> torch.Tensor:
    """``float64``: each column's divisor ``min(w, r 2^occ_shift)`` (at least 1), from its
    residue weight ``r`` (``row_sums``, exact integers) and its profile's weight ``w`` (a number
    or a tensor broadcasting against ``row_sums``)."""
    w = torch.as_tensor(w, dtype=torch.float64, device=row_sums.device)
    return torch.minimum(row_sums * float(1 << occ_shift), w).clamp_min_(1.0)


def column_scores(
    prof_a: torch.Tensor,
    prof_b: torch.Tensor,
    matrix: torch.Tensor,
    w_a: int,
    w_b: int,
    occ_shift: int = OCC_SHIFT,
) -> torch.Tensor:
    """``int32 [Ca, Cb]``: ``floor(P_a M P_bᵀ / (d_a d_b))`` with the columns' divisors
    ``d = min(w, r 2^occ_shift) <= w`` (:func:`occupancy_divisors`), exactly.

    ``prof_a``, ``prof_b`` hold integer weight sums (float64 [C, A]) and ``matrix`` integers
    (float64 [A, A], entries below 2^13); with ``w_a + w_b <= 2^20`` every product and partial
    sum is an integer below 2^51, so the float64 matrix product is exact in any summation order,
    and so is ``d_a d_b <= w_a w_b <= 2^38``. The quotient is below 2^13 in magnitude (``r / d
    <= 1``), so its rounding error is below 2^-40, while a non-integer quotient lies at least
    ``1 / (d_a d_b) >= 2^-38`` from an integer: ``floor`` of the correctly rounded division is
    the exact floor on every IEEE device. Divisors are tensors on the product's device:
    PyTorch's CUDA division by a CPU scalar multiplies by the reciprocal instead, which is not
    always the correctly rounded quotient.
    """
    raw = (prof_a @ matrix) @ prof_b.T
    d_a = occupancy_divisors(prof_a.sum(1), int(w_a), occ_shift)
    d_b = occupancy_divisors(prof_b.sum(1), int(w_b), occ_shift)
    return torch.floor(raw.div_(d_a[:, None] * d_b[None, :])).to(torch.int32)
