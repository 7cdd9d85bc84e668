"""The level loop of one progressive pass (:class:`Levels`), the routing of a level's pairs
(:func:`routes`) and the final assembly of every residue's column (:func:`assemble`)."""

from __future__ import annotations

import numpy as np
import torch

from torchmsa.config import MemoryBudget
from torchmsa.ops.backend import to_device
from torchmsa.progressive.forest import Forest, ResidueTable
from torchmsa.progressive.host import HostRun, check_linear
from torchmsa.progressive.level import align_level, split_level
from torchmsa.progressive.nodes import Nodes

__all__ = ["Levels", "assemble", "jump", "routes"]

CPU = torch.device("cpu")


class Levels:
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
            for part, host in routes(run, pairs, self.budget):
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


def routes(run: HostRun, pairs: np.ndarray, budget: MemoryBudget):
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


def jump(st: Nodes, forest: Forest, pieces, device) -> torch.Tensor:
    """Every element's place in the root of the merges ``pieces`` hold (by device): each
    element points to where it went in its parent, and pointer jumping follows the chain
    (an element no merge moved stays where it is)."""
    up = torch.arange(st.n_elems, device=device)
    for parts in pieces.values():
        if parts:
            idx = torch.cat([to_device(k, device) for k, _ in parts])
            up[idx] = torch.cat([to_device(e, device) for _, e in parts])
    for _ in range(max(1, len(forest.levels)).bit_length()):
        up = up[up]
    return up


def assemble(st: Nodes, table: ResidueTable, forest: Forest, pieces, device) -> list[int]:
    """Every residue's column (:func:`jump`): its offset in its root's range of elements."""
    up = jump(st, forest, pieces, device)
    starts = to_device(np.sort(st.elem[forest.roots]), device)
    home = up[: table.seq.numel()]
    table.col = home - starts[torch.searchsorted(starts, home, right=True) - 1]
    return st.cols[forest.roots].tolist()
