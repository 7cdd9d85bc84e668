"""Progressive alignment scheduled by tree level.

Every node formed so far keeps its profile (integer weight sums per column and residue) and its
boundary weights (per column boundary, the weight of the sequences with residues on both sides
of it; a new gap there opens a gap in exactly those) in a pool on its device; leaves are read
from the residue codes. Aligning one tree level is a handful of batched tensor operations, the
same on the CPU and on a GPU:

1. the children's profiles, gathered into ``float64 [sum(C), A]`` (exact: integers below 2^53);
2. column scores per node pair as the matrix product ``P_a · M · P_bᵀ`` (float64, exact), turned
   into integers by exact floor division by the pair's weight product;
3. boundary gap costs from the weighted fraction of sequences that a new gap would open a gap in,
   half paid where the gap opens and half where it closes, each scaled by the residue fraction
   of the other profile's column that it faces (a gap against a gap costs nothing);
4. one batched DP call (``ops/profile.py``) for every node pair of the level;
5. the merge: each child column's parent column comes from the traceback ops; the parents'
   profiles and boundary weights are scatter-added from the children's (a child's boundary
   keeps its weight where the columns on both sides of it stay adjacent in the parent).

The host knows every node's size, so it plans each level without waiting for the device, and
waits once per level for the parents' widths. Levels of at most :data:`CPU_LEVEL_CELLS` DP cells
(and pairs of at most :data:`CPU_PAIR_CELLS`)
run node by node in numba instead (``cpu/merge.py``, the same integers), also on a GPU, where
their launches would cost more than their work. Where every child column went is recorded per
level; at the end pointer jumping takes each residue to its column in its job's root. Accurate
mode's consistency tiles need residues' current columns at every level, so there the residue
table is also kept up to date level by level (by the numba merges too, which add the tiles
node by node).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from torchmsa.consistency import entry_values
from torchmsa.cpu.dp import GLOBAL, OP_LEFT, OP_UP, RES_ONE
from torchmsa.cpu.dp_rows import OCC_SHIFT
from torchmsa.errors import ResourceError
from torchmsa.ops.backend import to_device
from torchmsa.ops.colscores import batched_column_scores
from torchmsa.ops.kmer_stream import memory_budget
from torchmsa.ops.profile import profile_align

__all__ = [
    "Forest",
    "ProfileScoring",
    "ResidueTable",
    "open_costs",
    "quantize_weights",
    "residue_factors",
    "split_cost",
    "progressive_align",
]

WEIGHT_TOTAL = 1 << 19


@dataclass(frozen=True)
class ProfileScoring:
    """Integer profile scoring.

    Attributes:
        matrix: ``int64 [A, A]`` substitution scores in DP units (matrix * scale + offset).
        gap_open: DP units for opening a gap in every sequence of a profile.
        gap_extend: DP units per further gap column.
        terminal: factor (numerator, denominator) on the opening cost at a profile's ends.
    """

    matrix: torch.Tensor
    gap_open: int
    gap_extend: int
    terminal: tuple[int, int] = (1, 1)


@dataclass
class ResidueTable:
    """Every residue of the input, flat. ``seq_off[s]:seq_off[s+1]`` are sequence s's residues."""

    seq: torch.Tensor  # int64 [R]
    code: torch.Tensor  # int64 [R]
    col: torch.Tensor  # int64 [R], column in the current node's alignment
    seq_off: torch.Tensor  # int64 [N + 1]

    @classmethod
    def from_batch(cls, codes: torch.Tensor, lengths: torch.Tensor) -> ResidueTable:
        device = codes.device
        lengths = lengths.to(torch.int64)
        n, width = codes.shape
        pos = torch.arange(width, device=device).expand(n, width)
        keep = pos < lengths[:, None]
        seq = torch.arange(n, device=device)[:, None].expand(n, width)[keep]
        seq_off = torch.zeros(n + 1, dtype=torch.int64, device=device)
        seq_off[1:] = torch.cumsum(lengths, 0)
        return cls(seq.contiguous(), codes[keep].to(torch.int64), pos[keep].contiguous(), seq_off)

    def codes_matrix(self, first: int, count: int, n_cols: int, gap: int) -> torch.Tensor:
        """``uint8 [count, n_cols]`` alignment codes of sequences ``first .. first+count-1``."""
        out = torch.full((count, n_cols), gap, dtype=torch.uint8, device=self.seq.device)
        lo, hi = self.seq_off[first].item(), self.seq_off[first + count].item()
        out[self.seq[lo:hi] - first, self.col[lo:hi]] = self.code[lo:hi].to(torch.uint8)
        return out


def quantize_weights(weights: np.ndarray | torch.Tensor) -> torch.Tensor:
    """Integer weights, each >= 1, summing to about ``WEIGHT_TOTAL``: ``int64 [N]``."""
    w = torch.as_tensor(weights, dtype=torch.float64).clamp_min(0)
    total = float(w.sum())
    if total <= 0:
        w = torch.ones_like(w)
        total = float(w.numel())
    return torch.floor(w * (WEIGHT_TOTAL / total)).to(torch.int64).clamp_min(1)


def open_costs(
    both: torch.Tensor, group_w: torch.Tensor, ends: torch.Tensor, scoring: ProfileScoring
) -> torch.Tensor:
    """``int32`` gap-opening costs of profile boundaries.

    Arguments:
        both: ``int64 [B]`` weight of the sequences with residues on both sides of each boundary
            (the sequences in which a new gap there really opens a gap).
        group_w: ``int64 [B]`` total weight of the boundary's profile.
        ends: ``bool [B]`` True at a profile's first and last boundary (terminal gaps).
        scoring: gives ``gap_open`` and the terminal factor.

    A boundary that some but fewer than ``group_w / 2^OCC_SHIFT`` of the weight crosses costs
    as if that much did (the occupancy floor of ``ops/colscores.py``).
    """
    both = torch.where(both > 0, torch.maximum(both, group_w >> OCC_SHIFT), both)
    cost = (scoring.gap_open * both) // group_w
    num, den = scoring.terminal
    return torch.where(ends, cost * num // den, cost).to(torch.int32)


def residue_factors(col_weight: torch.Tensor, group_w: torch.Tensor) -> torch.Tensor:
    """``int32`` residue factors ``floor(RES_ONE * column residue weight / group weight)``, at
    least ``RES_ONE >> OCC_SHIFT`` (the occupancy floor of ``ops/colscores.py``).

    Arguments:
        col_weight: ``float64 [C]`` weight of the sequences with a residue in each column (an
            exact integer, above 0).
        group_w: ``int64 [C]`` total weight of each column's profile.
    """
    res = col_weight.to(torch.int64) * RES_ONE // group_w
    return res.clamp_min_(RES_ONE >> OCC_SHIFT).to(torch.int32)


def split_cost(cost: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """A boundary's gap cost as (opening, closing) halves: each faces one end of the gap."""
    close = cost // 2
    return cost - close, close


# a level of at most CPU_LEVEL_CELLS DP cells, none of its pairs above CPU_PAIR_CELLS, runs in
# numba (its pairs in parallel), also on a GPU: there a level costs launches (about 6 ms on an
# H100) while one wide pair costs a host thread more (stages-levels-numba.md). Both were 2^22 and
# 2^19 before the faster host DP; 2^23 for both took 7% less on balifam10000 with BAliBASE's
# accurate cases unchanged (ab_cases-h100-bf10k-pair-372b49f.md, -bb-accurate-pair-). On the
# CPU the pair cap is CPU_DEVICE_PAIR_CELLS: the batched level runs its pairs' DPs in numba too,
# after tensor work that costs more than the numba merges (ab_cases-cpu-pair-cap.md)
CPU_LEVEL_CELLS = 1 << 23
CPU_PAIR_CELLS = 1 << 23
CPU_DEVICE_PAIR_CELLS = 1 << 62
# consecutive numba levels run as one call, which reserves pool rows for every parent's bound
# (its children's bounds together: the true widths are known only once the run is aligned).
# Down a deep chain of merges the bounds grow with the leaves' summed lengths, so a run is cut
# where its parents' bounds would pass RUN_ROWS: PF00037's 10,011 sequences of at most 30
# residues reserved over 24 GB on a CPU device without it.
RUN_ROWS = 1 << 21
# a numba level of one pair of at least this many cells (a link of a deep chain of merges, as
# single linkage and PartTree make) spreads the pair's column scores over the threads; below
# it starting the threads costs more than they save
LONE_PAIR_CELLS = 1 << 16
POOL_ROWS = 1024  # first size of a device's node pool
# device bytes of a batched level per DP cell (packed scores, the bucket's float64 products and
# their int32 copy, scatter indices) and per child column and residue (profiles and products)
LEVEL_CELL_BYTES = 32
LEVEL_COLUMN_BYTES = 24


def _excl(sizes: np.ndarray) -> np.ndarray:
    """Exclusive prefix sums (segment offsets) of ``sizes``."""
    return np.cumsum(sizes) - sizes


def _ranges(starts: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """``starts[i] .. starts[i] + sizes[i] - 1`` for every i, concatenated (int64)."""
    sizes = np.asarray(sizes, np.int64)
    total = int(sizes.sum())
    if total == 0:
        return np.zeros(0, np.int64)
    return np.repeat(np.asarray(starts, np.int64) - _excl(sizes), sizes) + np.arange(total)


def _upload(device: torch.device, **arrays) -> dict[str, torch.Tensor]:
    """Host int64 arrays as tensors on ``device``, in one copy that does not wait for the
    device (:func:`~torchmsa.ops.backend.to_device`); views by name."""
    parts = [np.asarray(a, np.int64).ravel() for a in arrays.values()]
    flat = to_device(np.concatenate(parts) if parts else np.zeros(0, np.int64), device)
    out, at = {}, 0
    for name, part in zip(arrays, parts):
        out[name] = flat[at : at + len(part)]
        at += len(part)
    return out


def _pool_tensor(shape, dtype, device) -> torch.Tensor:
    """A pool buffer, not cleared: every node's rows are written whole before they are read (by
    ``_Nodes.store``, or by ``merge_nodes``, which clears a parent's rows first), so clearing
    the buffers, which grow to millions of rows down deep trees, would be wasted work."""
    return torch.empty(shape, dtype=dtype, device=device)


class _Pool:
    """Profiles (``int32 [rows, A]``) and boundary weights (``int64``) of the internal nodes
    that live on one device; a node's rows are its columns, its boundaries one more."""

    def __init__(self, device: torch.device, n_alpha: int):
        self.device = device
        self.prof = _pool_tensor((POOL_ROWS, n_alpha), torch.int32, device)
        self.both = _pool_tensor((POOL_ROWS,), torch.int64, device)
        self.rows = self.bnds = 0


class _Nodes:
    """Host bookkeeping of every tree node (columns, weight, where its profile lives) and the
    pools. Leaves have no pool entry: their profiles come from the residue codes."""

    def __init__(self, table: ResidueTable, lengths, forest: Forest, weights, n_alpha: int):
        n, k = forest.n_leaves, forest.children.shape[0]
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
        self.pools: list[_Pool] = []
        self._codes = {table.code.device: table.code}
        self._matrix: dict = {}

    def pool(self, device: torch.device) -> int:
        for i, p in enumerate(self.pools):
            if p.device == device:
                return i
        self.pools.append(_Pool(device, self.n_alpha))
        return len(self.pools) - 1

    def codes(self, device: torch.device) -> torch.Tensor:
        if device not in self._codes:
            self._codes[device] = next(iter(self._codes.values())).to(device)
        return self._codes[device]

    def matrix(self, scoring: ProfileScoring, device: torch.device) -> torch.Tensor:
        if device not in self._matrix:
            self._matrix[device] = scoring.matrix.to(device=device, dtype=torch.float64)
        return self._matrix[device]

    def reserve(self, device: torch.device, rows: int, bnds: int) -> _Pool:
        """``device``'s pool with room for ``rows`` more rows and ``bnds`` boundaries; when
        full, it keeps only its live nodes, in a buffer at least twice their size."""
        q = self.pool(device)
        pool = self.pools[q]
        if pool.rows + rows > pool.prof.shape[0] or pool.bnds + bnds > pool.both.shape[0]:
            live = np.nonzero(self.alive & (self.pool_of == q))[0]
            r_src = _ranges(self.row[live], self.cols[live])
            b_src = _ranges(self.bnd[live], self.cols[live] + 1)
            idx = _upload(device, r=r_src, b=b_src)
            size = (2 * (len(r_src) + rows) + POOL_ROWS, self.n_alpha)
            need = size[0] * (4 * self.n_alpha + 8)
            if device.type == "cuda" and need > torch.cuda.mem_get_info(device)[0]:
                raise ResourceError(
                    f"the profiles of {len(live)} tree nodes ({size[0]} columns)",
                    need,
                    torch.cuda.mem_get_info(device)[0],
                    "align fewer or shorter sequences, or on the CPU (device='cpu')",
                )
            new_prof = _pool_tensor(size, torch.int32, device)
            new_both = _pool_tensor((2 * (len(b_src) + bnds) + POOL_ROWS,), torch.int64, device)
            new_prof[: len(r_src)] = pool.prof[idx["r"]]
            new_both[: len(b_src)] = pool.both[idx["b"]]
            self.row[live] = _excl(self.cols[live])
            self.bnd[live] = _excl(self.cols[live] + 1)
            pool.prof, pool.both, pool.rows, pool.bnds = new_prof, new_both, len(r_src), len(b_src)
        return pool

    def store(self, nodes, cols, prof, both, device) -> None:
        """Appends nodes' profiles and boundary weights to ``device``'s pool."""
        rows, bnds = prof.shape[0], both.shape[0]
        pool = self.reserve(device, rows, bnds)
        pool.prof[pool.rows : pool.rows + rows] = prof
        pool.both[pool.bnds : pool.bnds + bnds] = both
        self.pool_of[nodes] = self.pools.index(pool)
        self.row[nodes] = pool.rows + _excl(cols)
        self.bnd[nodes] = pool.bnds + _excl(cols + 1)
        self.alive[nodes] = True
        pool.rows += rows
        pool.bnds += bnds

    def place(self, parents: np.ndarray, widths: np.ndarray) -> None:
        """New parents' columns and their range in the element space, in order."""
        self.cols[parents] = widths
        self.elem[parents] = self.n_elems + _excl(widths)
        self.n_elems += int(widths.sum())

    def fetch(self, nodes: np.ndarray, device: torch.device) -> None:
        """Moves inner nodes whose profiles live on another device into ``device``'s pool."""
        q = self.pool(device)
        nodes = nodes[(self.pool_of[nodes] >= 0) & (self.pool_of[nodes] != q)]
        for p, pool in enumerate(self.pools):
            sel = nodes[self.pool_of[nodes] == p]
            if len(sel) == 0:
                continue
            src = _upload(
                pool.device,
                r=_ranges(self.row[sel], self.cols[sel]),
                b=_ranges(self.bnd[sel], self.cols[sel] + 1),
            )
            prof, both = pool.prof[src["r"]].to(device), pool.both[src["b"]].to(device)
            self.store(sel, self.cols[sel], prof, both, device)


def _cpu_run(
    st: _Nodes, levels: list[np.ndarray], bound: np.ndarray, scoring: ProfileScoring, track=None
):
    """Levels too small for batched launches, node after node in numba (``cpu/merge.py``);
    ``bound`` holds at least each node's columns (a parent's: its children's together).
    ``track`` (accurate mode): the :class:`_Columns` whose consistency tiles join the scores.

    Returns ``(child element ids, their elements in the parents)`` on the host.
    """
    import numba

    from torchmsa.cpu.merge import merge_nodes

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
        OCC_SHIFT,
        new_col,
        ent,
        lo,
        hi,
        cweight,
        res_col,
        node_of_seq,
        numba.get_num_threads(),
        LONE_PAIR_CELLS,
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
    kid_elems = _ranges(st.elem[kids], kid_cols)
    elems = np.repeat(st.elem[np.repeat(parents, 2)], kid_cols) + new_col[:used]
    return kid_elems, torch.from_numpy(elems)


class _Layout:
    """A level's children laid out in order on the device: their columns ``0 .. K-1`` and
    boundaries ``0 .. K + 2P - 1``, each with its child and its place in that child. The
    inner children must live in ``device``'s pool already (their pool rows are read here).

    Only the children's own values cross from the host (``O(children)``, one copy); the
    per-column and per-boundary indices are made on the device, not as host numpy arrays of
    ``O(columns)`` copied up (``ab_versions-h100-bf10k-0a1a67e.md``).
    """

    def __init__(self, st: _Nodes, kids: np.ndarray, cols: np.ndarray, device: torch.device):
        n_kids, K = len(kids), int(cols.sum())
        leaf = kids < st.n_leaves
        self.K, self.nb = K, K + n_kids
        self.col_off = _excl(cols)
        self.v = _upload(
            device,
            cols=cols,
            col_off=self.col_off,
            bnd_off=self.col_off + np.arange(n_kids),
            w=st.w[kids],
            leaf=leaf,
            # where a child's rows come from: a leaf's residues, an inner node's pool rows
            start=np.where(leaf, st.seq_off[np.where(leaf, kids, 0)], st.row[kids]),
            bstart=np.where(leaf, 0, st.bnd[kids]),
            elem=st.elem[kids],
        )
        v, every = self.v, torch.arange(n_kids, device=device)
        self.kid = torch.repeat_interleave(every, v["cols"], output_size=K)
        self.pos = torch.arange(K, device=device) - v["col_off"][self.kid]
        self.bkid = torch.repeat_interleave(every, v["cols"] + 1, output_size=self.nb)
        self.bpos = torch.arange(self.nb, device=device) - v["bnd_off"][self.bkid]


def _kid_profiles(st: _Nodes, lay: _Layout, device):
    """Profiles ``float64 [K, A]`` and boundary weights ``int64 [K + 2P]`` of the level's
    children: leaves from their codes, internal nodes from their pools."""
    v = lay.v
    pool = st.pools[st.pool(device)]
    leaf = v["leaf"][lay.kid].bool()
    src = v["start"][lay.kid] + lay.pos
    # every column gathers its pool row (row 0 for a leaf's, then cleared) and a leaf's column
    # adds its weight at its residue's code
    prof = pool.prof[torch.where(leaf, 0, src)].to(torch.float64)
    prof.masked_fill_(leaf[:, None], 0.0)
    code = st.codes(device)[torch.where(leaf, src, 0)]
    weight = torch.where(leaf, v["w"][lay.kid], 0).to(torch.float64)
    prof.index_put_((torch.arange(lay.K, device=device), code), weight, accumulate=True)
    bleaf = v["leaf"][lay.bkid].bool()
    both = pool.both[torch.where(bleaf, 0, v["bstart"][lay.bkid] + lay.bpos)]
    leaf_w = torch.where(v["cols"][lay.bkid] > 0, v["w"][lay.bkid], 0)
    return prof, torch.where(bleaf, leaf_w, both)


def _merge(st, pairs, kids, cols, lay: _Layout, prof, both, info, ops, device):
    """The parents of a level: their columns, profiles and boundary weights from the children's
    and the traceback ops; records where every child column went (``st`` element maps)."""
    P = len(pairs)
    n, m = cols[:P], cols[P:]
    W = info[:, 1].cpu().numpy().astype(np.int64)  # the level's one wait for the device
    sizes = n + m
    parents = pairs[:, 2]
    st.place(parents, W)
    p = _upload(
        device,
        W=W,
        w_off=_excl(W),
        wb_off=_excl(W + 1),
        sizes=sizes,
        op_off=_excl(sizes),
        elem=st.elem[parents],
    )
    T, K, v = int(sizes.sum()), lay.K, lay.v
    op_pair = torch.repeat_interleave(torch.arange(P, device=device), p["sizes"], output_size=T)
    t = torch.arange(T, device=device) - p["op_off"][op_pair]
    valid = t < p["W"][op_pair]
    ops = ops[:T].to(device)
    slot = torch.empty(K + 1, dtype=torch.int64, device=device)  # slot K: a dump
    for take, base in ((ops != OP_LEFT, 0), (ops != OP_UP, int(n.sum()))):
        take = valid & take
        slot[torch.where(take, base + torch.cumsum(take, 0) - 1, K)] = t
    new_col = slot[:K]
    col_pair = lay.kid % P
    prof_par = torch.zeros((int(W.sum()), st.n_alpha), dtype=torch.float64, device=device)
    prof_par.index_add_(0, p["w_off"][col_pair] + new_col, prof)
    # boundary c of a non-empty child: what lies left and right of it must stay adjacent (an
    # empty child's one boundary reads slots that it then ignores)
    bk, c = lay.bkid, lay.bpos
    bcols, bpair = v["cols"][bk], bk % P
    last = c == bcols
    here = slot[(v["col_off"][bk] + torch.minimum(c, bcols - 1)).clamp_min(0)] + last
    before = torch.where(c == 0, 0, slot[v["col_off"][bk] + (c - 1).clamp_min(0)] + 1)
    keep = (here == before) & (~last | (here == p["W"][bpair])) & (bcols > 0)
    nbp = int((W + 1).sum())
    both_par = torch.zeros(nbp + 1, dtype=torch.int64, device=device)
    both_par.index_add_(0, torch.where(keep, p["wb_off"][bpair] + here, nbp), both)
    st.alive[kids] = False
    st.store(parents, W, prof_par.to(torch.int32), both_par[:nbp], device)
    st.w[parents] = st.w[pairs[:, 0]] + st.w[pairs[:, 1]]
    elems = p["elem"][col_pair] + new_col
    return new_col, elems, v["elem"][lay.kid] + lay.pos


def _level(st, pairs, scoring, device, backend, cons=None, g=0, track=None):
    """Aligns one level's node pairs (``int64 [P, 3]``: child, child, parent) on ``device``.

    Returns ``(child element ids, their elements in the parents)``, both on ``device``.
    """
    P = len(pairs)
    kids = np.concatenate([pairs[:, 0], pairs[:, 1]])
    cols = st.cols[kids]
    kid_w = st.w[kids]
    st.fetch(kids[kids >= st.n_leaves], device)  # inner children from numba runs move here
    lay = _Layout(st, kids, cols, device)
    col_off, v = lay.col_off, lay.v
    prof, both = _kid_profiles(st, lay, device)
    ends = (lay.bpos == 0) | (lay.bpos == v["cols"][lay.bkid])
    gap_open, gap_close = split_cost(open_costs(both, v["w"][lay.bkid], ends, scoring))
    res = torch.zeros_like(both, dtype=torch.int32)
    res[torch.arange(lay.K, device=device) + lay.kid + 1] = residue_factors(
        prof.sum(1), v["w"][lay.kid]
    )
    n, m = cols[:P], cols[P:]
    S, s_off = batched_column_scores(
        prof, col_off[:P], n, col_off[P:], m, kid_w[:P], kid_w[P:], st.matrix(scoring, device)
    )
    if cons is not None:
        S = S + track.tiles(cons, g, kids, P, s_off, cols, col_off, kid_w)
    info, ops, _ = profile_align(
        S,
        s_off,
        torch.from_numpy(n.astype(np.int32)),
        torch.from_numpy(m.astype(np.int32)),
        gap_open,
        gap_close,
        v["bnd_off"][:P],
        gap_open,
        gap_close,
        v["bnd_off"][P:],
        scoring.gap_extend,
        GLOBAL,
        res,
        res,
        backend=backend,
    )
    new_col, elems, kid_elems = _merge(st, pairs, kids, cols, lay, prof, both, info, ops, device)
    if track is not None:
        track.move(kids, P, col_off, new_col, pairs[:, 2])
    return kid_elems, elems


def _parts(st: _Nodes, pairs: np.ndarray, device: torch.device) -> list[np.ndarray]:
    """A level's pairs in batches that fit the device's memory budget (pairs of one level are
    independent, so the batches give the same result as the whole level)."""
    n, m = st.cols[pairs[:, 0]], st.cols[pairs[:, 1]]
    need = n * m * LEVEL_CELL_BYTES + (n + m) * st.n_alpha * LEVEL_COLUMN_BYTES
    budget = memory_budget(device)
    big = np.nonzero(need > budget)[0]
    if len(big):
        p = int(big[0])
        raise ResourceError(
            f"merging two profiles of {n[p]} and {m[p]} columns",
            int(need[p]),
            budget,
            "align fewer or shorter sequences (the widest profiles grow with both)",
        )
    ends = np.cumsum(need)
    parts, start = [], 0
    while start < len(pairs):
        base = ends[start - 1] if start else 0
        stop = max(start + 1, int(np.searchsorted(ends, base + budget, side="right")))
        parts.append(pairs[start:stop])
        start = stop
    return parts


class _Columns:
    """Accurate mode's consistency tiles need each residue's column in its current node after
    every level: the residue table is kept up to date (on the table's device)."""

    def __init__(self, table: ResidueTable, weights: torch.Tensor, n_nodes: int, cons):
        self.table, self.weights, self.cons = table, weights, cons
        self._entries = None
        device = table.seq.device
        self.node_of_seq = torch.arange(len(weights), device=device)
        self.kid_pos = torch.full((n_nodes,), -1, dtype=torch.int64, device=device)

    def entries(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(ent int64 [5, E], lo int64 [nodes], hi int64 [nodes])`` on the host: every library
        entry's ``x, i, y, j`` and value ``w w_x w_y``, in the consistency's order (each node's
        entries contiguous), and the range ``lo[v]:hi[v]`` of the entries whose sequences meet
        at node ``v``."""
        if self._entries is None:
            c = self.cons
            val = entry_values(c, self.weights)
            ent = torch.stack([c.x, c.i, c.y, c.j, val]).to(torch.int64).cpu().numpy()
            nodes, counts = (
                t.cpu().numpy() for t in torch.unique_consecutive(c.node, return_counts=True)
            )
            lo = np.zeros(self.kid_pos.numel(), np.int64)
            hi = np.zeros_like(lo)
            lo[nodes] = np.cumsum(counts) - counts
            hi[nodes] = lo[nodes] + counts
            self._entries = (ent, lo, hi)
        return self._entries

    def _seq_kid(self, kids):
        kids_t = torch.from_numpy(kids).to(self.kid_pos.device)
        self.kid_pos[kids_t] = torch.arange(len(kids), device=self.kid_pos.device)
        seq_kid = self.kid_pos[self.node_of_seq]
        self.kid_pos[kids_t] = -1
        return seq_kid

    def tiles(self, cons, g, kids, P, s_off, cols, col_off, kid_w):
        dev = self.kid_pos.device
        n, m, w = (torch.from_numpy(x).to(dev) for x in (cols[:P], cols[P:], kid_w))
        seq_kid = self._seq_kid(kids)
        return cons.level_tiles(g, self.table, seq_kid, P, s_off, n, m, w, self.weights)

    def move(self, kids, P, col_off, new_col, parents):
        table, dev = self.table, self.kid_pos.device
        seq_kid = self._seq_kid(kids)
        idx = torch.nonzero(seq_kid[table.seq] >= 0).squeeze(1)
        r_kid = seq_kid[table.seq[idx]]
        offs = torch.from_numpy(col_off).to(dev)
        table.col[idx] = new_col.to(dev)[offs[r_kid] + table.col[idx]]
        in_level = seq_kid >= 0
        par = torch.from_numpy(parents).to(dev)
        self.node_of_seq[in_level] = par[seq_kid[in_level] % P]


@dataclass
class Forest:
    """Guide trees of several independent jobs as one forest, for level-batched work.

    Leaves are ``0 .. n_leaves-1`` (job j's sequences are contiguous); internal node k has id
    ``n_leaves + k`` and smaller-id children. ``levels[g]`` holds every job's level-g nodes, so
    one batched step aligns a level of all jobs at once (GMSA-style sharing of launches).
    """

    n_leaves: int
    children: np.ndarray  # int64 [K, 2]
    levels: list[np.ndarray]
    roots: np.ndarray  # int64 [jobs]: each job's root id (its leaf for a one-sequence job)

    @classmethod
    def from_trees(cls, trees: list, sizes: list[int]) -> Forest:
        """Forest of ``trees[j]`` over ``sizes[j]`` sequences (``None`` for one sequence)."""
        total = int(sum(sizes))
        leaf_off = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
        kids, roots, levels = [], [], []
        inner = 0
        for tree, n, lo in zip(trees, sizes, leaf_off):
            if n == 1:
                roots.append(lo)
                continue
            ch = np.asarray(tree.children, dtype=np.int64)
            # leaf i -> lo + i; internal n + k -> total + inner + k
            remap = np.concatenate([lo + np.arange(n), total + inner + np.arange(n - 1)])
            kids.append(remap[ch])
            for g, lev in enumerate(tree.levels()):
                if g == len(levels):
                    levels.append([])
                levels[g].append(remap[np.asarray(lev)])
            roots.append(total + inner + n - 2)
            inner += n - 1
        children = np.concatenate(kids) if kids else np.zeros((0, 2), np.int64)
        return cls(
            total, children, [np.concatenate(lv) for lv in levels], np.asarray(roots, np.int64)
        )


def progressive_align(
    table: ResidueTable,
    lengths: torch.Tensor,
    forest: Forest,
    weights: torch.Tensor,
    scoring: ProfileScoring,
    backend: str = "auto",
    progress=None,
    consistency=None,
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

    Returns:
        Each job's alignment width.
    """
    device = table.seq.device
    n_alpha = scoring.matrix.shape[0]
    st = _Nodes(table, lengths, forest, weights, n_alpha)
    track = None
    if consistency is not None:
        track = _Columns(table, weights.to(device), st.cols.size, consistency)
    # small levels run node by node in numba on the CPU, for the CPU backend and on a GPU (where
    # their launches would cost more than their work); Triton on the CPU (the interpreter in
    # tests) keeps every level batched
    cpu = torch.device("cpu")
    numba_ok = device.type == "cuda" or backend in ("auto", "cpu")
    pair_cap = CPU_DEVICE_PAIR_CELLS if device.type == "cpu" else CPU_PAIR_CELLS
    pieces: dict[torch.device, list] = {}
    done, total = 0, forest.children.shape[0]
    run: list[np.ndarray] = []
    run_rows = 0  # the run's parents' bounds together
    # columns of the nodes, where nodes of the waiting run have a bound (the sum of their
    # children's) until the run is aligned
    bound = st.cols

    def flush():
        nonlocal bound
        if run:
            pieces.setdefault(cpu, []).append(_cpu_run(st, run, bound, scoring, track))
            run.clear()
            if progress is not None:
                progress(done, total)
        bound = st.cols

    for g, level in enumerate(forest.levels):
        ids = np.asarray(level, dtype=np.int64)
        pairs = np.concatenate([forest.children[ids - forest.n_leaves], ids[:, None]], 1)
        pair_cells = bound[pairs[:, 0]] * bound[pairs[:, 1]]
        cells = int(pair_cells.sum())
        small = cells <= CPU_LEVEL_CELLS and int(pair_cells.max()) <= pair_cap
        if numba_ok and small:
            if run and run_rows + int(bound[pairs[:, :2]].sum()) > RUN_ROWS:
                flush()  # the children's widths become exact
            if not run:
                bound, run_rows = st.cols.copy(), 0
            bound[pairs[:, 2]] = bound[pairs[:, 0]] + bound[pairs[:, 1]]
            run_rows += int(bound[pairs[:, 2]].sum())
            run.append(pairs)
        else:
            flush()
            parts = [pairs] if consistency is not None else _parts(st, pairs, device)
            for part in parts:
                kid_elems, elems = _level(st, part, scoring, device, backend, consistency, g, track)
                pieces.setdefault(device, []).append((kid_elems, elems))
        done += len(level)
        if progress is not None and not run:
            progress(done, total)
    flush()  # reports the last run's levels (each level is reported once)
    # every element points to where it went in its parent; pointer jumping takes each to the
    # root's column
    up = torch.arange(st.n_elems, device=device)
    for parts in pieces.values():
        idx = torch.cat([to_device(k, device) for k, _ in parts])
        up[idx] = torch.cat([to_device(e, device) for _, e in parts])
    for _ in range(max(1, len(forest.levels)).bit_length()):
        up = up[up]
    # each root's columns are a range of elements: a residue's column is its offset there
    starts = to_device(np.sort(st.elem[forest.roots]), device)
    home = up[: table.seq.numel()]
    table.col = home - starts[torch.searchsorted(starts, home, right=True) - 1]
    return st.cols[forest.roots].tolist()
