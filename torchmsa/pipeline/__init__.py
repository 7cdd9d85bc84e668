"""Modes to stages: :func:`align`, :func:`align_many` and :func:`build_tree`.

=========== ==========================================================================
mode        stages
=========== ==========================================================================
fast        6-mer distances -> guide tree -> one progressive pass; above
            ``TreeConfig.lcs_min_n`` (500) sequences LCS distances -> single linkage (FAMSA's
            guide tree, streamed: no N x N matrix) -> one pass
default     fast, then distances from that alignment -> new tree -> second pass ->
            two rounds of refinement (MAFFT FFT-NS-2 style, plus light refinement); above
            ``lcs_min_n`` sequences as fast (``tree="lcs"`` asks for it at any size)
accurate    all-pairs local alignments -> distances and terminal set-aside; all-pairs
            end-gap-free global alignments -> consistency library -> tree -> progressive
            pass with consistency -> refinement until no edge gains (at most 4 rounds) ->
            set-aside ends back as blocks (MAFFT L-INS-i style)
auto        ``accurate`` up to 200 sequences of at most 2,000 residues, ``default`` up to
            20,000 sequences, ``fast`` with a PartTree guide tree above; the choice is in
            ``Alignment.metadata["mode"]``
=========== ==========================================================================

A call prepares its jobs (:mod:`~torchmsa.pipeline.jobs`: encode, collapse identical sequences
(:mod:`~torchmsa.pipeline.dedupe`), mode, place, offset, first tree), groups them, runs each
group (:mod:`~torchmsa.pipeline.groups`, :mod:`~torchmsa.pipeline.accurate`) and assembles the
results, every copy of a sequence given its representative's row. Every stage is a
``torch.profiler.record_function`` range named ``torchmsa.<stage>``.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any

import torch

from torchmsa.alignment import Alignment
from torchmsa.config import (
    MODES,
    TREES,
    AlignConfig,
    ExecutionPolicy,
    MemoryBudget,
    checked,
    describe,
)
from torchmsa.distributed.world import wanted
from torchmsa.errors import ArgumentError
from torchmsa.ops.backend import resolve_backend, resolve_device
from torchmsa.pipeline.dedupe import restore, restore_tree
from torchmsa.pipeline.groups import align_group, along_tree
from torchmsa.pipeline.jobs import Job, group_jobs, prepare_jobs, progress_steps
from torchmsa.pipeline.modes import linkage
from torchmsa.pipeline.placement import entry_section
from torchmsa.pipeline.progress import ProgressBar
from torchmsa.pipeline.scoring import SCORE_SCALE, job_offset, profile_scoring
from torchmsa.pipeline.shortcuts import apply_shortcuts
from torchmsa.pipeline.trees import first_tree, given_job_tree, is_newick, tree_order
from torchmsa.stages import stage
from torchmsa.tree import Tree
from torchmsa.tree import build_tree as tree_of_distances

__all__ = [
    "align",
    "align_many",
    "build_tree",
    "MODES",
    "TREES",
    "SCORE_SCALE",
    "job_offset",
    "profile_scoring",
]


def align_many(
    inputs: list,
    *,
    config: AlignConfig | None = None,
    policy: ExecutionPolicy | None = None,
    budget: MemoryBudget | None = None,
    device="auto",
    mode: str | None = None,
    matrix=None,
    gap_open: float | None = None,
    gap_extend: float | None = None,
    tree: str | Tree | None = None,
    seqtype: str = "auto",
    progress: bool = False,
    backend: str = "auto",
    reorder: bool = False,
    first_trees: list | None = None,
    distributed: str | bool = "auto",
    _ranks=None,
    _strict: bool = False,
) -> list[Alignment]:
    """Align many independent sequence sets in shared batches (one result per input).

    Every job's tree levels are aligned together, so a level of all jobs is one batched DP
    launch: many small families cost little more than one. Jobs are grouped by alphabet, chosen
    mode, place and matrix offset; arguments as :func:`align`, applied to every job.

    ``first_trees``: one entry per input, ``None`` or the first guide tree already built for
    it (by :mod:`torchmsa.serve.share` from a distance cache): a :class:`~torchmsa.Tree` over
    the input's distinct sequences (a repeated sequence once, at its first place), leaf names
    those sequences' names. It stands in for the tree the job's first-tree method would build;
    given the same tree the result is the same. Accurate-mode jobs build their own.

    ``distributed``: ``"auto"`` (the default) spreads the inputs over the ranks when this
    process is one of several that ``torchrun`` started (``WORLD_SIZE`` above 1); ``True``
    always goes through ``torch.distributed`` (a world of one included); ``False`` runs in this
    process alone. Over the ranks (:mod:`torchmsa.distributed`), every rank must call with the
    same inputs (paths readable on every host, or the same sequences); each aligns its share,
    by estimated cost, on its own GPU (``device="auto"`` or ``"cuda"`` is ``cuda:LOCAL_RANK``),
    and every rank returns the whole list, input order, the same alignments as without
    ``torchrun`` (``metadata`` adds ``rank`` and ``world_size``). An input that fails does not
    stop the others: :class:`~torchmsa.distributed.JobsFailed` is raised on every rank once all
    are done, with the other alignments in its ``results``. Under ``"auto"``, ranks that pass
    different inputs each align their own, as without ``torchrun``.

    ``_ranks`` (internal, :func:`align` under ``torchrun``): a session whose ranks share each
    job's PartTree and progressive passes; every rank returns the same alignments. Ranks that
    hold different inputs or configurations each align their own (``_strict``: raise
    :class:`~torchmsa.errors.ArgumentError` instead).
    """
    # the call as given, for each rank's share (apply_shortcuts replaces `config` below)
    same = {"config": config, "mode": mode, "matrix": matrix, "gap_open": gap_open}
    same.update(gap_extend=gap_extend, tree=tree, policy=policy, budget=budget, seqtype=seqtype)
    same.update(progress=progress, backend=backend, reorder=reorder)
    given = tree if is_newick(tree) else None
    config, custom = apply_shortcuts(
        config,
        mode=mode,
        matrix=matrix,
        gap_open=gap_open,
        gap_extend=gap_extend,
        tree=None if given is not None else tree,
    )
    policy = checked(policy, ExecutionPolicy, "policy")
    budget = checked(budget, MemoryBudget, "budget")
    world = wanted(distributed)
    if world is not None:
        from torchmsa.distributed.many import align_over_ranks

        out = align_over_ranks(
            world,
            inputs,
            lambda part, trees, dev: align_many(
                part, device=dev, first_trees=trees, distributed=False, **same
            ),
            config=config,
            device=device,
            first_trees=first_trees,
            strict=distributed is True,
        )
        if out is not None:
            return out
    with entry_section("align", policy):
        t0 = time.perf_counter()
        dev = resolve_device(device)
        impl = resolve_backend(backend, dev)
        # on a GPU under the automatic backend, a small job runs wholly on the host (its
        # launches and copies would cost more than its work); its tensors come back to the device
        host_small = backend == "auto" and dev.type == "cuda"
        jobs = prepare_jobs(
            inputs, seqtype, dev, host_small, config=config, policy=policy, budget=budget
        )
        alike = None  # under ranks: whether every rank holds (and returns) these alignments
        if _ranks is not None:
            _ranks = _shared_ranks(_ranks, jobs, config, strict=_strict)
            alike = _ranks is not None
        firsts = _first_trees(first_trees, jobs)
        bar = ProgressBar(progress_steps(jobs, given is not None), progress)
        results: list = [None] * len(jobs)
        for (_, mode_j, place, offset), idx in group_jobs(jobs).items():
            alphabet = jobs[idx[0]].batch.alphabet
            scoring = profile_scoring(alphabet, custom, offset=offset, config=config.scoring)
            group_impl = impl if place == dev else resolve_backend(backend, place)
            if given is not None:  # the user's tree: one pass along it, then refinement
                done = along_tree(
                    [jobs[j].batch for j in idx],
                    [_given(given, jobs[j]) for j in idx],
                    mode_j,
                    scoring,
                    group_impl,
                    bar.step,
                    config=config,
                    policy=policy,
                    budget=budget,
                    ranks=_ranks,
                )
            else:
                done = align_group(
                    [jobs[j].batch for j in idx],
                    mode_j,
                    [jobs[j].first for j in idx],
                    scoring,
                    group_impl,
                    bar,
                    host_small,
                    config=config,
                    policy=policy,
                    budget=budget,
                    trees=[firsts[j] for j in idx],
                    ranks=_ranks,
                )
            for j, (codes, guide, extra) in zip(idx, done):
                results[j] = (codes.to(dev), guide, extra)
        bar.close()
        seconds = time.perf_counter() - t0
        with stage("assemble"):
            common = {
                "device": str(dev),
                "seconds": seconds,
                "jobs_in_batch": len(jobs),
                "config": describe(config),
                "policy": describe(policy),
            }
            if alike is not None:
                common["ranks_alike"] = alike
            out = [
                _assemble(job, *result, impl if job.place == dev else "cpu", config, common)
                for job, result in zip(jobs, results)
            ]
            return [tree_order(a) for a in out] if reorder else out


def align(
    seqs,
    *,
    config: AlignConfig | None = None,
    policy: ExecutionPolicy | None = None,
    budget: MemoryBudget | None = None,
    device="auto",
    mode: str | None = None,
    matrix=None,
    gap_open: float | None = None,
    gap_extend: float | None = None,
    tree: str | Tree | None = None,
    seqtype: str = "auto",
    progress: bool = False,
    backend: str = "auto",
    reorder: bool = False,
    distributed: str | bool = "auto",
) -> Alignment:
    """Align sequences.

    Arguments:
        seqs: a path (FASTA, optionally gzipped; A2M/A3M, Stockholm, Clustal; ``"-"`` for
            stdin), a list of strings, a dict of name to sequence, or a list of Bio.SeqRecord.
        config: everything that can change the alignment (:class:`~torchmsa.AlignConfig`;
            ``None``: the defaults). Its non-default fields are recorded in
            ``metadata["config"]``.
        policy: where and how the work runs (:class:`~torchmsa.ExecutionPolicy`); never
            changes the alignment. Recorded in ``metadata["policy"]``.
        budget: how much memory a stage may plan for (:class:`~torchmsa.MemoryBudget`).
        device: ``"auto"`` (CUDA if available, else CPU), ``"cpu"``, ``"cuda"``, ``"cuda:N"``.
        mode: shortcut for ``config.mode``: ``"fast"``, ``"default"``, ``"accurate"`` or
            ``"auto"`` (see the module docstring).
        matrix: shortcut for ``config.scoring.matrix``: a substitution matrix name, or a
            Biopython ``Array`` (default BLOSUM62 / NUC.4.4).
        gap_open, gap_extend: shortcuts for ``config.scoring``'s gap costs, in matrix units
            (default 11 and 0).
        tree: shortcut for ``config.tree.method``, the guide tree: ``"auto"``
            (``"upgma_mafft"``; above ``lcs_min_n`` sequences ``"lcs"``;
            PartTree above ``parttree_min_n``), ``"upgma"``, ``"upgma_mafft"``, ``"nj"``,
            ``"single"`` (on 6-mer distances), ``"lcs"`` (single linkage on LCS distances;
            default mode then makes one pass) or ``"parttree"``. Second-pass trees (default
            mode) use the linkage (``"upgma_mafft"`` for ``"auto"``, ``"lcs"`` and
            ``"parttree"``). Or the guide tree itself: a :class:`~torchmsa.Tree` or Newick
            text (ending in ``;``), leaves matched to the sequences by name; then one
            progressive pass follows it, and the mode's refinement rounds (accurate mode
            without its consistency library).
        seqtype: ``"auto"``, ``"protein"``, ``"dna"`` or ``"rna"``.
        progress: print a progress bar on stderr (once the work has run for a second).
        backend: DP backend, ``"auto"``, ``"cpu"`` or ``"triton"``.
        reorder: rows in guide-tree order instead of input order (MAFFT's ``--reorder``).
        distributed: ``"auto"`` (the default): when ``torchrun`` started this process among
            several, the ranks share the work of one large alignment (PartTree's groups and
            the progressive pass's subtrees, decision 0068), each on its own GPU; every rank
            must call with the same input and gets the same alignment, the one a single
            process makes (``metadata`` adds ``rank``, ``world_size`` and ``ranks_alike``,
            whether every rank holds this alignment); ranks that hold different inputs each
            align their own. ``True``: always through
            ``torch.distributed``, and different inputs raise :class:`ArgumentError`;
            ``False``: in this process alone.

    Returns:
        An :class:`~torchmsa.alignment.Alignment`, rows in input order (in guide-tree
        order with ``reorder``).

    Raises:
        ArgumentError: an invalid argument, or a shortcut that ``config`` sets differently.
    """

    def call(dev, policy, ranks=None) -> Alignment:
        return align_many(
            [seqs],
            config=config,
            policy=policy,
            budget=budget,
            device=dev,
            mode=mode,
            matrix=matrix,
            gap_open=gap_open,
            gap_extend=gap_extend,
            tree=tree,
            seqtype=seqtype,
            progress=progress,
            backend=backend,
            reorder=reorder,
            distributed=False,
            _ranks=ranks,
            _strict=distributed is True,
        )[0]

    world = wanted(distributed)
    if world is None:
        return call(device, policy)
    from torchmsa.distributed.session import session
    from torchmsa.runtime import usable_cores

    policy = checked(policy, ExecutionPolicy, "policy")
    if policy.threads is None:  # the host's cores shared by its ranks (torchrun set 1 for torch)
        policy = dataclasses.replace(policy, threads=max(1, usable_cores() // world.local_size))

    with session(world, device) as ranks:
        out = call(ranks.device, policy, ranks)
    out.metadata.update(rank=world.rank, world_size=world.size)
    return out


def build_tree(
    seqs,
    *,
    method: str = "auto",
    device="auto",
    config: AlignConfig | None = None,
    policy: ExecutionPolicy | None = None,
    budget: MemoryBudget | None = None,
    seqtype: str = "auto",
    backend: str = "auto",
) -> Tree:
    """The first guide tree that :func:`align` would use for ``seqs``.

    In fast and default mode that is the tree of ``method`` (6-mer distances and a linkage,
    single linkage on LCS distances, or PartTree); in accurate mode the linkage of the local
    alignments' distances. ``config.mode`` (default ``"auto"``) decides the mode as
    :func:`align` does.

    Arguments:
        seqs: as :func:`align`.
        method: shortcut for ``config.tree.method`` (see :func:`align`'s ``tree``).
        device, config, policy, budget, seqtype, backend: as :func:`align`.

    Returns:
        The :class:`~torchmsa.tree.Tree`, leaf i = sequence i (one leaf for one sequence).

    >>> t = build_tree(["MKVLAAGHW", "MKVLAGHW", "GSTWPQ"], device="cpu", method="upgma")
    >>> t.newick().count("seq"), t.n_leaves
    (3, 3)
    """
    config, _ = apply_shortcuts(config, method=None if method == "auto" else method)
    policy = checked(policy, ExecutionPolicy, "policy")
    budget = checked(budget, MemoryBudget, "budget")
    with entry_section("build_tree", policy):
        dev = resolve_device(device)
        host_small = backend == "auto" and dev.type == "cuda"
        (job,) = prepare_jobs(
            [seqs], seqtype, dev, host_small, config=config, policy=policy, budget=budget
        )
        b, impl = job.batch, resolve_backend(backend, job.place)
        if len(b) == 1:
            return restore_tree(
                Tree(b.names, torch.zeros(0, 2, dtype=torch.int64).numpy(), [0.0]), job.copies
            )
        if job.mode != "accurate":
            t = first_tree(b, job.first, impl, config=config.tree, policy=policy, budget=budget)
            return restore_tree(t, job.copies)
        from torchmsa.pipeline.accurate import library, local_scoring

        local = local_scoring(b.alphabet, config=config.consistency)
        lib = library(b, local, impl, config=config.consistency, policy=policy, budget=budget)
        with stage("first_tree"):
            t = tree_of_distances(lib.dist, linkage(config.tree.method), b.names)
        return restore_tree(t, job.copies)


def _assemble(job: Job, codes, guide, extra, backend, config, common) -> Alignment:
    b = job.batch if job.copies is None else job.copies.full
    meta: dict[str, Any] = {
        "mode": job.mode,
        "requested_mode": config.mode,
        "device": common["device"],
        "backend": backend,
        "computed_on": str(job.place),
        "tree": job.first if job.mode != "accurate" else linkage(config.tree.method),
        "n_sequences": len(b),
        "distinct_sequences": len(job.batch),
        "collapsed": 0 if job.copies is None else job.copies.collapsed,
        "matrix_offset": job.offset,
        **common,
        **extra,
    }
    if job.degraded is not None:
        meta["degraded"] = job.degraded
    codes, guide = restore(codes, job.copies), restore_tree(guide, job.copies)
    weights = None if guide is None else torch.as_tensor(guide.weights(), dtype=torch.float64)
    return Alignment(b.names, b.descriptions, b.residues, codes, b.alphabet, guide, weights, meta)


def _shared_ranks(ranks, jobs: list[Job], config, strict: bool):
    """``ranks`` when every rank holds the same jobs under the same configuration
    (:func:`~torchmsa.distributed.same_input.held_alike`), else ``None`` (each rank aligns
    its own), or with ``strict`` an :class:`ArgumentError`."""
    from torchmsa.distributed.same_input import held_alike

    if held_alike(ranks, [job.batch for job in jobs], describe(config)):
        return ranks
    if strict:
        raise ArgumentError(
            f"distributed=True, but {ranks.tag} holds other sequences or settings than another "
            "rank; every rank must pass the same input and arguments to share one alignment "
            "(or pass distributed=False to align each rank's own)"
        )
    return None


def _given(tree, job: Job):
    """``job``'s guide tree from the user's: over its distinct sequences."""
    names = (job.batch if job.copies is None else job.copies.full).names
    return given_job_tree(tree, names, None if job.copies is None else job.copies.first)


def _first_trees(trees: list | None, jobs: list[Job]) -> list:
    """``align_many``'s ``first_trees``, checked against the jobs: one per job, ``None`` or
    a :class:`~torchmsa.Tree` whose leaves are the job's distinct sequences, in order."""
    if trees is None:
        return [None] * len(jobs)
    trees = list(trees)
    if len(trees) != len(jobs):
        raise ArgumentError(
            f"Invalid value for `first_trees` argument: {len(trees)} trees for {len(jobs)} "
            "inputs; give one per input (None where the job builds its own)"
        )
    for j, (t, job) in enumerate(zip(trees, jobs)):
        if t is None:
            continue
        if not isinstance(t, Tree):
            raise ArgumentError(
                f"Invalid value for `first_trees` argument: entry {j} is a "
                f"{type(t).__name__}; give a torchmsa.Tree or None"
            )
        if list(t.names) != list(job.batch.names):
            raise ArgumentError(
                f"Invalid value for `first_trees` argument: entry {j}'s {t.n_leaves} leaves are "
                f"not input {j}'s {len(job.batch)} distinct sequences in order; build it over "
                "the distinct sequences (a repeated sequence once, at its first place)"
            )
    return trees
