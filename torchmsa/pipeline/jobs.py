"""Jobs: one input sequence set each, encoded, its copies of identical sequences collapsed
(:mod:`~torchmsa.pipeline.dedupe`), given its mode, its place (host or device), its matrix
offset and its first tree method; grouped so that a group shares its batched launches."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from torchmsa.config import AlignConfig, ExecutionPolicy, MemoryBudget
from torchmsa.pipeline.dedupe import Copies, collapse
from torchmsa.pipeline.modes import first_tree_method, resolve_mode, second_pass
from torchmsa.pipeline.placement import host_job
from torchmsa.pipeline.scoring import job_offset
from torchmsa.progressive import quantize_weights
from torchmsa.sequences import SequenceBatch
from torchmsa.stages import stage

__all__ = ["Job", "prepare_jobs", "group_jobs", "progress_steps", "concat", "tree_weights"]


@dataclass(frozen=True)
class Job:
    """One sequence set to align.

    Attributes:
        batch: its distinct sequences, on :attr:`place`.
        mode: the mode it runs in (``"auto"`` resolved, or the mode it was degraded to).
        place: where it runs: the call's device, or the host for a small job on a GPU.
        offset: its matrix offset (:func:`~torchmsa.pipeline.scoring.job_offset`).
        first: its first guide tree method (:func:`~torchmsa.pipeline.modes.first_tree_method`).
        copies: the input and its map onto :attr:`batch` (``None``: no sequence repeats).
        degraded: why the job runs in :attr:`mode` rather than the mode asked for (``None``:
            it does not).
    """

    batch: SequenceBatch
    mode: str
    place: torch.device
    offset: float
    first: str
    copies: Copies | None = None
    degraded: str | None = None


def prepare_jobs(
    inputs: list,
    seqtype: str,
    device: torch.device,
    host_small: bool,
    *,
    config: AlignConfig,
    policy: ExecutionPolicy,
    budget: MemoryBudget | None = None,
) -> list[Job]:
    """Encode each input on the host, collapse its identical sequences, and decide its mode,
    place, offset and first tree from its distinct sequences.

    ``host_small`` (a GPU under the automatic backend): a small job
    (:func:`~torchmsa.pipeline.placement.host_job`) stays on the host; its tensors come back to
    the device at the end. An accurate job whose library
    (:func:`~torchmsa.consistency.library_bytes`) does not fit ``budget`` on its place runs in
    default mode instead, and says so (:attr:`Job.degraded`).
    """
    budget = MemoryBudget() if budget is None else budget
    host = torch.device("cpu")
    with stage("encode"):
        batches = [SequenceBatch.from_input(x, seqtype, host) for x in inputs]
    jobs = []
    for full in batches:
        b, copies = collapse(full)
        longest = int(b.lengths.max()) if len(b) else 0
        mode = resolve_mode(config.mode, len(b), longest, config=config.auto)
        place = host if host_small and host_job(len(b), longest, mode, policy=policy) else device
        degraded = _library_misfit(b, place, budget, config) if mode == "accurate" else None
        if degraded is not None:
            mode = "default"
            small = host_small and host_job(len(b), longest, mode, policy=policy)
            place = host if small else device
        offset = job_offset(b.alphabet, len(b), config=config.scoring)
        first = first_tree_method(len(b), mode, config=config.tree)
        jobs.append(Job(b.to(place), mode, place, offset, first, copies, degraded))
    return jobs


def _library_misfit(batch: SequenceBatch, place: torch.device, budget: MemoryBudget, config):
    """Why accurate mode's library of ``batch`` cannot be built on ``place`` (``None``: it
    fits ``budget``)."""
    from torchmsa.consistency import library_bytes
    from torchmsa.consistency.library import entries_per_residue

    need = library_bytes(batch.lengths, entries_per_residue(config.consistency))
    avail = budget.limit(place)
    if need <= avail:
        return None
    return (
        f"accurate mode's library of {len(batch)} sequences needs up to {need / 2**20:.1f} MiB "
        f"on {place} but only {avail / 2**20:.1f} MiB are available ({budget.source(place)}); "
        "ran in default mode"
    )


def group_jobs(jobs: list[Job]) -> dict[tuple[str, str, torch.device, float], list[int]]:
    """Job indices by (alphabet, mode, place, offset): the jobs that can share a pass."""
    groups: dict[tuple[str, str, torch.device, float], list[int]] = {}
    for j, job in enumerate(jobs):
        key = (job.batch.alphabet.name, job.mode, job.place, job.offset)
        groups.setdefault(key, []).append(j)
    return groups


def progress_steps(jobs: list[Job], given_tree: bool = False) -> int:
    """The progress bar's steps: one per tree join of every progressive pass (one pass along
    a ``given_tree``)."""
    return sum(
        (2 if second_pass(job.mode, job.first) and not given_tree else 1)
        * max(0, len(job.batch) - 1)
        for job in jobs
    )


def concat(batches: list[SequenceBatch]) -> tuple[torch.Tensor, torch.Tensor]:
    """All jobs' codes in one padded ``uint8 [sum N, Lmax]`` tensor, and their lengths."""
    width = max(b.codes.shape[1] for b in batches)
    gap = batches[0].alphabet.gap_code
    codes = torch.cat(
        [
            torch.nn.functional.pad(b.codes, (0, width - b.codes.shape[1]), value=gap)
            for b in batches
        ]
    )
    return codes, torch.cat([b.lengths for b in batches])


def tree_weights(trees: list) -> torch.Tensor:
    """``int64 [sum N]``: every job's quantised tree weights (1 for a one-sequence job)."""
    return torch.cat(
        [
            quantize_weights(t.weights()) if t is not None else torch.ones(1, dtype=torch.int64)
            for t in trees
        ]
    )
