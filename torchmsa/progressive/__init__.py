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

import numpy as np
import torch

from torchmsa.config import ExecutionPolicy, MemoryBudget
from torchmsa.ops.backend import to_device
from torchmsa.progressive.columns import ColumnTracker
from torchmsa.progressive.forest import Forest, ResidueTable
from torchmsa.progressive.host import HostRun, check_linear
from torchmsa.progressive.level import align_level, split_level
from torchmsa.progressive.nodes import Nodes
from torchmsa.progressive.scoring import WEIGHT_TOTAL, ProfileScoring, quantize_weights
from torchmsa.stages import stage

CPU = torch.device("cpu")

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
    work = _Levels(st, forest, run, device, scoring, backend, progress, cons, track, policy, budget)
    if ranks is None or ranks.size == 1:
        work.align()
        return _assemble(st, table, forest, work.pieces, device)
    from torchmsa.progressive.shared import over_ranks

    return over_ranks(work, table, ranks)


class _Levels:
    """The level loop: every level's pairs to the host or batched on the device, the element
    maps of what was aligned collected in ``pieces`` (by device)."""

    def __init__(
        self, st, forest, run, device, scoring, backend, progress, cons, track, policy, budget
    ):
        self.st, self.forest, self.run = st, forest, run
        self.scoring, self.backend, self.progress = scoring, backend, progress
        self.cons, self.track, self.policy, self.budget = cons, track, policy, budget
        self.device = device
        self.pieces: dict[torch.device, list] = {}
        self.done = 0

    def flush(self) -> None:
        run = self.run
        if run:
            self.pieces.setdefault(CPU, []).append(run.align(self.scoring, self.track))
            if self.progress is not None:
                self.progress(self.done, self.forest.children.shape[0])

    def align(self, keep: np.ndarray | None = None) -> None:
        """Aligns every level's nodes (those with ``keep[id]`` only, when given)."""
        st, forest, run, device = self.st, self.forest, self.run, self.device
        level_cap = (
            self.policy.level_bytes if device.type == "cuda" else self.policy.host_level_bytes
        )
        for g, level in enumerate(forest.levels):
            ids = np.asarray(level, dtype=np.int64)
            if keep is not None:
                ids = ids[keep[ids]]
            if len(ids) == 0:
                continue
            pairs = np.concatenate([forest.children[ids - forest.n_leaves], ids[:, None]], 1)
            for part, host in _routes(run, pairs, self.budget):
                if host:
                    if run.full_with(part):
                        self.flush()  # the children's widths become exact
                    run.add(part)
                    continue
                self.flush()
                parts = [part]
                if self.cons is None:
                    parts = split_level(st, part, device, self.budget, level_cap)
                for piece in parts:
                    kid_elems, elems, _ = align_level(
                        st, piece, self.scoring, device, self.backend, self.cons, g, self.track
                    )
                    self.pieces.setdefault(device, []).append((kid_elems, elems))
            self.done += len(ids)
            if self.progress is not None and not run:
                self.progress(self.done, forest.children.shape[0])
        self.flush()  # reports the last run's levels (each level is reported once)


def _routes(run: HostRun, pairs: np.ndarray, budget: MemoryBudget):
    """A level's pairs as ``(pairs, on the host)`` parts: the pairs too wide for full
    matrices (:meth:`HostRun.wide`) go to the host, which aligns them in linear space; the
    rest to the host when :meth:`HostRun.small`, else batched. The parts are independent
    (one level), so the order changes nothing.

    Raises:
        ResourceError: a wide pair does not fit ``budget`` even in linear space.
    """
    wide = run.wide(pairs) if run.numba_ok else np.zeros(len(pairs), bool)
    rest = pairs[~wide]
    if len(rest):
        yield rest, run.numba_ok and run.small(rest)
    if wide.any():
        check_linear(run.bound, pairs[wide], run.st.n_alpha, budget)
        yield pairs[wide], True


def _assemble(st: Nodes, table: ResidueTable, forest: Forest, pieces, device) -> list[int]:
    """Every element points to where it went in its parent; pointer jumping takes each to its
    root's column, and a residue's column is its offset in its root's range of elements."""
    up = torch.arange(st.n_elems, device=device)
    for parts in pieces.values():
        idx = torch.cat([to_device(k, device) for k, _ in parts])
        up[idx] = torch.cat([to_device(e, device) for _, e in parts])
    for _ in range(max(1, len(forest.levels)).bit_length()):
        up = up[up]
    starts = to_device(np.sort(st.elem[forest.roots]), device)
    home = up[: table.seq.numel()]
    table.col = home - starts[torch.searchsorted(starts, home, right=True) - 1]
    return st.cols[forest.roots].tolist()
