"""Accurate mode (L-INS-i style): all-pairs local alignments -> consistency library -> tree ->
progressive pass with consistency -> refinement, with terminal extensions that a sequence's
partners lack set aside and put back as blocks before and after the alignment."""

from __future__ import annotations

import dataclasses

import torch

from torchmsa.config import AlignConfig, ConsistencyConfig, ExecutionPolicy, MemoryBudget
from torchmsa.consistency import Consistency, LocalScoring, local_library, terminal_trims
from torchmsa.consistency.extend import extend_library
from torchmsa.pipeline.jobs import concat, tree_weights
from torchmsa.pipeline.placement import host_job
from torchmsa.pipeline.progress import ProgressBar
from torchmsa.progressive import Forest, ResidueTable, progressive_align
from torchmsa.refine import refine
from torchmsa.scoring import get_scoring
from torchmsa.sequences import SequenceBatch, segments
from torchmsa.stages import stage
from torchmsa.tree import build_tree

__all__ = ["accurate_group", "library", "local_scoring", "cut_ends", "end_block"]


def accurate_group(
    batches: list[SequenceBatch],
    scoring,
    method: str,
    impl: str,
    bar: ProgressBar,
    host_small: bool = False,
    *,
    config: AlignConfig | None = None,
    policy: ExecutionPolicy | None = None,
    budget: MemoryBudget | None = None,
) -> list[tuple[torch.Tensor, object, dict]]:
    """Align jobs of one alphabet in accurate mode; (codes, tree, extra metadata) each.

    Each job's library gives its tree (``method``'s linkage) and the terminal extensions to set
    aside (:func:`~torchmsa.consistency.terminal_trims`); the cut jobs share one progressive
    pass with consistency, each is refined, and each end's stretches are aligned among
    themselves and put back as a block before (after) the alignment (:func:`end_block`, which
    ``host_small`` is passed to).
    """
    config = AlignConfig() if config is None else config
    cons_config = config.consistency
    run = {"policy": policy, "budget": budget}
    gap = batches[0].alphabet.gap_code
    protein = not batches[0].alphabet.is_nucleotide
    local = local_scoring(batches[0].alphabet, config=cons_config)
    libs, trees, cuts, ends = [], [], [], []
    for b in batches:
        lib = library(b, local, impl, config=cons_config, policy=policy, budget=budget)
        with stage("first_tree"):
            trees.append(build_tree(lib.dist, method, b.names) if len(b) > 1 else None)
        head = tail = torch.zeros(len(b), dtype=torch.int64)
        if protein:  # the E-values need the protein scoring's Karlin-Altschul parameters
            head, tail = terminal_trims(
                lib, b.codes, b.lengths, local, cons_config.trim_min, impl, policy=policy
            )
        ends.append((head, tail))
        if head.any() or tail.any():
            b = cut_ends(b, head, tail)
            lib = lib.trimmed(head.to(lib.x.device), b.lengths.to(lib.x.device).long())
        if cons_config.extend_share[0]:
            share, top = cons_config.extend_share, cons_config.weight_max
            lib = extend_library(lib, b.lengths, share, top, budget)
        cuts.append(b)
        libs.append(lib)
    sizes = [len(b) for b in batches]
    codes, lengths = concat(cuts)
    weights = tree_weights(trees).to(codes.device)
    forest = Forest.from_trees(trees, sizes)
    cons = Consistency(libs, trees, sizes, forest, config=cons_config)
    table = ResidueTable.from_batch(codes, lengths)
    widths = progressive_align(
        table, lengths, forest, weights, scoring, impl, bar.step, cons, **run
    )
    out, first = [], 0
    for b, lib, tree, width, (head, tail) in zip(batches, libs, trees, widths, ends):
        job = table.codes_matrix(first, len(b), width, gap)
        w = weights[first : first + len(b)]
        extra = {"library_entries": len(lib), "set_aside": int(head.sum() + tail.sum())}
        if tree is not None and len(b) > 2:
            rounds, weight = config.refine.rounds_accurate, cons_config.weight
            job, extra["refined_edges"] = refine(
                job, tree, w, scoring, gap, rounds, impl, lib, weight, config=config.refine, **run
            )
        if extra["set_aside"]:  # the set-aside ends back as blocks before and after
            last = b.lengths.cpu().long() - tail
            before, after = (
                end_block(b, start, count, scoring, method, impl, host_small, config=config, **run)
                for start, count in [(torch.zeros_like(head), head), (last, tail)]
            )
            job = torch.cat([before, job.to(torch.uint8), after], 1)
        out.append((job, tree, extra))
        first += len(b)
    return out


def local_scoring(alphabet, *, config: ConsistencyConfig | None = None) -> LocalScoring:
    """Stage 1's local scoring: ``config.local_matrix`` (NUC.4.4 for nucleotides) with its gap
    costs, and the Karlin-Altschul parameters and E-value of the terminal set-aside."""
    config = ConsistencyConfig() if config is None else config
    name = config.local_matrix if not alphabet.is_nucleotide else "NUC.4.4"
    sc = get_scoring(alphabet, name, config.local_gap_open, config.local_gap_extend)
    mat = torch.from_numpy(sc.matrix.copy())
    lam, k = config.karlin
    return LocalScoring(
        mat, sc.gap_open, sc.gap_extend, alphabet.gap_code, lam, k, config.trim_evalue
    )


def library(
    batch: SequenceBatch,
    local: LocalScoring,
    impl: str,
    *,
    config: ConsistencyConfig | None = None,
    policy: ExecutionPolicy | None = None,
    budget: MemoryBudget | None = None,
):
    """A job's consistency library from its all-pairs local alignments (:func:`local_scoring`);
    :class:`~torchmsa.errors.ResourceError` where it may not fit ``budget``."""
    return local_library(
        batch.codes,
        batch.lengths,
        local.matrix,
        local.gap_open,
        local.gap_extend,
        impl,
        config=config,
        policy=policy,
        budget=budget,
    )


def cut_ends(batch: SequenceBatch, head: torch.Tensor, tail: torch.Tensor) -> SequenceBatch:
    """``batch`` with ``head[s]`` residues cut from each sequence's start and ``tail[s]`` from
    its end (``int64 [N]`` each, every sequence keeping at least one residue if it had any)."""
    dev = batch.codes.device
    kept = batch.lengths.long() - head.to(dev) - tail.to(dev)
    rows = torch.arange(len(batch), device=dev)
    codes = segments(batch.codes, rows, head.to(dev), kept, batch.alphabet.gap_code)
    starts, counts = head.tolist(), kept.tolist()
    residues = [r[a : a + k] for r, a, k in zip(batch.residues, starts, counts)]
    return dataclasses.replace(batch, codes=codes, lengths=kept.int(), residues=residues)


def end_block(
    batch: SequenceBatch,
    start: torch.Tensor,
    count: torch.Tensor,
    scoring,
    method: str,
    impl: str,
    host_small: bool = False,
    *,
    config: AlignConfig | None = None,
    policy: ExecutionPolicy | None = None,
    budget: MemoryBudget | None = None,
) -> torch.Tensor:
    """``uint8 [N, W]``: the pieces ``start[s] .. start[s] + count[s]`` of ``batch``'s sequences
    that have one, aligned among themselves in accurate mode (a subfamily may share them); rows
    without a piece are all gaps. ``host_small`` (GPU work under the automatic backend, as in
    :func:`~torchmsa.align_many`): pieces that make a host-sized job
    (:func:`~torchmsa.pipeline.placement.host_job`) are aligned on the host whatever
    ``batch``'s device (the same alignment, without a GPU's launches)."""
    dev, gap = batch.codes.device, batch.alphabet.gap_code
    rows = torch.nonzero(count > 0)[:, 0]
    if rows.numel() == 0:
        return torch.full((len(batch), 0), gap, dtype=torch.uint8, device=dev)
    at, size = start.to(dev)[rows.to(dev)], count.to(dev)[rows.to(dev)]
    codes = segments(batch.codes, rows.to(dev), at, size, gap)
    if rows.numel() == 1:
        job = codes
    else:
        keep = rows.tolist()
        pieces = SequenceBatch(
            [batch.names[r] for r in keep],
            [batch.descriptions[r] for r in keep],
            [batch.residues[r][a : a + k] for r, a, k in zip(keep, at.tolist(), size.tolist())],
            codes,
            size.int(),
            batch.alphabet,
        )
        longest = int(pieces.lengths.max())
        if host_small and host_job(len(pieces), longest, "accurate", policy=policy):
            pieces, impl = pieces.to(torch.device("cpu")), "cpu"
        bar = ProgressBar(0, False)
        job = accurate_group(
            [pieces],
            scoring,
            method,
            impl,
            bar,
            host_small,
            config=config,
            policy=policy,
            budget=budget,
        )[0][0]
    block = torch.full((len(batch), job.shape[1]), gap, dtype=torch.uint8, device=dev)
    block[rows.to(dev)] = job.to(device=dev, dtype=torch.uint8)
    return block
