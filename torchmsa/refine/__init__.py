"""Iterative refinement by tree-dependent partitioning (seed 000, stage 4).

Every tree edge splits the sequences in two groups (:mod:`.partitions`). Removing one group's
all-gap columns gives two sub-alignments; realigning them with the profile DP can only raise
their group-to-group score (the current alignment is one of the DP's paths). The gain of an
edge is the DP optimum minus the score of the current path, times the groups' weight product
so that gains of different edges are in the same (weighted sum-of-pairs) units.

A round evaluates every edge (:mod:`.placement`: batched on the device, :mod:`.evaluate`, or
edge by edge on the host, :mod:`.host`), applies the best gain, then re-evaluates and applies
the next candidates (up to ``RefineConfig.follow_ups``) one by one against the updated
alignment; rounds repeat until no edge gains or the round cap is reached.
"""

from __future__ import annotations

import numpy as np
import torch

from torchmsa.config import ExecutionPolicy, MemoryBudget, RefineConfig
from torchmsa.cpu.rules.apply_path import apply_path as apply_path_host
from torchmsa.ops.rules.apply_path import apply_path
from torchmsa.progressive import ProfileScoring
from torchmsa.refine.evaluate import evaluate_partitions
from torchmsa.refine.partitions import edge_sides, partitions
from torchmsa.refine.placement import Evaluator
from torchmsa.stages import stage

__all__ = ["refine", "partitions", "evaluate_partitions", "merge_groups"]


def refine(
    codes: torch.Tensor,
    tree,
    weights: torch.Tensor,
    scoring: ProfileScoring,
    gap: int,
    max_rounds: int = 8,
    backend: str = "auto",
    library=None,
    consistency_weight: int = 0,
    *,
    config: RefineConfig | None = None,
    policy: ExecutionPolicy | None = None,
    budget: MemoryBudget | None = None,
) -> tuple[torch.Tensor, int]:
    """Refine ``codes`` (``uint8 [N, C]``); returns the new codes and the edges applied.

    Arguments:
        codes: the alignment.
        tree: the guide tree whose edges give the partitions.
        weights: ``int64 [N]`` quantized sequence weights.
        scoring: the profile scoring (the objective).
        gap: the gap code.
        max_rounds: at most this many rounds (each: one batch over all edges plus follow-ups).
        backend: DP backend.
        library: optional :class:`torchmsa.consistency.Library` of the job: its consistency
            (times ``consistency_weight``) joins the objective (accurate mode).
        config: ``follow_ups`` per round (:class:`~torchmsa.config.RefineConfig`).
        policy: where evaluations run (never changes the result).
        budget: the memory a batched evaluation may plan for.
    """
    with stage("refine"):
        return _refine(
            codes,
            tree,
            weights,
            scoring,
            gap,
            max_rounds,
            backend,
            library,
            consistency_weight,
            config or RefineConfig(),
            policy or ExecutionPolicy(),
            budget or MemoryBudget(),
        )


def _refine(
    codes, tree, weights, scoring, gap, max_rounds, backend, library, cw, config, policy, budget
):
    device = codes.device
    parts = partitions(tree)
    if not parts or not bool((codes != gap).any()):  # no edge, or only empty sequences
        return codes, 0
    sides = edge_sides(parts, codes.shape[0])
    live = (codes != gap).any(0)
    if not bool(live.all()):
        codes = codes[:, live]
    if library is not None and not len(library):
        library = None
    evaluate = Evaluator(device, sides, weights, scoring, gap, backend, library, cw, policy, budget)
    applied = 0
    every = torch.arange(len(parts))
    for _ in range(max_rounds):
        with stage("refine_round"):
            codes, (diffs, w_a, w_b, ops) = evaluate(codes, every)
            gains = [d * a * b for d, a, b in zip(diffs, w_a, w_b)]
            order = [
                k
                for k in np.argsort(-np.asarray(gains, dtype=np.float64), kind="stable")
                if gains[k] > 0
            ]
            if not order:
                break
            codes = merge_groups(codes, sides[order[0]].to(codes.device), ops[order[0]], gap)
            applied += 1
            for k in order[1 : 1 + config.follow_ups]:
                codes, (diff, _, _, one) = evaluate(codes, every[k : k + 1])
                if diff[0] > 0:
                    codes = merge_groups(codes, sides[k].to(codes.device), one[0], gap)
                    applied += 1
    return codes.to(device), applied


def merge_groups(codes: torch.Tensor, side: torch.Tensor, ops: torch.Tensor, gap: int):
    """The alignment with group A (rows of ``side``) and B merged along ``ops``: host codes in
    numba (:func:`torchmsa.cpu.rules.apply_path.apply_path`, the same result without a dozen
    small tensor operations), others with :func:`torchmsa.ops.rules.apply_path.apply_path`."""
    if codes.device.type == "cpu":
        host = np.ascontiguousarray(codes.numpy())
        path = np.ascontiguousarray(ops.cpu().numpy())
        return torch.from_numpy(apply_path_host(host, side.cpu().numpy(), path, gap))
    return apply_path(codes, side, ops, gap)
