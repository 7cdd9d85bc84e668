"""Levels too small for batched launches, node after node in numba on the host
(:func:`torchmsa.cpu.merge.merge_nodes`, the same integers as the batched levels).

Consecutive small levels form one run (:class:`HostRun`), aligned in one numba call. The call
reserves pool rows for every parent's bound (its children's bounds together: the true widths
are known only once the run is aligned). Down a deep chain of merges the bounds grow with the
leaves' summed lengths, so a run is cut where its parents' bounds would pass
``ExecutionPolicy.run_rows``: PF00037's 10,011 sequences of at most 30 residues reserved over
24 GB on a CPU device without it.
"""

from __future__ import annotations

import numba
import numpy as np
import torch

from torchmsa.config import ExecutionPolicy, MemoryBudget
from torchmsa.cpu.dp_profile_linear import block_rows, profile_linear_bytes
from torchmsa.cpu.merge import merge_nodes
from torchmsa.errors import ResourceError
from torchmsa.progressive.nodes import Nodes, ranges
from torchmsa.progressive.scoring import ProfileScoring
from torchmsa.stages import stage

__all__ = ["HostRun", "run_on_host", "check_linear"]


class HostRun:
    """Consecutive small levels waiting to be aligned on the host as one run.

    ``bound`` holds at least each node's columns: a waiting parent's is its children's
    together (while no run waits, it is the nodes' columns themselves).
    """

    def __init__(self, st: Nodes, policy: ExecutionPolicy, pair_cap: int, numba_ok: bool = True):
        self.st, self.policy, self.pair_cap = st, policy, pair_cap
        self.numba_ok = numba_ok  # whether levels may run here at all
        self.levels: list[np.ndarray] = []
        self.rows = 0  # the run's parents' bounds together
        self.bound = st.cols

    def __bool__(self) -> bool:
        return bool(self.levels)

    def small(self, pairs: np.ndarray) -> bool:
        """Whether level ``pairs`` is small enough for the host (by its children's bounds)."""
        cells = self.bound[pairs[:, 0]] * self.bound[pairs[:, 1]]
        return int(cells.sum()) <= self.policy.cpu_level_cells and int(cells.max()) <= self.pair_cap

    def wide(self, pairs: np.ndarray) -> np.ndarray:
        """``bool [P]``: the pairs of more than ``linear_pair_cells`` cells (by their
        children's bounds), which :func:`run_on_host` aligns in linear space."""
        cells = self.bound[pairs[:, 0]] * self.bound[pairs[:, 1]]
        return cells > self.policy.linear_pair_cells

    def full_with(self, pairs: np.ndarray) -> bool:
        """Whether adding level ``pairs`` would take the run past ``run_rows``."""
        extra = int(self.bound[pairs[:, :2]].sum())
        return bool(self.levels) and self.rows + extra > self.policy.run_rows

    def add(self, pairs: np.ndarray) -> None:
        if not self.levels:
            self.bound, self.rows = self.st.cols.copy(), 0
        self.bound[pairs[:, 2]] = self.bound[pairs[:, 0]] + self.bound[pairs[:, 1]]
        self.rows += int(self.bound[pairs[:, 2]].sum())
        self.levels.append(pairs)

    def align(self, scoring: ProfileScoring, track=None):
        """Aligns the run (:func:`run_on_host`) and empties it."""
        out = run_on_host(self.st, self.levels, self.bound, scoring, track, self.policy)
        self.levels = []
        self.bound = self.st.cols
        return out


def check_linear(bound: np.ndarray, pairs: np.ndarray, n_alpha: int, budget: MemoryBudget):
    """Raises :class:`ResourceError` when one of ``pairs``, aligned in linear space side by
    side with as many others as numba has threads, would not fit the host ``budget``."""
    n, m = bound[pairs[:, 0]], bound[pairs[:, 1]]
    need = np.array(
        [profile_linear_bytes(a, b, block_rows(a, b), n_alpha) for a, b in zip(n, m)], np.int64
    )
    together = int(np.sort(need)[::-1][: numba.get_num_threads()].sum())
    limit = budget.limit("cpu")
    if together > limit:
        p = int(np.argmax(need))
        raise ResourceError(
            f"merging two profiles of {n[p]} and {m[p]} columns in linear space"
            + (
                f" (with {min(len(pairs), numba.get_num_threads()) - 1} more beside it)"
                if len(pairs) > 1
                else ""
            ),
            together,
            limit,
            f"align fewer or shorter sequences; the limit is {budget.source('cpu')}",
        )


def run_on_host(
    st: Nodes,
    levels: list[np.ndarray],
    bound: np.ndarray,
    scoring: ProfileScoring,
    track=None,
    policy: ExecutionPolicy | None = None,
):
    """Aligns ``levels`` (each ``int64 [P, 3]``: child, child, parent) node after node in numba;
    ``bound`` holds at least each node's columns (a parent's: its children's together).
    ``track`` (accurate mode): the :class:`~torchmsa.progressive.columns.ColumnTracker` whose
    consistency tiles join the scores. A level of one pair of at least
    ``policy.lone_pair_cells`` cells spreads its column scores over the threads; pairs of
    more than ``policy.linear_pair_cells`` are aligned in linear space.

    Returns ``(child element ids, their elements in the parents)`` on the host.
    """
    policy = policy or ExecutionPolicy()
    with stage("progressive_host"):
        return _run(st, levels, bound, scoring, track, policy)


def _run(st, levels, bound, scoring, track, policy):
    cpu = torch.device("cpu")
    pairs = np.concatenate(levels)
    kids = pairs[:, :2].ravel()
    st.fetch(kids, cpu)
    rows = int(bound[pairs[:, 2]].sum())
    pool = st.reserve(cpu, rows, rows + len(pairs))
    new_col = np.empty(int(bound[kids].sum()), np.int64)
    num, den = scoring.terminal
    if track is None:
        ent, (lo, hi) = np.zeros((5, 0), np.int64), np.zeros((2, len(pairs)), np.int64)
        cweight, res_col, node_of_seq = 0, np.zeros(0, np.int64), np.zeros(0, np.int64)
    else:
        ent, lo_of, hi_of = track.entries()
        lo, hi = lo_of[pairs[:, 2]], hi_of[pairs[:, 2]]
        cweight = track.cons.weight
        res_col = track.table.col.cpu().numpy().astype(np.int64, copy=True)
        node_of_seq = track.node_of_seq.cpu().numpy().astype(np.int64, copy=True)
    cells = bound[pairs[:, 0]] * bound[pairs[:, 1]]
    level_start = np.concatenate([[0], np.cumsum([len(lv) for lv in levels])]).astype(np.int64)
    pool.rows, pool.bnds, used = merge_nodes(
        pairs,
        level_start,
        st.n_leaves,
        st.cols,
        st.w,
        st.seq_off,
        st.codes(cpu).numpy(),
        pool.prof.numpy(),
        pool.both.numpy(),
        st.row,
        st.bnd,
        pool.rows,
        pool.bnds,
        st.matrix(scoring, cpu).numpy().astype(np.int64),
        int(scoring.gap_open),
        int(scoring.gap_extend),
        int(num),
        int(den),
        int(scoring.occ_shift),
        new_col,
        ent,
        lo,
        hi,
        cweight,
        res_col,
        node_of_seq,
        numba.get_num_threads(),
        policy.lone_pair_cells,
        policy.linear_pair_cells,
        cells=int(cells.sum()),
        wide=bool((cells > policy.linear_pair_cells).any()),
    )
    if track is not None:
        track.table.col.copy_(torch.from_numpy(res_col))
        track.node_of_seq.copy_(torch.from_numpy(node_of_seq))
    parents = pairs[:, 2]
    st.alive[kids] = False
    st.alive[parents] = True
    st.pool_of[parents] = st.pools.index(pool)
    st.place(parents, st.cols[parents])
    kid_cols = st.cols[kids]
    kid_elems = ranges(st.elem[kids], kid_cols)
    elems = np.repeat(st.elem[np.repeat(parents, 2)], kid_cols) + new_col[:used]
    return kid_elems, torch.from_numpy(elems)
