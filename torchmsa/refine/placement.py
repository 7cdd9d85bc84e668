"""Where an evaluation of edges runs: on the host, edge by edge in numba, when the work is small
(always on the CPU), else batched on the alignment's device. Either gives the same integers.

On a GPU an evaluation runs on the host when (edges per thread) × columns² is at most
``ExecutionPolicy.host_cells``: small pieces cost more in launches than in arithmetic. A lone
edge (a round's follow-ups) runs there up to ``host_edge_cells`` columns²: on a GPU one edge
costs as many small launches and waits as a batch, on the host its DP alone grows with the
cells.
"""

from __future__ import annotations

import numba
import torch

from torchmsa.config import ExecutionPolicy, MemoryBudget
from torchmsa.progressive import ProfileScoring
from torchmsa.refine.evaluate import State, evaluate_partitions
from torchmsa.refine.host import HostEdges

__all__ = ["Evaluator", "Place"]


class Place:
    """A refinement's edge masks, weights and library on one device."""

    def __init__(self, device, sides, weights, library):
        self.sides = sides.to(device)
        self.weights = weights.to(device=device, dtype=torch.int64)
        self.lib = self.lib_val = None
        if library is not None:  # accurate mode: its consistency modules load only for it
            from torchmsa.consistency import Library, entry_values

            self.lib = Library(
                *(t.to(device) for t in (library.x, library.i, library.y, library.j, library.w)),
                library.dist,
            )
            self.lib_val = entry_values(self.lib, self.weights)


class Evaluator:
    """Evaluates edges of one refinement against the current alignment, where they fit best."""

    def __init__(
        self,
        device: torch.device,
        sides: torch.Tensor,
        weights: torch.Tensor,
        scoring: ProfileScoring,
        gap: int,
        backend: str,
        library,
        consistency_weight: int,
        policy: ExecutionPolicy,
        budget: MemoryBudget,
    ):
        self.device, self.sides, self.weights = device, sides, weights
        self.scoring, self.gap, self.backend = scoring, gap, backend
        self.library, self.cw = library, consistency_weight
        self.policy, self.budget = policy, budget
        self.host = None  # the host's arrays, made when an evaluation first runs there
        self.places: dict = {}
        self.threads = numba.get_num_threads()

    def __call__(self, codes: torch.Tensor, rows: torch.Tensor):
        """Edges ``rows`` against ``codes``. Returns ``codes`` on the device that evaluated
        them (the host's copy stays there for the merges and later evaluations) and
        ``(diffs, w_a, w_b, ops)`` as :func:`~torchmsa.refine.evaluate.evaluate_partitions`."""
        width = codes.shape[1]
        policy = self.policy
        limit = policy.host_edge_cells if len(rows) == 1 else policy.host_cells
        on_gpu = self.device.type == "cuda"
        linear = width**2 > policy.linear_pair_cells  # the host's linear-space evaluation
        if not on_gpu or linear or -(-len(rows) // self.threads) * width * width <= limit:
            if self.host is None:
                self.host = HostEdges(
                    self.sides, self.weights, self.scoring, self.gap, self.library, self.cw, policy
                )
            codes = codes.cpu()
            return codes, self.host.evaluate(codes, rows)
        codes = codes.to(self.device)
        if self.device not in self.places:
            self.places[self.device] = Place(self.device, self.sides, self.weights, self.library)
        at = self.places[self.device]
        st = State(codes, at.weights, self.gap, self.scoring.matrix.shape[0], at.lib, at.lib_val)
        found = evaluate_partitions(
            st,
            at.sides[rows],
            self.scoring,
            self.backend,
            self.cw,
            policy=policy,
            budget=self.budget,
        )
        return codes, found
