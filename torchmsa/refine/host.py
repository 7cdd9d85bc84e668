"""Edge evaluations on the host, edge by edge in numba (:mod:`torchmsa.cpu.refine`, the same
integers as the batched evaluation of :mod:`torchmsa.refine.evaluate`)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numba
import numpy as np
import torch

from torchmsa.config import ExecutionPolicy
from torchmsa.cpu.refine import (
    entries_by_row,
    evaluate_edge,
    evaluate_edge_linear,
    evaluate_edges,
)
from torchmsa.stages import stage

__all__ = ["HostEdges"]


class HostEdges:
    """A refinement's edges, weights, scoring and library as host arrays for
    :func:`torchmsa.cpu.refine.evaluate_edges`; evaluates edges there."""

    def __init__(self, sides, weights, scoring, gap, library, consistency_weight, policy=None):
        self.policy = policy or ExecutionPolicy()
        self.sides = sides.numpy()
        self.weights = weights.cpu().to(torch.int64).numpy()
        self.matrix = scoring.matrix.cpu().numpy().astype(np.int64)
        num, den = scoring.terminal
        self.params = (
            int(gap),
            int(scoring.gap_open),
            int(scoring.gap_extend),
            int(num),
            int(den),
            int(scoring.occ_shift),
        )
        if library is None:
            lib, val = np.zeros((4, 0), np.int64), np.zeros(0, np.int64)
        else:  # on the library's device, then one copy each
            from torchmsa.consistency import entry_values  # accurate mode's, on use

            w = weights.to(device=library.x.device, dtype=torch.int64)
            lib = torch.stack([library.x, library.i, library.y, library.j]).to(torch.int64)
            val = entry_values(library, w)
            lib, val = lib.cpu().numpy(), val.cpu().numpy()
        self.lib = entries_by_row(lib, val, len(self.weights))
        self.cw = int(consistency_weight) if library is not None else 0

    def evaluate(self, codes, rows):
        """As :func:`~torchmsa.refine.evaluate.evaluate_partitions` for edges ``rows``
        (``int64`` tensor) of ``codes``, edge by edge in numba; a lone edge of more than
        ``policy.threaded_edge_cells`` columns² spreads over the threads. Alignments of more
        than ``policy.linear_pair_cells`` columns² evaluate their edges in linear space, side
        by side on the threads."""
        if codes.shape[1] ** 2 > self.policy.linear_pair_cells:
            with stage("refine_host_linear"):
                return self._linear(codes, rows)
        threaded = len(rows) == 1 and codes.shape[1] ** 2 > self.policy.threaded_edge_cells
        name = "refine_host_edge" if threaded else "refine_host"
        with stage(name):
            return self._evaluate(codes, rows, threaded)

    def _buffers(self, codes, rows):
        """The host codes, the edges' sides, and their ``info`` and ``ops`` outputs."""
        host = np.ascontiguousarray(codes.cpu().numpy())
        sides = self.sides[rows.numpy()]
        info = np.empty((len(sides), 4), np.int64)
        return host, sides, info, np.empty((len(sides), 2 * host.shape[1]), np.uint8)

    def _linear(self, codes, rows):
        host, sides, info, ops = self._buffers(codes, rows)
        common = (self.matrix, *self.params, *self.lib, self.cw)

        def one(k):
            evaluate_edge_linear(host, self.weights, sides[k], *common, info[k], ops[k])

        threads = min(numba.get_num_threads(), len(sides))
        if threads > 1:  # each edge's rows of info and ops are its own
            with ThreadPoolExecutor(threads) as pool:
                list(pool.map(one, range(len(sides))))
        else:
            for k in range(len(sides)):
                one(k)
        return self._found(info, ops)

    def _evaluate(self, codes, rows, threaded):
        host, sides, info, ops = self._buffers(codes, rows)
        common = (self.matrix, *self.params, *self.lib, self.cw)
        if threaded:
            # a large lone edge: its column scores and tile spread over the threads
            threads = numba.get_num_threads()
            evaluate_edge(host, self.weights, sides[0], *common, info[0], ops[0], threads)
        else:  # edges in parallel
            evaluate_edges(host, self.weights, sides, *common, info, ops)
        return self._found(info, ops)

    @staticmethod
    def _found(info, ops):
        """``(diffs, w_a, w_b, ops)`` of ``evaluate_partitions`` from the numba outputs."""
        out = torch.from_numpy(ops)
        return (
            info[:, 0].tolist(),
            info[:, 1].tolist(),
            info[:, 2].tolist(),
            [out[k, : info[k, 3]] for k in range(len(info))],
        )
