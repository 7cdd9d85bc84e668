"""Identity-based sequence weights and the effective number of sequences (Neff).

``w_i = 1 / |{j : id(i, j) >= theta}|``, the row itself always counted (so ``0 < w_i <= 1``),
with ``id`` one of :data:`torchmsa.features.identity.DEFINITIONS`; ``Neff = sum_i w_i``, and
with ``normalize=True`` ``Neff / sqrt(L)`` for an alignment of ``L`` columns. Thresholds in
use include 0.62, 0.8 (the most common) and 0.9; for the weights of DCA-style models pass
``definition="hamming"`` (identity over all columns, a gap as a state).

The N x N identities are never stored: each tile on or above the diagonal adds its threshold
hits to the counts of both its row blocks, and several thresholds share one pass.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from torchmsa.config import MemoryBudget
from torchmsa.errors import ArgumentError
from torchmsa.features.identity import PairIdentity

__all__ = ["sequence_weights", "neff"]


def _thetas(theta) -> tuple[torch.Tensor, bool]:
    single = not isinstance(theta, Sequence) and not isinstance(theta, torch.Tensor)
    values = [float(t) for t in ([theta] if single else list(theta))]
    bad = [t for t in values if not 0.0 <= t <= 1.0 or math.isnan(t)]
    if not values or bad:
        raise ArgumentError(
            f"Invalid value for `theta` argument: {theta!r}; use identity thresholds in 0..1 "
            f"(e.g. 0.8, or [0.62, 0.8, 0.9])"
        )
    return torch.tensor(values, dtype=torch.float64), single


def sequence_weights(
    codes: torch.Tensor,
    gap_code: int,
    theta: float | Sequence[float] = 0.8,
    *,
    definition: str = "aligned",
    budget: MemoryBudget | int | None = None,
    compute_dtype: torch.dtype | None = None,
) -> torch.Tensor:
    """Sequence weights ``1 / |{j : id(i, j) >= theta}|`` (module docstring).

    Arguments:
        codes: ``[N, C]`` residue codes, ``gap_code`` for gaps.
        gap_code: the alphabet's gap code.
        theta: an identity threshold, or several (one pass computes them all).
        definition: the identity (:data:`~torchmsa.features.identity.DEFINITIONS`).
        budget: the memory the identity tiles may use.
        compute_dtype: dtype of the one-hot products (``None``: int8 on the CPU, float16 on CUDA).

    Returns:
        ``float64 [N]``, or ``[T, N]`` for ``T`` thresholds, on the codes' device.

    >>> c = torch.tensor([[0, 1, 2], [0, 1, 3], [4, 5, 6]])
    >>> sequence_weights(c, 27, 0.6).tolist()
    [0.5, 0.5, 1.0]
    """
    thetas, single = _thetas(theta)
    n = codes.shape[0]
    t_count = thetas.numel()
    pairs = PairIdentity(
        codes,
        gap_code,
        definition,
        budget=budget,
        compute_dtype=compute_dtype,
        reserve=16 * t_count * n,
        pair_bytes=t_count,
    )
    thetas = thetas.to(codes.device)[:, None, None]
    counts = torch.ones((t_count, n), dtype=torch.int64, device=codes.device)
    for i0, i1, j0, j1, ident in pairs.tiles(symmetric=True):
        hit = ident[None] >= thetas  # [T, bi, bj]
        if i0 == j0:
            diag = torch.arange(i1 - i0, device=codes.device)
            hit[:, diag, diag] = False
            counts[:, i0:i1] += hit.sum(2)
        else:
            counts[:, i0:i1] += hit.sum(2)
            counts[:, j0:j1] += hit.sum(1)
    weights = 1.0 / counts.double()
    return weights[0] if single else weights


def neff(
    codes: torch.Tensor,
    gap_code: int,
    theta: float | Sequence[float] = 0.8,
    *,
    normalize: bool = False,
    definition: str = "aligned",
    budget: MemoryBudget | int | None = None,
    compute_dtype: torch.dtype | None = None,
) -> torch.Tensor:
    """The effective number of sequences, ``sum_i w_i`` (divided by ``sqrt(L)`` when
    ``normalize``); arguments as :func:`sequence_weights`.

    Returns:
        ``float64`` scalar tensor, or ``[T]`` for ``T`` thresholds.
    """
    w = sequence_weights(
        codes,
        gap_code,
        theta,
        definition=definition,
        budget=budget,
        compute_dtype=compute_dtype,
    )
    total = w.sum(-1)
    if normalize:
        total = total / math.sqrt(max(codes.shape[1], 1))
    return total
