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

__all__ = ["Nodes", "Pool", "excl", "pool_tensor", "ranges", "rebuild_plan", "upload"]


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


GROWTH = (2.0, 1.5, 1.25, 1.0)  # a full pool's new size, in live-plus-new rows, largest first
SPILL_CHUNK = 1 << 28  # bytes of live rows (and their indices) per gather of a rebuild
REBUILD_MARGIN = 1 << 30  # device bytes a rebuild leaves free: chunks, allocator rounding
REBUILD_HINT = "align fewer or shorter sequences, or on the CPU (device='cpu')"


def _gather(src: torch.Tensor, idx: np.ndarray, dst: torch.Tensor, chunk: int = SPILL_CHUNK):
    """``dst[k] = src[idx[k]]`` for every ``k`` (``idx`` host int64, ``dst`` on any device),
    ``chunk`` bytes of rows and indices at a time: no index or row copy of the whole."""
    row = src.element_size() * max(1, src[:1].numel())
    step = max(1, chunk // (row + 8))
    for at in range(0, len(idx), step):
        part = torch.from_numpy(np.ascontiguousarray(idx[at : at + step])).to(src.device)
        if dst.device == src.device:
            torch.index_select(src, 0, part, out=dst[at : at + len(part)])
        else:
            dst[at : at + len(part)].copy_(src.index_select(0, part))


def rebuild_plan(
    rows: int,
    bnds: int,
    slack: int,
    n_alpha: int,
    old_bytes: int,
    avail: int | None,
    what: str = "the live tree nodes' profiles",
) -> tuple[int, int, bool]:
    """``(profile rows, boundary rows, through_host)`` of a full pool's rebuild that must hold
    ``rows`` rows and ``bnds`` boundaries: the largest growth of :data:`GROWTH` (times the
    rows, plus ``slack``) whose buffers fit in ``avail`` bytes beside the old ones, else the
    largest that fits once the old buffers (``old_bytes``) are freed, their live rows moved
    through host memory (``through_host``). ``avail`` ``None``: no limit (a host pool).

    Raises:
        ResourceError: not even the smallest fits with the old buffers freed.
    """

    def size(g: float) -> tuple[int, int, int]:
        pr, br = int(g * rows) + slack, int(g * bnds) + slack
        return pr, br, pr * 4 * n_alpha + br * 8

    if avail is None:
        return (*size(GROWTH[0])[:2], False)
    for room, through_host in ((avail, False), (avail + old_bytes, True)):
        for g in GROWTH:
            pr, br, need = size(g)
            if need <= room:
                return pr, br, through_host
    pr, _, need = size(GROWTH[-1])
    raise ResourceError(f"{what} ({pr} rows)", need, avail + old_bytes, REBUILD_HINT)


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
        full, it keeps only its live nodes, in buffers sized by :func:`rebuild_plan`."""
        q = self.pool(device)
        pool = self.pools[q]
        if pool.rows + rows <= pool.prof.shape[0] and pool.bnds + bnds <= pool.both.shape[0]:
            return pool
        live = np.nonzero(self.alive & (self.pool_of == q))[0]
        r_src = ranges(self.row[live], self.cols[live])
        b_src = ranges(self.bnd[live], self.cols[live] + 1)
        old = pool.prof.numel() * 4 + pool.both.numel() * 8
        # free memory counts torch's cached blocks, which the new buffers can reuse; the
        # margin holds the chunks of the gathers and the allocator's rounding
        avail = None
        if device.type == "cuda":
            avail = max(0, MemoryBudget(device_fraction=1.0).limit(device) - REBUILD_MARGIN)
        what = f"the profiles of {len(live)} live tree nodes and {rows} new columns"
        prof_rows, both_rows, through_host = rebuild_plan(
            len(r_src) + rows, len(b_src) + bnds, self.pool_rows, self.n_alpha, old, avail, what
        )
        try:
            if not through_host:
                try:
                    new_prof = pool_tensor((prof_rows, self.n_alpha), torch.int32, device)
                    new_both = pool_tensor((both_rows,), torch.int64, device)
                except torch.OutOfMemoryError:  # the free memory was not all in one piece
                    new_prof = new_both = None
                    through_host = True
                else:  # gathered straight into the new buffers: no third copy of the rows
                    _gather(pool.prof, r_src, new_prof[: len(r_src)])
                    _gather(pool.both, b_src, new_both[: len(b_src)])
                    pool.prof, pool.both = new_prof, new_both
            if through_host:
                self._rebuild_through_host(pool, r_src, b_src, prof_rows, both_rows)
        except torch.OutOfMemoryError:
            need = prof_rows * 4 * self.n_alpha + both_rows * 8
            raise ResourceError(
                f"{what} ({prof_rows} rows)", need, (avail or 0) + old, REBUILD_HINT
            ) from None
        self.row[live] = excl(self.cols[live])
        self.bnd[live] = excl(self.cols[live] + 1)
        pool.rows, pool.bnds = len(r_src), len(b_src)
        return pool

    def _rebuild_through_host(
        self, pool: Pool, r_src, b_src, prof_rows: int, both_rows: int, chunk: int = SPILL_CHUNK
    ) -> None:
        """The live rows (``r_src``, ``b_src``: host int64 indices) moved to host memory
        ``chunk`` bytes at a time, the old buffers freed, the new ones made and the rows moved
        back: one pool on the device at a time."""
        need = len(r_src) * 4 * self.n_alpha + len(b_src) * 8
        avail = MemoryBudget(host_fraction=1.0).limit("cpu")
        if need > avail:
            raise ResourceError("host copies of the live tree nodes' profiles", need, avail)
        host_prof = torch.empty((len(r_src), self.n_alpha), dtype=torch.int32)
        host_both = torch.empty(len(b_src), dtype=torch.int64)
        _gather(pool.prof, r_src, host_prof, chunk)
        _gather(pool.both, b_src, host_both, chunk)
        device = pool.device
        pool.prof = pool.both = None
        if device.type == "cuda":
            torch.cuda.empty_cache()  # the old buffers' memory, for buffers of any size
        pool.prof = pool_tensor((prof_rows, self.n_alpha), torch.int32, device)
        pool.both = pool_tensor((both_rows,), torch.int64, device)
        pool.prof[: len(r_src)].copy_(host_prof)  # straight from host memory, no device copy
        pool.both[: len(b_src)].copy_(host_both)

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
