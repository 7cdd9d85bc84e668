"""Running a group of jobs that share an alphabet, a mode, a place and a matrix offset: fast
mode's one progressive pass, default mode's second pass under a tree from the first alignment
and its refinement, or accurate mode (:mod:`torchmsa.pipeline.accurate`)."""

from __future__ import annotations

import torch

from torchmsa.config import AlignConfig, ExecutionPolicy, MemoryBudget
from torchmsa.pipeline.jobs import concat, tree_weights
from torchmsa.pipeline.modes import linkage, second_pass
from torchmsa.pipeline.progress import ProgressBar
from torchmsa.pipeline.trees import alignment_tree, first_tree
from torchmsa.progressive import Forest, ResidueTable, progressive_align
from torchmsa.refine import refine
from torchmsa.sequences import SequenceBatch

__all__ = ["align_group", "along_tree", "progressive_jobs", "refine_jobs"]


def align_group(
    batches: list[SequenceBatch],
    mode: str,
    firsts: list[str],
    scoring,
    impl: str,
    bar: ProgressBar,
    host_small: bool = False,
    *,
    config: AlignConfig | None = None,
    policy: ExecutionPolicy | None = None,
    budget: MemoryBudget | None = None,
    trees: list | None = None,
    ranks=None,
) -> list[tuple[torch.Tensor, object, dict]]:
    """Align jobs that share an alphabet and a mode, each under its first-tree method
    (``firsts``); returns (codes, tree, extra metadata) each. ``host_small``: accurate mode's
    set-aside ends go to the host when small (:func:`~torchmsa.pipeline.accurate.end_block`).
    ``trees``: first trees already built (``None`` entries: built here by the method).
    ``ranks``: a session whose ranks share PartTree's groups and the progressive passes
    (every rank passes the same jobs; accurate mode and refinement run on every rank)."""
    config = AlignConfig() if config is None else config
    method = linkage(config.tree.method)
    stage = {"config": config, "policy": policy, "budget": budget}
    if mode == "accurate":  # its consistency library's modules load only for it
        from torchmsa.pipeline.accurate import accurate_group

        return accurate_group(batches, scoring, method, impl, bar, host_small, **stage)
    gap = batches[0].alphabet.gap_code
    given = [None] * len(batches) if trees is None else trees
    trees = [
        None
        if len(b) < 2
        else t
        if t is not None
        else first_tree(b, f, impl, config=config.tree, policy=policy, budget=budget, ranks=ranks)
        for b, f, t in zip(batches, firsts, given)
    ]
    shared = {"policy": policy, "budget": budget, "ranks": ranks}
    done = progressive_jobs(batches, trees, scoring, impl, bar.step, **shared)
    extra: list[dict] = [{} for _ in batches]
    again = [j for j, f in enumerate(firsts) if second_pass(mode, f)]
    if again:
        retrees = [
            alignment_tree(done[j][0], gap, method, batches[j].names, policy=policy, budget=budget)
            if len(batches[j]) > 1
            else None
            for j in again
        ]
        redone = progressive_jobs(
            [batches[j] for j in again],
            retrees,
            scoring,
            impl,
            bar.step,
            **shared,
        )
        for j, t, r in zip(again, retrees, redone):
            trees[j], done[j] = t, r
    rounds = config.refine.rounds_default if mode == "default" else 0
    refine_jobs(done, batches, trees, extra, scoring, rounds, impl, config, policy, budget)
    return [(codes, tree, e) for (codes, _), tree, e in zip(done, trees, extra)]


def along_tree(
    batches: list[SequenceBatch],
    trees: list,
    mode: str,
    scoring,
    impl: str,
    progress,
    *,
    config: AlignConfig | None = None,
    policy: ExecutionPolicy | None = None,
    budget: MemoryBudget | None = None,
    ranks=None,
) -> list[tuple[torch.Tensor, object, dict]]:
    """Jobs aligned along the guide trees they were given: one progressive pass (shared by
    ``ranks``, as :func:`align_group`), then the mode's refinement rounds (default:
    ``rounds_default``, accurate: ``rounds_accurate``, without a consistency library);
    ``(codes, tree, extra metadata)`` each."""
    config = AlignConfig() if config is None else config
    done = progressive_jobs(
        batches, trees, scoring, impl, progress, policy=policy, budget=budget, ranks=ranks
    )
    extra: list[dict] = [{"tree": "given"} for _ in batches]
    rounds = {"default": config.refine.rounds_default, "accurate": config.refine.rounds_accurate}
    rounds = rounds.get(mode, 0)
    refine_jobs(done, batches, trees, extra, scoring, rounds, impl, config, policy, budget)
    return [(codes, tree, e) for (codes, _), tree, e in zip(done, trees, extra)]


def refine_jobs(done, batches, trees, extra, scoring, rounds, impl, config, policy, budget) -> None:
    """``rounds`` of refinement of each job in ``done`` (``(codes, weights)``, replaced in
    place) up to ``config.refine.max_n`` sequences; the edges applied go to ``extra``."""
    if not rounds:
        return
    gap = batches[0].alphabet.gap_code
    for j, (b, t) in enumerate(zip(batches, trees)):
        if t is not None and len(b) <= config.refine.max_n:
            codes, applied = refine(
                done[j][0],
                t,
                done[j][1],
                scoring,
                gap,
                rounds,
                impl,
                config=config.refine,
                policy=policy,
                budget=budget,
            )
            done[j] = (codes, done[j][1])
            extra[j]["refined_edges"] = applied


def progressive_jobs(
    batches: list[SequenceBatch],
    trees: list,
    scoring,
    backend: str,
    progress,
    *,
    policy: ExecutionPolicy | None = None,
    budget: MemoryBudget | None = None,
    ranks=None,
) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """One level-batched progressive pass over every job; each job's codes and weights.
    ``ranks``: a session whose ranks share the pass (:mod:`~torchmsa.progressive.shared`)."""
    sizes = [len(b) for b in batches]
    codes, lengths = concat(batches)
    weights = tree_weights(trees)
    table = ResidueTable.from_batch(codes, lengths)
    forest = Forest.from_trees(trees, sizes)
    where = {"policy": policy, "budget": budget, "ranks": ranks}
    widths = progressive_align(table, lengths, forest, weights, scoring, backend, progress, **where)
    out, first = [], 0
    gap = batches[0].alphabet.gap_code
    for n, width in zip(sizes, widths):
        out.append((table.codes_matrix(first, n, width, gap), weights[first : first + n]))
        first += n
    return out
