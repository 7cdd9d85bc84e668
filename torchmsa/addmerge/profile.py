"""The DP inputs of ``add``: the reference alignment as one profile (every column kept), and
each new sequence as a one-row profile, scored by the progressive pass's rules
(:mod:`torchmsa.ops.rules`): the same column scores, boundary gap costs and residue factors
that aligning this profile with a one-sequence node would use.

A one-row profile's column is a residue, so the column scores of the reference against every
sequence are gathers from one table ``[C, A]``: the reference's columns scored against each
residue as a one-residue profile (:func:`~torchmsa.ops.rules.column_scores.column_scores`
with an identity profile, weight 1), exactly the integers a pairwise profile product gives.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from torchmsa.ops.rules.column_scores import column_scores
from torchmsa.ops.rules.gap_costs import gap_costs
from torchmsa.ops.rules.residue_factors import residue_factors
from torchmsa.progressive import ProfileScoring

__all__ = ["ReferenceProfile", "reference_profile", "sequence_costs", "packed_scores"]


@dataclass(frozen=True)
class ReferenceProfile:
    """The reference alignment as one profile of ``C`` columns.

    Attributes:
        table: ``int32 [C, A]`` column scores of each column against each residue.
        open, close: ``int32 [C + 1]`` halves of each boundary's gap cost.
        res: ``int32 [C + 1]`` residue factors (index k is column k - 1; index 0 unused).
        weight: the reference's total weight.
    """

    table: torch.Tensor
    open: torch.Tensor
    close: torch.Tensor
    res: torch.Tensor
    weight: int


def reference_profile(
    codes: torch.Tensor, weights: torch.Tensor, scoring: ProfileScoring, n_alpha: int, gap: int
) -> ReferenceProfile:
    """The profile of alignment ``codes`` (``uint8 [R, C]``) with integer ``weights``
    (``int64 [R]``), on ``codes``' device."""
    device = codes.device
    n_rows, width = codes.shape
    w = weights.to(device=device, dtype=torch.int64)
    wf = w.to(torch.float64)
    prof = torch.zeros(width, n_alpha, dtype=torch.float64, device=device)
    res = codes != gap
    rows, cols = torch.nonzero(res, as_tuple=True)
    prof.index_put_((cols, codes[rows, cols].long()), wf[rows], accumulate=True)
    total = int(w.sum())
    eye = torch.eye(n_alpha, dtype=torch.float64, device=device)
    matrix = scoring.matrix.to(device=device, dtype=torch.float64)
    table = column_scores(prof, eye, matrix, total, 1, scoring.occ_shift)
    # boundary b lies before column b: a row opens a new gap there when it has residues on
    # both sides of it with no gap between (the outside counts as a residue)
    resl = res.to(torch.int64)
    left = torch.cat([torch.ones(n_rows, 1, dtype=torch.int64, device=device), resl], 1)
    right = torch.cat([resl, torch.ones(n_rows, 1, dtype=torch.int64, device=device)], 1)
    both = (left * right * w[:, None]).sum(0)
    ends = torch.zeros(width + 1, dtype=torch.bool, device=device)
    ends[0] = ends[-1] = True
    group_w = torch.full_like(both, total)
    g_open, g_close = gap_costs(
        both, group_w, ends, scoring.gap_open, scoring.terminal, scoring.occ_shift
    )
    factors = torch.zeros(width + 1, dtype=torch.int32, device=device)
    if width:
        factors[1:] = residue_factors(prof.sum(1), group_w[1:], scoring.occ_shift)
    return ReferenceProfile(table, g_open, g_close, factors, total)


def sequence_costs(
    lengths: torch.Tensor, scoring: ProfileScoring, fragments: bool
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Gap costs of one-row profiles, packed: ``(open, close, res int32 [sum(L + 1)],
    b_off int64 [P])``. A lone sequence has a residue on both sides of each boundary, so
    every inner boundary costs the whole ``gap_open`` and its ends the terminal share;
    ``fragments``: its end gaps are free (the reference's columns hang over a fragment)."""
    device = lengths.device
    sizes = lengths.to(torch.int64) + 1
    b_off = torch.cumsum(sizes, 0) - sizes
    total = int(sizes.sum())
    pos = torch.arange(total, device=device) - torch.repeat_interleave(
        b_off, sizes, output_size=total
    )
    last = torch.repeat_interleave(sizes - 1, sizes, output_size=total)
    ends = (pos == 0) | (pos == last)
    one = torch.ones(total, dtype=torch.int64, device=device)
    g_open, g_close = gap_costs(one, one, ends, scoring.gap_open, scoring.terminal)
    if fragments:
        g_open = torch.where(ends, 0, g_open)
        g_close = torch.where(ends, 0, g_close)
    res = residue_factors(one.to(torch.float64), one, scoring.occ_shift)
    return g_open, g_close, res, b_off


def packed_scores(
    table: torch.Tensor, codes: torch.Tensor, lengths: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(S int32 [sum(C L)], s_off int64 [P])``: each sequence's ``[C, L]`` scores against the
    reference, row-major, packed (``codes uint8 [P, Lmax]``, ``lengths int [P]``). Sequences of
    one length in a row are gathered together (``add`` sorts its batches by length), so no
    padded cell nor per-cell index is ever made."""
    device = codes.device
    width, n_alpha = table.shape
    lens = lengths.to(torch.int64).cpu()
    cells = lens * width
    s_off = torch.cumsum(cells, 0) - cells
    S = torch.empty(int(cells.sum()), dtype=torch.int32, device=device)
    if S.numel() == 0:
        return S, s_off.to(device)
    runs, counts = torch.unique_consecutive(lens, return_counts=True)
    first = 0
    for length, count in zip(runs.tolist(), counts.tolist()):
        if length:
            block = codes[first : first + count, :length].long().clamp_max(n_alpha - 1)
            start = int(s_off[first])
            # [C, count, L] -> [count, C, L]: each sequence's scores row-major, one after another
            vals = table[:, block].permute(1, 0, 2)
            S[start : start + count * width * length].view(count, width, length).copy_(vals)
        first += count
    return S, s_off.to(device)
