"""Profile-profile alignment of two given alignments, each one's columns kept as blocks.

Two alignments side by side (A's rows over A's columns, B's rows over B's columns) are one
alignment of two groups; realigning the groups is what refinement does for a tree edge
(:func:`torchmsa.refine.evaluate_partitions`: the same profiles, boundary gap costs, residue
factors and batched DP as every other profile merge), and the path is applied by
:func:`torchmsa.refine.merge_groups`. Columns that are gaps in every row of their alignment
hold nothing and do not survive (as in refinement).

With a pairwise scoring (``local``), the column scores also hold a consistency tile, as in
accurate mode's refinement: every sequence of A is aligned with every sequence of B
(:func:`cross_library`), and the residue pairs those alignments agree on raise the scores of
the column pairs that hold them (decision 0035: on very divergent families two profiles alone
misplace blocks that the pairwise alignments place).
"""

from __future__ import annotations

import torch

from torchmsa.config import ConsistencyConfig, ExecutionPolicy, MemoryBudget
from torchmsa.consistency import Library, LocalScoring, entry_values, local_library
from torchmsa.progressive import ProfileScoring
from torchmsa.refine import evaluate_partitions, merge_groups
from torchmsa.refine.evaluate import State
from torchmsa.stages import stage

__all__ = ["MERGE_CONSISTENCY_WEIGHT", "side_by_side", "ungapped", "cross_library", "merge_codes"]

# DP units per unit of consistency in a merge (accurate mode uses ConsistencyConfig.weight, 64);
# chosen on the odd BAliBASE cases of benchmarks/add_merge.py, confirmed on the even ones
MERGE_CONSISTENCY_WEIGHT = 128


def side_by_side(codes_a: torch.Tensor, codes_b: torch.Tensor, gap: int) -> torch.Tensor:
    """``uint8 [Ra + Rb, Ca + Cb]``: A's rows over its columns, then B's over its own."""
    ra, ca = codes_a.shape
    rb, cb = codes_b.shape
    out = torch.full((ra + rb, ca + cb), gap, dtype=codes_a.dtype, device=codes_a.device)
    out[:ra, :ca] = codes_a
    out[ra:, ca:] = codes_b.to(codes_a.device)
    return out


def ungapped(codes: torch.Tensor, gap: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``(uint8 [R, Lmax], int32 [R])``: each row's residues in order, padded with ``gap``."""
    res = codes != gap
    lengths = res.sum(1)
    width = int(lengths.max()) if codes.shape[0] else 0
    # a stable sort of "is a gap" moves each row's residues to its front, in order
    order = torch.sort((~res).to(torch.uint8), dim=1, stable=True).indices[:, :width]
    out = torch.gather(codes, 1, order)
    pos = torch.arange(width, device=codes.device)
    out = torch.where(pos[None] < lengths[:, None], out, torch.full_like(out, gap))
    return out.to(torch.uint8), lengths.to(torch.int32)


def cross_library(
    codes: torch.Tensor,
    n_a: int,
    local: LocalScoring,
    backend: str,
    *,
    config: ConsistencyConfig | None = None,
    policy: ExecutionPolicy | None = None,
    budget: MemoryBudget | None = None,
) -> Library:
    """The consistency library (accurate mode's, :func:`~torchmsa.consistency.local_library`)
    of the rows of ``codes`` (``uint8 [R, C]``, A's ``n_a`` rows first), keeping only the
    entries that pair a sequence of A with one of B: the only ones a merge of A and B reads."""
    seqs, lengths = ungapped(codes, local.gap_code)
    lib = local_library(
        seqs,
        lengths,
        local.matrix,
        local.gap_open,
        local.gap_extend,
        backend,
        config=config,
        policy=policy,
        budget=budget,
    )
    cross = (lib.x < n_a) & (lib.y >= n_a)
    return Library(lib.x[cross], lib.i[cross], lib.y[cross], lib.j[cross], lib.w[cross], lib.dist)


def merge_codes(
    codes_a: torch.Tensor,
    weights_a: torch.Tensor,
    codes_b: torch.Tensor,
    weights_b: torch.Tensor,
    scoring: ProfileScoring,
    gap: int,
    n_alpha: int,
    backend: str,
    *,
    local: LocalScoring | None = None,
    consistency: ConsistencyConfig | None = None,
    consistency_weight: int = MERGE_CONSISTENCY_WEIGHT,
    policy: ExecutionPolicy | None = None,
    budget: MemoryBudget | None = None,
) -> torch.Tensor:
    """The merged codes ``uint8 [Ra + Rb, W]``, A's rows first.

    Arguments:
        codes_a, codes_b: the alignments (``uint8``, the gap code for gaps), one device.
        weights_a, weights_b: ``int64`` integer sequence weights; both groups' together at
            most 2^20 (the exactness bound of the column scores).
        scoring: the profile scoring; gap: the gap code; n_alpha: the alphabet's size.
        backend: DP backend.
        local: the pairwise scoring of a consistency library between A's and B's sequences
            (:func:`cross_library`), whose tile joins the column scores with
            ``consistency_weight`` DP units per unit; ``None``: profile scores only.
        consistency: the library entries' weights (``None``: the default
            :class:`~torchmsa.config.ConsistencyConfig`; its ``weight`` is accurate mode's,
            not read here).
        policy, budget: as everywhere (never change the result).
    """
    with stage("merge_profiles"):
        device = codes_a.device
        both = side_by_side(codes_a, codes_b, gap)
        live = (both != gap).any(0)
        if not bool(live.any()):
            return both[:, :0]
        both = both[:, live]
        weights = torch.cat([weights_a, weights_b]).to(device=device, dtype=torch.int64)
        side = torch.zeros(both.shape[0], dtype=torch.bool, device=device)
        side[: codes_a.shape[0]] = True
        if not bool((both[side] != gap).any()) or not bool((both[~side] != gap).any()):
            return both  # one side has no residues: nothing to align
        lib = lib_val = None
        weight = 0
        if local is not None:
            lib = cross_library(
                both,
                codes_a.shape[0],
                local,
                backend,
                config=consistency or ConsistencyConfig(),
                policy=policy,
                budget=budget,
            )
            lib_val = entry_values(lib, weights)
            weight = int(consistency_weight)
        state = State(both, weights, gap, n_alpha, lib, lib_val)
        _, _, _, ops = evaluate_partitions(
            state, side[None], scoring, backend, weight, policy=policy, budget=budget
        )
        return merge_groups(both, side, ops[0], gap).to(device)
