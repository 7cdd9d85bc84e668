"""The node pool: every node formed so far keeps its profile (integer weight sums per column
and residue) and its boundary weights (per column boundary, the weight of the sequences with
residues on both sides of it) in a pool on its device; leaves are read from the residue codes.
The host knows every node's columns, weight and place (:class:`Nodes`)."""

from __future__ import annotations

import numpy as np
import torch

from torchmsa.config import ExecutionPolicy, MemoryBudget
from torchmsa.errors import ResourceError
from torchmsa.ops.backend import to_device
from torchmsa.progressive.forest import Forest, ResidueTable
from torchmsa.progressive.scoring import ProfileScoring

__all__ = ["Nodes", "Pool", "excl", "pool_tensor", "ranges", "upload"]


def excl(sizes: np.ndarray) -> np.ndarray:
    """Exclusive prefix sums (segment offsets) of ``sizes``."""
    return np.cumsum(sizes) - sizes


def ranges(starts: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """``starts[i] .. starts[i] + sizes[i] - 1`` for every i, concatenated (int64)."""
    sizes = np.asarray(sizes, np.int64)
    total = int(sizes.sum())
    if total == 0:
        return np.zeros(0, np.int64)
    return np.repeat(np.asarray(starts, np.int64) - excl(sizes), sizes) + np.arange(total)


def upload(device: torch.device, **arrays) -> dict[str, torch.Tensor]:
    """Host int64 arrays as tensors on ``device``, in one copy that does not wait for the
    device (:func:`~torchmsa.ops.backend.to_device`); views by name."""
    parts = [np.asarray(a, np.int64).ravel() for a in arrays.values()]
    flat = to_device(np.concatenate(parts) if parts else np.zeros(0, np.int64), device)
    out, at = {}, 0
    for name, part in zip(arrays, parts):
        out[name] = flat[at : at + len(part)]
        at += len(part)
    return out


def pool_tensor(shape, dtype, device) -> torch.Tensor:
    """A pool buffer, not cleared: every node's rows are written whole before they are read (by
    ``Nodes.store``, or by ``merge_nodes``, which clears a parent's rows first), so clearing
    the buffers, which grow to millions of rows down deep trees, would be wasted work."""
    return torch.empty(shape, dtype=dtype, device=device)


class Pool:
    """Profiles (``int32 [rows, A]``) and boundary weights (``int64``) of the internal nodes
    that live on one device; a node's rows are its columns, its boundaries one more."""

    def __init__(self, device: torch.device, n_alpha: int, rows: int):
        self.device = device
        self.prof = pool_tensor((rows, n_alpha), torch.int32, device)
        self.both = pool_tensor((rows,), torch.int64, device)
        self.rows = self.bnds = 0


class Nodes:
    """Host bookkeeping of every tree node (columns, weight, where its profile lives) and the
    pools. Leaves have no pool entry: their profiles come from the residue codes."""

    def __init__(
        self,
        table: ResidueTable,
        lengths,
        forest: Forest,
        weights,
        n_alpha: int,
        pool_rows: int = ExecutionPolicy().pool_rows,
    ):
        n, k = forest.n_leaves, forest.children.shape[0]
        self.pool_rows = pool_rows
        self.n_leaves, self.n_alpha = n, n_alpha
        self.cols = np.zeros(n + k, np.int64)
        self.cols[:n] = lengths.cpu().numpy()
        self.w = np.zeros(n + k, np.int64)
        self.w[:n] = weights.cpu().numpy()
        self.seq_off = table.seq_off.cpu().numpy()
        self.pool_of = np.full(n + k, -1, np.int64)  # index into self.pools; -1: a leaf
        self.row = np.zeros(n + k, np.int64)
        self.bnd = np.zeros(n + k, np.int64)
        self.alive = np.zeros(n + k, bool)
        # element space: a leaf's elements are its residues, an internal node's its columns
        self.elem = np.zeros(n + k, np.int64)
        self.elem[:n] = self.seq_off[:-1]
        self.n_elems = int(self.seq_off[-1])
        self.pools: list[Pool] = []
        self._codes = {table.code.device: table.code}
        self._matrix: dict = {}

    def pool(self, device: torch.device) -> int:
        for i, p in enumerate(self.pools):
            if p.device == device:
                return i
        self.pools.append(Pool(device, self.n_alpha, self.pool_rows))
        return len(self.pools) - 1

    def codes(self, device: torch.device) -> torch.Tensor:
        if device not in self._codes:
            self._codes[device] = next(iter(self._codes.values())).to(device)
        return self._codes[device]

    def matrix(self, scoring: ProfileScoring, device: torch.device) -> torch.Tensor:
        if device not in self._matrix:
            self._matrix[device] = scoring.matrix.to(device=device, dtype=torch.float64)
        return self._matrix[device]

    def reserve(self, device: torch.device, rows: int, bnds: int) -> Pool:
        """``device``'s pool with room for ``rows`` more rows and ``bnds`` boundaries; when
        full, it keeps only its live nodes, in a buffer at least twice their size."""
        q = self.pool(device)
        pool = self.pools[q]
        if pool.rows + rows > pool.prof.shape[0] or pool.bnds + bnds > pool.both.shape[0]:
            live = np.nonzero(self.alive & (self.pool_of == q))[0]
            r_src = ranges(self.row[live], self.cols[live])
            b_src = ranges(self.bnd[live], self.cols[live] + 1)
            idx = upload(device, r=r_src, b=b_src)
            size = (2 * (len(r_src) + rows) + self.pool_rows, self.n_alpha)
            need = size[0] * (4 * self.n_alpha + 8)
            # free memory counts torch's cached blocks, which the new buffers can reuse
            avail = MemoryBudget(device_fraction=1.0).limit(device)
            if device.type == "cuda" and need > avail:
                raise ResourceError(
                    f"the profiles of {len(live)} live tree nodes and {rows} new columns "
                    f"({size[0]} rows)",
                    need,
                    avail,
                    "align fewer or shorter sequences, or on the CPU (device='cpu')",
                )
            new_prof = pool_tensor(size, torch.int32, device)
            new_both = pool_tensor((2 * (len(b_src) + bnds) + self.pool_rows,), torch.int64, device)
            # gathered straight into the new buffers: no third copy of the live rows
            torch.index_select(pool.prof, 0, idx["r"], out=new_prof[: len(r_src)])
            torch.index_select(pool.both, 0, idx["b"], out=new_both[: len(b_src)])
            self.row[live] = excl(self.cols[live])
            self.bnd[live] = excl(self.cols[live] + 1)
            pool.prof, pool.both, pool.rows, pool.bnds = new_prof, new_both, len(r_src), len(b_src)
        return pool

    def store(self, nodes, cols, prof, both, device) -> None:
        """Appends nodes' profiles and boundary weights to ``device``'s pool."""
        rows, bnds = prof.shape[0], both.shape[0]
        pool = self.reserve(device, rows, bnds)
        pool.prof[pool.rows : pool.rows + rows] = prof
        pool.both[pool.bnds : pool.bnds + bnds] = both
        self.pool_of[nodes] = self.pools.index(pool)
        self.row[nodes] = pool.rows + excl(cols)
        self.bnd[nodes] = pool.bnds + excl(cols + 1)
        self.alive[nodes] = True
        pool.rows += rows
        pool.bnds += bnds

    def place(self, parents: np.ndarray, widths: np.ndarray) -> None:
        """New parents' columns and their range in the element space, in order."""
        self.cols[parents] = widths
        self.elem[parents] = self.n_elems + excl(widths)
        self.n_elems += int(widths.sum())

    def fetch(self, nodes: np.ndarray, device: torch.device) -> None:
        """Moves inner nodes whose profiles live on another device into ``device``'s pool."""
        q = self.pool(device)
        nodes = nodes[(self.pool_of[nodes] >= 0) & (self.pool_of[nodes] != q)]
        for p, pool in enumerate(self.pools):
            sel = nodes[self.pool_of[nodes] == p]
            if len(sel) == 0:
                continue
            src = upload(
                pool.device,
                r=ranges(self.row[sel], self.cols[sel]),
                b=ranges(self.bnd[sel], self.cols[sel] + 1),
            )
            prof, both = pool.prof[src["r"]].to(device), pool.both[src["b"]].to(device)
            self.store(sel, self.cols[sel], prof, both, device)
