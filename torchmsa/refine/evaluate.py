"""Edge evaluations in batches of tensor operations (seed 000, stage 4).

Evaluating a batch of edges is a fixed sequence of tensor operations on the alignment's device,
whatever the number of edges: the groups' kept columns and profiles are matrix products of the
edges' membership matrix with the alignment; boundary weights, gap costs, residue factors,
column scores, consistency tiles and the score of the current path are batched gathers and
scatters over all edges (the rules of :mod:`torchmsa.ops.rules`); the DP is one batched call.
Batches are sized to the memory budget.
"""

from __future__ import annotations

from typing import NamedTuple

import torch

from torchmsa.config import ExecutionPolicy, MemoryBudget
from torchmsa.constants import GLOBAL, OP_LEFT, OP_MATCH, OP_UP
from torchmsa.ops.colscores import batched_column_scores
from torchmsa.ops.profile import profile_align
from torchmsa.ops.rules.consistency_tile import add_tile
from torchmsa.ops.rules.gap_costs import gap_costs
from torchmsa.ops.rules.path_score import path_scores
from torchmsa.ops.rules.residue_factors import residue_factors
from torchmsa.progressive import ProfileScoring
from torchmsa.stages import stage

__all__ = ["State", "Side", "evaluate_partitions"]

CELL_BYTES = 48  # device bytes per DP cell of a batch: scores, consistency sums, DP buffers
DENSE_ELEMENTS = 1 << 23  # elements of one [edges, N, C] step
CONS_BYTES = 128  # device bytes per edge and library entry of a consistency step (its peak)


class State:
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
        self.total = self.profile(weights.to(torch.float64)[None])[0]
        self.lib, self.lib_val = lib, lib_val
        if lib is not None:
            counts = self.res.sum(1)
            seq_off = torch.cat([counts.new_zeros(1), torch.cumsum(counts, 0)])
            res_col = pos.expand_as(codes)[self.res]
            self.lib_cx = res_col[seq_off[lib.x] + lib.i]
            self.lib_cy = res_col[seq_off[lib.y] + lib.j]

    def profile(self, memw):
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


class Side(NamedTuple):
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


def _side(st, mem, keep, prof_full, w, scoring) -> Side:
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
    g_open, g_close = gap_costs(
        both, w[k_of_b], ends, scoring.gap_open, scoring.terminal, scoring.occ_shift
    )
    k_of_c = torch.repeat_interleave(torch.arange(n.numel(), device=device), n)
    res = torch.zeros_like(g_open)
    res[torch.arange(k_of_c.numel(), device=device) + k_of_c + 1] = residue_factors(
        prof.sum(1), w[k_of_c], scoring.occ_shift
    )
    return Side(keep, col, n, off, prof, g_open, g_close, res)


def _add_consistency(st, S, s_off, mem, a, b, w_a, w_b, weight, limit):
    """Adds each edge's consistency tile (:mod:`torchmsa.ops.rules.consistency_tile`) to its
    scores, edges in steps whose entries fit ``limit`` bytes.

    Only the cells that library entries touch change: their sums come from one sort of the
    entries' cell indices, not from a pass over every cell.
    """
    lib = st.lib
    ka, kb, nb = a.col, b.col, b.n
    denom = w_a * w_b
    step = max(1, limit // (CONS_BYTES * max(1, len(lib))))
    for k0 in range(0, mem.shape[0], step):
        sx, sy = mem[k0 : k0 + step][:, lib.x], mem[k0 : k0 + step][:, lib.y]
        kk, e = torch.nonzero(sx != sy, as_tuple=True)
        a_is_x = sx[kk, e]
        ca = torch.where(a_is_x, st.lib_cx[e], st.lib_cy[e])
        cb = torch.where(a_is_x, st.lib_cy[e], st.lib_cx[e])
        kk = kk + k0
        cell = s_off[kk] + ka[kk, ca] * nb[kk] + kb[kk, cb]
        add_tile(S, cell, st.lib_val[e], weight, denom[kk])


def _current_scores(S, s_off, a: Side, b: Side, ext):
    """``int64 [K]``: the score of each edge's current path
    (:func:`~torchmsa.ops.rules.path_score.path_scores`): every column of the alignment is a
    step that matches, or takes a column of one group against a gap in the other."""
    op = torch.where(a.keep & b.keep, OP_MATCH, torch.where(a.keep, OP_UP, OP_LEFT))
    ia = a.col + (~a.keep).long()  # A columns before each column
    jb = b.col + (~b.keep).long()
    costs_a = (a.off, a.open, a.close, a.res)
    costs_b = (b.off, b.open, b.close, b.res)
    return path_scores(S, s_off, op, ia, jb, b.n, costs_a, costs_b, ext)


def _batches(cells: list[int], budget: int) -> list[tuple[int, int]]:
    out, lo, acc = [], 0, 0
    for k, c in enumerate(cells):
        if k > lo and acc + c > budget:
            out.append((lo, k))
            lo, acc = k, 0
        acc += c
    out.append((lo, len(cells)))
    return out


def evaluate_partitions(
    st: State,
    sides: torch.Tensor,
    scoring: ProfileScoring,
    backend: str,
    consistency_weight: int = 0,
    *,
    policy: ExecutionPolicy | None = None,
    budget: MemoryBudget | None = None,
):
    """Realign both groups of every edge against the current alignment, in batches of tensor
    operations on the alignment's device.

    Arguments:
        st: the current alignment's :class:`State`.
        sides: ``bool [K, N]``, True for the rows of each edge's group A.
        scoring: the profile scoring; backend: DP backend.
        consistency_weight: DP units per unit of consistency (with ``st.lib``).
        policy: ``max_batch_cells`` caps the DP cells of a batch.
        budget: the memory a batch may plan for.

    Returns:
        ``(diff, w_a, w_b, ops)``: per edge the DP optimum minus the current path's score, the
        groups' weights (Python ints) and the new path's ops (``uint8`` on the CPU).
    """
    with stage("refine_batch"):
        return _evaluate(
            st,
            sides,
            scoring,
            backend,
            consistency_weight,
            policy or ExecutionPolicy(),
            budget or MemoryBudget(),
        )


def _evaluate(st, sides, scoring, backend, consistency_weight, policy, budget):
    device = st.codes.device
    mem_b = ~sides
    keep_a = (sides.to(torch.float64) @ st.resf) > 0
    keep_b = (mem_b.to(torch.float64) @ st.resf) > 0
    cells = (keep_a.sum(1) * keep_b.sum(1)).tolist()
    limit = budget.limit(device)
    max_cells = min(policy.max_batch_cells, max(1, limit // CELL_BYTES))
    mat = scoring.matrix.to(device=device, dtype=torch.float64)
    diffs, was, wbs, all_ops = [], [], [], []
    for lo, hi in _batches(cells, max_cells):
        ma, mb, ka, kb = sides[lo:hi], mem_b[lo:hi], keep_a[lo:hi], keep_b[lo:hi]
        w_a = (ma * st.w).sum(1)
        w_b = st.w.sum() - w_a
        prof_a = st.profile(ma.to(torch.float64) * st.w.to(torch.float64))
        prof_b = st.total[None] - prof_a
        a = _side(st, ma, ka, prof_a, w_a, scoring)
        b = _side(st, mb, kb, prof_b, w_b, scoring)
        del prof_a, prof_b
        na, nb = a.n, b.n
        prof = torch.cat([a.prof, b.prof])
        col_a = torch.cumsum(na, 0) - na
        col_b = torch.cumsum(nb, 0) - nb + a.prof.shape[0]
        S, s_off = batched_column_scores(
            prof, col_a, na, col_b, nb, w_a, w_b, mat, occ_shift=scoring.occ_shift
        )
        if st.lib is not None and len(st.lib):
            _add_consistency(st, S, s_off, ma, a, b, w_a, w_b, consistency_weight, limit)
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
