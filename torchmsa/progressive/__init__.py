"""Progressive alignment scheduled by tree level.

Every node formed so far keeps its profile and boundary weights in a pool on its device
(:mod:`.nodes`). Aligning one tree level is a handful of batched tensor operations, the same on
the CPU and on a GPU (:mod:`.level`). The host knows every node's size, so it plans each level
without waiting for the device, and waits once per level for the parents' widths. Levels of at
most ``ExecutionPolicy.cpu_level_cells`` DP cells (none of their pairs above
``cpu_pair_cells``) run node by node in numba instead (:mod:`.host`, the same integers), also
on a GPU, where their launches would cost more than their work. Where every child column went
is recorded per level; at the end pointer jumping takes each residue to its column in its
job's root. Accurate mode's consistency tiles need residues' current columns at every level,
so there the residue table is also kept up to date level by level (:mod:`.columns`).
"""

from __future__ import annotations

import torch

from torchmsa.config import ExecutionPolicy, MemoryBudget
from torchmsa.progressive.columns import ColumnTracker
from torchmsa.progressive.forest import Forest, ResidueTable
from torchmsa.progressive.host import HostRun
from torchmsa.progressive.levels import Levels, assemble
from torchmsa.progressive.nodes import Nodes
from torchmsa.progressive.scoring import WEIGHT_TOTAL, ProfileScoring, quantize_weights
from torchmsa.stages import stage

__all__ = [
    "Forest",
    "ProfileScoring",
    "ResidueTable",
    "WEIGHT_TOTAL",
    "quantize_weights",
    "progressive_align",
]


def progressive_align(
    table: ResidueTable,
    lengths: torch.Tensor,
    forest: Forest,
    weights: torch.Tensor,
    scoring: ProfileScoring,
    backend: str = "auto",
    progress=None,
    consistency=None,
    *,
    policy: ExecutionPolicy | None = None,
    budget: MemoryBudget | None = None,
    ranks=None,
) -> list[int]:
    """Align along every tree of ``forest``, level by level; updates ``table.col``.

    Arguments:
        table: the residue table (columns start as residue positions).
        lengths: ``int [N]`` sequence lengths.
        forest: the jobs' guide trees (:meth:`Forest.from_trees`).
        weights: ``int64 [N]`` quantized sequence weights (:func:`quantize_weights`, per job).
        scoring: the profile scoring.
        backend: DP backend (``auto``, ``cpu``, ``triton``).
        progress: optional callable ``progress(done_nodes, total_nodes)``.
        consistency: optional :class:`torchmsa.consistency.Consistency` whose tiles are added
            to every level's column scores (accurate mode).
        policy: which levels run on the host in numba, and how (never changes the result).
        budget: the memory a batched level may plan for (larger levels are split).
        ranks: a :class:`~torchmsa.distributed.Session` whose ranks share the subtrees
            (:mod:`~torchmsa.progressive.shared`; not with ``consistency``); every rank
            passes the same arguments and ends with the same ``table.col``.

    Returns:
        Each job's alignment width.
    """
    with stage("progressive_pass"):
        return _progressive(
            table,
            lengths,
            forest,
            weights,
            scoring,
            backend,
            progress,
            consistency,
            policy or ExecutionPolicy(),
            budget or MemoryBudget(),
            ranks if consistency is None else None,
        )


def _progressive(
    table, lengths, forest, weights, scoring, backend, progress, cons, policy, budget, ranks=None
):
    device = table.seq.device
    st = Nodes(table, lengths, forest, weights, scoring.matrix.shape[0], policy.pool_rows)
    track = None
    if cons is not None:
        track = ColumnTracker(table, weights.to(device), st.cols.size, cons)
    # small levels run node by node in numba on the CPU, for the CPU backend and on a GPU (where
    # their launches would cost more than their work); Triton on the CPU (the interpreter in
    # tests) keeps every level batched. On the CPU the batched level runs its pairs' DPs in
    # numba too, so no pair is too large for the host there.
    numba_ok = device.type == "cuda" or backend in ("auto", "cpu")
    pair_cap = policy.cpu_device_pair_cells if device.type == "cpu" else policy.cpu_pair_cells
    run = HostRun(st, policy, pair_cap, numba_ok)
    work = Levels(st, forest, run, device, scoring, backend, progress, cons, track, policy, budget)
    if ranks is None or ranks.size == 1:
        work.align()
        return assemble(st, table, forest, work.pieces, device)
    from torchmsa.progressive.shared import over_ranks

    return over_ranks(work, table, ranks)
