"""The residue table and the forest of guide trees that the progressive pass works on."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

__all__ = ["Forest", "ResidueTable"]


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
