"""Progressive alignment scheduled by tree level.

The growing alignment is kept as one flat residue table: for every residue its sequence, its code
and its column inside the alignment of the tree node that currently holds its sequence. Aligning
one tree level is then a handful of batched tensor operations, the same on the CPU and on a GPU:

1. profiles of all children at once: one scatter-add of integer sequence weights into
   ``float64 [sum(C), A]`` (exact: integer values below 2^53);
2. column scores per node pair as the matrix product ``P_a · M · P_bᵀ`` (float64, exact), turned
   into integers by exact floor division by the pair's weight product;
3. boundary gap costs from the weighted fraction of sequences that a new gap would open a gap in,
   half paid where the gap opens and half where it closes, each scaled by the residue fraction
   of the other profile's column that it faces (a gap against a gap costs nothing);
4. one batched DP call (``ops/profile.py``) for every node pair of the level;
5. the merge: each child column's new index comes from the traceback ops, and one gather moves
   every residue of the level to its new column.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from torchmsa.cpu.dp import GLOBAL, OP_LEFT, OP_UP, RES_ONE
from torchmsa.ops.colscores import batched_column_scores
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
    """
    cost = (scoring.gap_open * both) // group_w
    num, den = scoring.terminal
    return torch.where(ends, cost * num // den, cost).to(torch.int32)


def residue_factors(col_weight: torch.Tensor, group_w: torch.Tensor) -> torch.Tensor:
    """``int32`` residue factors ``floor(RES_ONE * column residue weight / group weight)``.

    Arguments:
        col_weight: ``float64 [C]`` weight of the sequences with a residue in each column (an
            exact integer).
        group_w: ``int64 [C]`` total weight of each column's profile.
    """
    return (col_weight.to(torch.int64) * RES_ONE // group_w).to(torch.int32)


def split_cost(cost: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """A boundary's gap cost as (opening, closing) halves: each faces one end of the gap."""
    close = cost // 2
    return cost - close, close


def _segment_ids(sizes: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """For segments of ``sizes``: (segment id of each flat element, segment offsets)."""
    off = torch.zeros(sizes.numel() + 1, dtype=torch.int64, device=sizes.device)
    off[1:] = torch.cumsum(sizes, 0)
    ids = torch.repeat_interleave(torch.arange(sizes.numel(), device=sizes.device), sizes)
    return ids, off


def _level(table, node_of_seq, node_cols, weights, pairs, scoring, backend, cons=None, g=0):
    device = table.seq.device
    n_pairs = pairs.shape[0]
    kids = torch.cat([pairs[:, 0], pairs[:, 1]])
    kid_pos = torch.full((node_cols.numel(),), -1, dtype=torch.int64, device=device)
    kid_pos[kids] = torch.arange(kids.numel(), device=device)
    seq_kid = kid_pos[node_of_seq]
    idx = torch.nonzero(seq_kid[table.seq] >= 0).squeeze(1)
    r_seq, r_code, r_col = table.seq[idx], table.code[idx], table.col[idx]
    r_kid = seq_kid[r_seq]
    r_w = weights[r_seq]

    cols = node_cols[kids]
    _, col_off = _segment_ids(cols)
    n_alpha = scoring.matrix.shape[0]
    prof = torch.zeros(int(col_off[-1]), n_alpha, dtype=torch.float64, device=device)
    prof.index_put_((col_off[r_kid] + r_col, r_code), r_w.to(torch.float64), accumulate=True)
    kid_w = torch.zeros(kids.numel(), dtype=torch.int64, device=device)
    in_level = seq_kid >= 0
    kid_w.index_put_((seq_kid[in_level],), weights[in_level], accumulate=True)

    # Boundary b of a child lies before its column b; a new gap there opens a gap in every
    # sequence with residues on both sides (the outside counts as residue).
    bnd_off = col_off + torch.arange(kids.numel() + 1, device=device)
    both = torch.zeros(int(bnd_off[-1]), dtype=torch.int64, device=device)
    nxt = torch.clamp(idx + 1, max=table.seq.numel() - 1)
    last = idx + 1 == table.seq_off[r_seq + 1]
    first = idx == table.seq_off[r_seq]
    inner = ~last & (table.col[nxt] == r_col + 1)
    b_first = first & (r_col == 0)
    b_last = last & (r_col == cols[r_kid] - 1)
    base = bnd_off[r_kid]
    for sel, pos in ((inner, r_col + 1), (b_first, r_col * 0), (b_last, r_col + 1)):
        both.index_put_((base[sel] + pos[sel],), r_w[sel], accumulate=True)
    bnd_kid, _ = _segment_ids(cols + 1)
    ends = torch.zeros_like(both, dtype=torch.bool)
    ends[bnd_off[:-1]] = True
    ends[bnd_off[1:] - 1] = True
    open_cost = open_costs(both, kid_w[bnd_kid], ends, scoring)

    # the residue factor of each column; flat column c of child k is boundary index c + k + 1
    col_kid, _ = _segment_ids(cols)
    res = torch.zeros_like(both, dtype=torch.int32)
    res[torch.arange(col_kid.numel(), device=device) + col_kid + 1] = residue_factors(
        prof.sum(1), kid_w[col_kid]
    )
    gap_open, gap_close = split_cost(open_cost)

    n, m = cols[:n_pairs], cols[n_pairs:]
    mat = scoring.matrix.to(device=device, dtype=torch.float64)
    S, s_off = batched_column_scores(
        prof, col_off[:n_pairs], n, col_off[n_pairs:-1], m, kid_w[:n_pairs], kid_w[n_pairs:], mat
    )
    info, ops, ops_off = profile_align(
        S,
        s_off,
        n.to(torch.int32),
        m.to(torch.int32),
        gap_open,
        gap_close,
        bnd_off[:n_pairs],
        gap_open,
        gap_close,
        bnd_off[n_pairs:-1],
        scoring.gap_extend,
        GLOBAL,
        res,
        res,
        backend=backend,
    )
    info, ops, ops_off = info.to(device), ops.to(device), ops_off.to(device)
    n_ops = info[:, 1].to(torch.int64)

    flat_pair, _ = _segment_ids(n + m)
    t = torch.arange(ops.numel(), device=device) - ops_off[flat_pair]
    valid = t < n_ops[flat_pair]
    take_a = torch.nonzero(valid & (ops != OP_LEFT)).squeeze(1)
    take_b = torch.nonzero(valid & (ops != OP_UP)).squeeze(1)
    new_col = torch.cat([t[take_a], t[take_b]])
    table.col[idx] = new_col[col_off[r_kid] + r_col]
    parents = pairs[:, 2]
    node_of_seq[in_level] = parents[seq_kid[in_level] % n_pairs]
    node_cols[parents] = n_ops


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
    n_seqs = forest.n_leaves
    n_nodes = n_seqs + forest.children.shape[0]
    node_cols = torch.zeros(n_nodes, dtype=torch.int64, device=device)
    node_cols[:n_seqs] = lengths.to(device=device, dtype=torch.int64)
    node_of_seq = torch.arange(n_seqs, device=device)
    weights = weights.to(device)
    children = torch.from_numpy(np.array(forest.children, dtype=np.int64))
    done, total = 0, forest.children.shape[0]
    for g, level in enumerate(forest.levels):
        ids = torch.from_numpy(np.array(level, dtype=np.int64))
        pairs = torch.cat([children[ids - n_seqs], ids[:, None]], 1).to(device)
        _level(table, node_of_seq, node_cols, weights, pairs, scoring, backend, consistency, g)
        done += len(level)
        if progress is not None:
            progress(done, total)
    return node_cols[torch.from_numpy(forest.roots).to(device)].tolist()
