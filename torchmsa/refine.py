"""Iterative refinement by tree-dependent partitioning, evaluated in batches (seed 000, stage 4).

Every tree edge splits the sequences in two groups. Removing one group's all-gap columns gives
two sub-alignments; realigning them with the profile DP can only raise their group-to-group score
(the current alignment is one of the DP's paths). The gain of an edge is the DP optimum minus
the score of the current path, times the groups' weight product so that gains of different
edges are in the same (weighted sum-of-pairs) units.

A round evaluates every edge in one batched DP call, applies the best gain, then re-evaluates and
applies the next candidates one by one against the updated alignment; rounds repeat until no
edge gains or the round cap is reached.

Evaluating a batch of edges is a fixed sequence of tensor operations on the alignment's device,
whatever the number of edges: the groups' kept columns and profiles are matrix products of the
edges' membership matrix with the alignment; boundary weights, gap costs, residue factors,
column scores, consistency tiles and the score of the current path are batched gathers and
scatters over all edges; the DP is one batched call. Batches are sized to free memory.
"""

from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np
import torch

from torchmsa.consistency import Library, entry_values
from torchmsa.cpu.dp import GLOBAL, OP_LEFT, OP_MATCH, OP_UP
from torchmsa.cpu.dp_rows import OCC_SHIFT, RES_SHIFT
from torchmsa.cpu.refine import apply_path, entries_by_row, evaluate_edge, evaluate_edges
from torchmsa.ops.colscores import batched_column_scores
from torchmsa.ops.kmer_stream import memory_budget
from torchmsa.ops.profile import profile_align
from torchmsa.progressive import ProfileScoring, open_costs, residue_factors, split_cost

__all__ = ["refine", "partitions", "evaluate_partitions"]

FOLLOW_UPS = 8
CELL_BYTES = 48  # device bytes per DP cell of a batch: scores, consistency sums, DP buffers
DENSE_ELEMENTS = 1 << 23  # elements of one [edges, N, C] step
CONS_BYTES = 128  # device bytes per edge and library entry of a consistency step (its peak)
# at most this many DP cells in one batch (2^29 against 2^27: 7 % less time on 12 large
# BAliBASE cases, most on the widest; benchmarks/results/ab-accurate-cons-a88ec34.md)
MAX_BATCH_CELLS = 1 << 29
# On a GPU, an evaluation runs on the CPU, edge by edge in numba over the host's threads, when
# (edges per thread) x columns² is at most this: small pieces cost more in launches than in
# arithmetic (work shared between host and device, seed 004). On the CPU every evaluation runs
# so.
HOST_CELLS = 1 << 20
# A lone edge (a round's follow-ups) runs on the host up to this many columns²: on a GPU one
# edge costs as many small launches and waits as a batch (9-11 ms on an H100 below 2,048
# columns), on the host its DP alone grows with the cells. Above THREADED_EDGE_CELLS its column
# scores and consistency tile are spread over the host threads (the DP stays on one).
# benchmarks/results/refine_placement-ccd88be.md: the 218 BAliBASE cases' lone edges and
# batches take 29.0 s under these values, 34.0 s with all lone edges up to 2^20 on one thread.
HOST_EDGE_CELLS = 1 << 22
THREADED_EDGE_CELLS = 1 << 20


def partitions(tree) -> list[np.ndarray]:
    """Leaf sets of one side of every distinct tree edge (one child of the root is skipped)."""
    n = tree.n_leaves
    if n < 3:
        return []
    under = tree.leaves_under()
    root_kids = set(int(c) for c in tree.children[-1])
    skip = max(root_kids)
    out = [np.array([leaf]) for leaf in range(n) if leaf != skip]
    out += [np.asarray(under[k]) for k in range(n - 1) if n + k not in (skip, tree.root)]
    return out


class _State:
    """The current alignment and what every edge evaluation against it shares."""

    def __init__(self, codes, weights, gap, n_alpha, lib=None, lib_val=None):
        self.codes, self.w, self.n_alpha, self.gap, self.hot = codes, weights, n_alpha, gap, None
        n, width = codes.shape
        device = codes.device
        self.res = codes != gap
        self.resf = self.res.to(torch.float64)
        pos = torch.arange(width, device=device)
        last = torch.cummax(torch.where(self.res, pos, -1), 1).values
        # column of each row's previous residue before column c (-1: none)
        self.prev = torch.cat([last.new_full((n, 1), -1), last[:, :-1]], 1)
        self.total = self._profile(weights.to(torch.float64)[None])[0]
        self.lib, self.lib_val = lib, lib_val
        if lib is not None:
            counts = self.res.sum(1)
            seq_off = torch.cat([counts.new_zeros(1), torch.cumsum(counts, 0)])
            res_col = pos.expand_as(codes)[self.res]
            self.lib_cx = res_col[seq_off[lib.x] + lib.i]
            self.lib_cy = res_col[seq_off[lib.y] + lib.j]

    def _profile(self, memw):
        """``float64 [K, C, A]`` weighted residue counts of the rows weighted by ``memw``."""
        n, width = self.codes.shape
        if n * width * self.n_alpha <= DENSE_ELEMENTS:
            if self.hot is None:
                hot = torch.nn.functional.one_hot(
                    self.codes.long(), max(self.gap, self.n_alpha) + 1
                )
                self.hot = hot[..., : self.n_alpha].reshape(n, -1).to(torch.float64)
            return (memw @ self.hot).view(-1, width, self.n_alpha)
        out = memw.new_zeros(memw.shape[0], width, self.n_alpha)
        for x in range(self.n_alpha):
            out[:, :, x] = memw @ (self.codes == x).to(torch.float64)
        return out


def _last_before(keep):
    """``int64 [K, C]``: index of the last kept column before each column (-1: none)."""
    pos = torch.arange(keep.shape[1], device=keep.device)
    last = torch.cummax(torch.where(keep, pos, -1), 1).values
    return torch.cat([last.new_full((keep.shape[0], 1), -1), last[:, :-1]], 1)


class _Side(NamedTuple):
    """One group of every edge in a batch, its sub-alignments packed one after another."""

    keep: torch.Tensor  # bool [K, C]: the columns the group keeps
    col: torch.Tensor  # int64 [K, C]: kept column's index in the sub-alignment (others: one less)
    n: torch.Tensor  # int64 [K]: sub-alignment widths
    off: torch.Tensor  # int64 [K]: first boundary of each sub-alignment
    prof: torch.Tensor  # float64 [sum(n), A]
    open: torch.Tensor  # int32 [sum(n + 1)] opening halves of the boundary gap costs
    close: torch.Tensor  # int32 [sum(n + 1)] closing halves
    res: torch.Tensor  # int32 [sum(n + 1)] residue factors (index 0 of each unused)


def _boundaries(st, mem, keep, col, n, off):
    """``int64 [sum(n + 1)]``: each group's weight of rows with residues on both sides of each
    boundary of its sub-alignment (the outside counting as residue), packed at ``off``."""
    k_all = keep.shape[0]
    out = torch.zeros(int(off[-1] + n[-1] + 1), dtype=torch.int64, device=keep.device)
    step = max(1, DENSE_ELEMENTS // max(1, st.codes.numel()))
    prevk = _last_before(keep)
    last_kept = (keep.shape[1] - 1) - torch.flip(keep, [1]).to(torch.int8).argmax(1)
    dest = off[:, None] + col
    for k0 in range(0, k_all, step):
        m, pk = mem[k0 : k0 + step], prevk[k0 : k0 + step]
        # row r has residues on both sides of the boundary before kept column c when it has a
        # residue at c and its previous residue is at the previous kept column (or none is kept)
        both = m[:, :, None] & st.res[None] & (st.prev[None] >= pk[:, None, :])
        inner = (both * st.w[None, :, None]).sum(1)
        kk = keep[k0 : k0 + step]
        out[dest[k0 : k0 + step][kk]] = inner[kk]
        at_end = st.res.T[last_kept[k0 : k0 + step]] & m
        out[off[k0 : k0 + step] + n[k0 : k0 + step]] = (at_end * st.w).sum(1)
    return out


def _side(st, mem, keep, prof_full, w, scoring) -> _Side:
    """One group of a batch: packed profile, boundary offsets, gap costs, residue factors."""
    device = keep.device
    col = torch.cumsum(keep.long(), 1) - 1
    n = col[:, -1] + 1
    off = torch.cumsum(n + 1, 0) - (n + 1)
    prof = prof_full[keep]
    both = _boundaries(st, mem, keep, col, n, off)
    k_of_b = torch.repeat_interleave(torch.arange(n.numel(), device=device), n + 1)
    ends = torch.zeros_like(both, dtype=torch.bool)
    ends[off] = True
    ends[off + n] = True
    g_open, g_close = split_cost(open_costs(both, w[k_of_b], ends, scoring))
    k_of_c = torch.repeat_interleave(torch.arange(n.numel(), device=device), n)
    res = torch.zeros_like(g_open)
    res[torch.arange(k_of_c.numel(), device=device) + k_of_c + 1] = residue_factors(
        prof.sum(1), w[k_of_c]
    )
    return _Side(keep, col, n, off, prof, g_open, g_close, res)


def _add_consistency(st, S, s_off, mem, a, b, w_a, w_b, weight):
    """Adds each edge's consistency tile (see :mod:`torchmsa.consistency`) to its scores.

    Only the cells that library entries touch change: their sums come from one sort of the
    entries' cell indices, not from a pass over every cell.
    """
    lib = st.lib
    ka, kb, nb = a.col, b.col, b.n
    denom = w_a * w_b
    step = max(1, memory_budget(S.device) // (CONS_BYTES * max(1, len(lib))))
    for k0 in range(0, mem.shape[0], step):
        sx, sy = mem[k0 : k0 + step][:, lib.x], mem[k0 : k0 + step][:, lib.y]
        kk, e = torch.nonzero(sx != sy, as_tuple=True)
        a_is_x = sx[kk, e]
        ca = torch.where(a_is_x, st.lib_cx[e], st.lib_cy[e])
        cb = torch.where(a_is_x, st.lib_cy[e], st.lib_cx[e])
        kk = kk + k0
        cell, inv = torch.unique(s_off[kk] + ka[kk, ca] * nb[kk] + kb[kk, cb], return_inverse=True)
        acc = torch.zeros(cell.numel(), dtype=torch.int64, device=S.device)
        acc.index_add_(0, inv, st.lib_val[e])
        owner = torch.searchsorted(s_off, cell, right=True) - 1
        S[cell] += torch.div(acc * int(weight), denom[owner], rounding_mode="floor").to(torch.int32)


def _facing(cost, res):
    return (cost.long() * res.long()) >> RES_SHIFT


def _current_scores(S, s_off, a: _Side, b: _Side, ext):
    """``int64 [K]``: the score of each edge's current path (the DP's global-mode rules).

    A run of gaps at one boundary pays its opening cost at the first column it faces and its
    closing cost at the last (each scaled by that column's residue factor); between two of its
    columns it pays ``ext``, or closing and reopening when that is cheaper, except in a run at
    the start of the path, which pays ``ext``. As ``cpu.dp.path_score``, for all edges at once.
    """
    off_a, open_a, close_a, res_a = a.off, a.open, a.close, a.res
    nb, off_b, open_b, close_b, res_b = b.n, b.off, b.open, b.close, b.res
    op = torch.where(a.keep & b.keep, OP_MATCH, torch.where(a.keep, OP_UP, OP_LEFT))
    ia = a.col + (~a.keep).long()  # A columns before each column
    jb = b.col + (~b.keep).long()
    match = op == OP_MATCH
    s_idx = s_off[:, None] + ia * nb[:, None] + jb
    if S.numel():  # unmatched columns read cell 0 and drop it
        total = torch.where(match, S[torch.where(match, s_idx, 0)].long(), 0).sum(1)
    else:  # no edge has two non-empty sides, so no column matches
        total = torch.zeros(match.shape[0], dtype=torch.int64, device=match.device)
    start = torch.ones_like(match)
    start[:, 1:] = op[:, 1:] != op[:, :-1]
    end = torch.ones_like(match)
    end[:, :-1] = op[:, :-1] != op[:, 1:]
    lead = torch.cumsum(start.long(), 1) == 1
    up = op == OP_UP
    # an UP column faces A column ia (factor index ia + 1) inside B's boundary jb; LEFT mirrors
    ba, bb = off_a[:, None] + ia, off_b[:, None] + jb
    o = torch.where(up, open_b[bb], open_a[ba])
    c = torch.where(up, close_b[bb], close_a[ba])
    res_a, res_b = (torch.cat([r, r.new_zeros(2)]) for r in (res_a, res_b))
    fa, fb = off_a[:, None] + ia + 1, off_b[:, None] + jb + 1
    r_here = torch.where(up, res_a[fa], res_b[fb])
    r_next = torch.where(up, res_a[fa + 1], res_b[fb + 1])
    step = torch.where(lead, ext, (_facing(c, r_here) + _facing(o, r_next)).clamp(max=ext))
    cost = start * _facing(o, r_here) + end * _facing(c, r_here) + (~end) * step
    return total - torch.where(match, 0, cost).sum(1)


def _batches(cells: list[int], budget: int) -> list[tuple[int, int]]:
    out, lo, acc = [], 0, 0
    for k, c in enumerate(cells):
        if k > lo and acc + c > budget:
            out.append((lo, k))
            lo, acc = k, 0
        acc += c
    out.append((lo, len(cells)))
    return out


def evaluate_partitions(st, sides, scoring, backend, consistency_weight=0):
    """Realign both groups of every edge against the current alignment.

    Arguments:
        st: the current alignment's :class:`_State`.
        sides: ``bool [K, N]``, True for the rows of each edge's group A.
        scoring: the profile scoring; backend: DP backend.
        consistency_weight: DP units per unit of consistency (with ``st.lib``).

    Returns:
        ``(diff, w_a, w_b, ops)``: per edge the DP optimum minus the current path's score, the
        groups' weights (Python ints) and the new path's ops (``uint8`` on the CPU).
    """
    device = st.codes.device
    mem_b = ~sides
    keep_a = (sides.to(torch.float64) @ st.resf) > 0
    keep_b = (mem_b.to(torch.float64) @ st.resf) > 0
    cells = (keep_a.sum(1) * keep_b.sum(1)).tolist()
    budget = min(MAX_BATCH_CELLS, max(1, memory_budget(device) // CELL_BYTES))
    mat = scoring.matrix.to(device=device, dtype=torch.float64)
    diffs, was, wbs, all_ops = [], [], [], []
    for lo, hi in _batches(cells, budget):
        ma, mb, ka, kb = sides[lo:hi], mem_b[lo:hi], keep_a[lo:hi], keep_b[lo:hi]
        w_a = (ma * st.w).sum(1)
        w_b = st.w.sum() - w_a
        prof_a = st._profile(ma.to(torch.float64) * st.w.to(torch.float64))
        prof_b = st.total[None] - prof_a
        a = _side(st, ma, ka, prof_a, w_a, scoring)
        b = _side(st, mb, kb, prof_b, w_b, scoring)
        del prof_a, prof_b
        na, nb = a.n, b.n
        prof = torch.cat([a.prof, b.prof])
        col_a = torch.cumsum(na, 0) - na
        col_b = torch.cumsum(nb, 0) - nb + a.prof.shape[0]
        S, s_off = batched_column_scores(prof, col_a, na, col_b, nb, w_a, w_b, mat)
        if st.lib is not None and len(st.lib):
            _add_consistency(st, S, s_off, ma, a, b, w_a, w_b, consistency_weight)
        info, ops, ops_off = profile_align(
            S,
            s_off,
            na.to(torch.int32),
            nb.to(torch.int32),
            a.open,
            a.close,
            a.off,
            b.open,
            b.close,
            b.off,
            scoring.gap_extend,
            GLOBAL,
            a.res,
            b.res,
            backend=backend,
        )
        old = _current_scores(S, s_off, a, b, scoring.gap_extend)
        diff = info[:, 0].to(device=device, dtype=torch.int64) - old
        diffs += diff.tolist()
        was += w_a.tolist()
        wbs += w_b.tolist()
        info, ops, ops_off = info.cpu(), ops.cpu(), ops_off.cpu()
        all_ops += [ops[ops_off[k] : ops_off[k] + info[k, 1]] for k in range(hi - lo)]
    return diffs, was, wbs, all_ops


def _apply(codes, side, ops, gap):
    """The alignment with group A (rows of ``side``) and B merged along ``ops``; host codes in
    numba (:func:`torchmsa.cpu.refine.apply_path`, the same result without a dozen small
    tensor operations)."""
    if codes.device.type == "cpu":
        host = np.ascontiguousarray(codes.numpy())
        path = np.ascontiguousarray(ops.cpu().numpy())
        return torch.from_numpy(apply_path(host, side.cpu().numpy(), path, gap))
    return _apply_tensors(codes, side, ops, gap)


def _apply_tensors(codes, side, ops, gap):
    """:func:`_apply` with tensor operations on ``codes``' device."""
    ops = ops.to(codes.device)
    res = codes != gap
    rows_a = torch.nonzero(side).squeeze(1)
    rows_b = torch.nonzero(~side).squeeze(1)
    keep_a, keep_b = res[rows_a].any(0), res[rows_b].any(0)
    width = ops.numel()
    out = torch.full((codes.shape[0], width), gap, dtype=codes.dtype, device=codes.device)
    pos = torch.arange(width, device=codes.device)
    pos_a, pos_b = pos[ops != OP_LEFT], pos[ops != OP_UP]
    out[rows_a[:, None], pos_a[None, :]] = codes[rows_a][:, keep_a]
    out[rows_b[:, None], pos_b[None, :]] = codes[rows_b][:, keep_b]
    return out


def refine(
    codes: torch.Tensor,
    tree,
    weights: torch.Tensor,
    scoring: ProfileScoring,
    gap: int,
    max_rounds: int = 8,
    backend: str = "auto",
    library=None,
    consistency_weight: int = 0,
) -> tuple[torch.Tensor, int]:
    """Refine ``codes`` (``uint8 [N, C]``); returns the new codes and the edges applied.

    Arguments:
        codes: the alignment.
        tree: the guide tree whose edges give the partitions.
        weights: ``int64 [N]`` quantized sequence weights.
        scoring: the profile scoring (the objective).
        gap: the gap code.
        max_rounds: at most this many rounds (each: one batch over all edges plus follow-ups).
        backend: DP backend.
        library: optional :class:`torchmsa.consistency.Library` of the job: its consistency
            (times ``consistency_weight``) joins the objective (accurate mode).
    """
    device = codes.device
    parts = partitions(tree)
    if not parts or not bool((codes != gap).any()):  # no edge, or only empty sequences
        return codes, 0
    n = codes.shape[0]
    sides = torch.zeros(len(parts), n, dtype=torch.bool)
    for k, p in enumerate(parts):
        sides[k, torch.tensor(np.asarray(p), dtype=torch.int64)] = True
    live = (codes != gap).any(0)
    if not bool(live.all()):
        codes = codes[:, live]
    if library is not None and not len(library):
        library = None
    host = None  # the host's arrays, made when an evaluation first runs there
    places = {}
    on_gpu = device.type == "cuda"
    threads = numba.get_num_threads()

    def evaluate(codes, rows):
        """``rows`` edges against ``codes``: on the host, edge by edge, when the work is small.
        Returns ``codes`` on the device that evaluated them (the host's copy stays there for
        the merges and later evaluations) and the evaluation."""
        nonlocal host
        width = codes.shape[1]
        limit = HOST_EDGE_CELLS if len(rows) == 1 else HOST_CELLS
        if not on_gpu or -(-len(rows) // threads) * width * width <= limit:
            if host is None:
                host = _Host(sides, weights, scoring, gap, library, consistency_weight)
            codes = codes.cpu()
            return codes, host.evaluate(codes, rows)
        codes = codes.to(device)
        if device not in places:
            places[device] = _Place(device, sides, weights, library)
        at = places[device]
        st = _State(codes, at.weights, gap, scoring.matrix.shape[0], at.lib, at.lib_val)
        return codes, evaluate_partitions(st, at.sides[rows], scoring, backend, consistency_weight)

    applied = 0
    every = torch.arange(len(parts))
    for _ in range(max_rounds):
        codes, (diffs, w_a, w_b, ops) = evaluate(codes, every)
        gains = [d * a * b for d, a, b in zip(diffs, w_a, w_b)]
        order = [
            k
            for k in np.argsort(-np.asarray(gains, dtype=np.float64), kind="stable")
            if gains[k] > 0
        ]
        if not order:
            break
        codes = _apply(codes, sides[order[0]].to(codes.device), ops[order[0]], gap)
        applied += 1
        for k in order[1 : 1 + FOLLOW_UPS]:
            codes, (diff, _, _, one) = evaluate(codes, every[k : k + 1])
            if diff[0] > 0:
                codes = _apply(codes, sides[k].to(codes.device), one[0], gap)
                applied += 1
    return codes.to(device), applied


class _Place:
    """A refinement's edge masks, weights and library on one device."""

    def __init__(self, device, sides, weights, library):
        self.sides = sides.to(device)
        self.weights = weights.to(device=device, dtype=torch.int64)
        self.lib = self.lib_val = None
        if library is not None:
            self.lib = Library(
                *(t.to(device) for t in (library.x, library.i, library.y, library.j, library.w)),
                library.dist,
            )
            self.lib_val = entry_values(self.lib, self.weights)


class _Host:
    """A refinement's edges, weights, scoring and library as host arrays for
    :func:`torchmsa.cpu.refine.evaluate_edges`."""

    def __init__(self, sides, weights, scoring, gap, library, consistency_weight):
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
            OCC_SHIFT,
        )
        if library is None:
            lib, val = np.zeros((4, 0), np.int64), np.zeros(0, np.int64)
        else:  # on the library's device, then one copy each
            w = weights.to(device=library.x.device, dtype=torch.int64)
            lib = torch.stack([library.x, library.i, library.y, library.j]).to(torch.int64)
            val = entry_values(library, w)
            lib, val = lib.cpu().numpy(), val.cpu().numpy()
        self.lib = entries_by_row(lib, val, len(self.weights))
        self.cw = int(consistency_weight) if library is not None else 0

    def evaluate(self, codes, rows):
        """As :func:`evaluate_partitions` for edges ``rows`` (``int64`` tensor) of ``codes``."""
        host = np.ascontiguousarray(codes.cpu().numpy())
        sides = self.sides[rows.numpy()]
        info = np.empty((len(sides), 4), np.int64)
        ops = np.empty((len(sides), 2 * host.shape[1]), np.uint8)
        common = (self.matrix, *self.params, *self.lib, self.cw)
        if len(sides) == 1 and host.shape[1] ** 2 > THREADED_EDGE_CELLS:
            # a large lone edge: its column scores and tile spread over the threads
            threads = numba.get_num_threads()
            evaluate_edge(host, self.weights, sides[0], *common, info[0], ops[0], threads)
        else:  # edges in parallel
            evaluate_edges(host, self.weights, sides, *common, info, ops)
        out = torch.from_numpy(ops)
        return (
            info[:, 0].tolist(),
            info[:, 1].tolist(),
            info[:, 2].tolist(),
            [out[k, : info[k, 3]] for k in range(len(sides))],
        )
