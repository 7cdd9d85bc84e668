"""Consistency tiles of the progressive levels: the library entries whose sequences meet at
each forest node, in level order (:class:`Consistency`)."""

from __future__ import annotations

import numpy as np
import torch

from torchmsa.config import ConsistencyConfig
from torchmsa.ops.rules.consistency_tile import add_tile

__all__ = ["Consistency"]


def _lca_matrix(tree) -> np.ndarray:
    """``int64 [n, n]``: the lowest common ancestor of every pair of leaves."""
    n = tree.n_leaves
    lca = np.full((n, n), -1, np.int64)
    under = tree.leaves_under()
    for k, (a, b) in enumerate(tree.children.tolist()):
        la = under[a - n] if a >= n else np.array([a])
        lb = under[b - n] if b >= n else np.array([b])
        lca[np.ix_(la, lb)] = n + k
        lca[np.ix_(lb, la)] = n + k
    return lca


class Consistency:
    """Consistency tiles for progressive levels (refinement builds its own, :mod:`torchmsa.refine`).

    Arguments:
        libs: one :class:`Library` per job (sequence ids local to the job).
        trees: the jobs' guide trees (``None`` for one-sequence jobs).
        sizes: the jobs' sequence counts.
        forest: the :class:`~torchmsa.progressive.Forest` of those trees.
        weight: DP units per unit of normalised consistency (an integer); ``None``: the
            ``weight`` of ``config`` (:class:`~torchmsa.config.ConsistencyConfig`).
    """

    def __init__(
        self,
        libs,
        trees,
        sizes,
        forest,
        weight: int | None = None,
        *,
        config: ConsistencyConfig | None = None,
    ):
        device = libs[0].x.device
        self.weight = int(weight if weight is not None else (config or ConsistencyConfig()).weight)
        level_of = np.full(forest.n_leaves + forest.children.shape[0], -1, np.int64)
        for g, ids in enumerate(forest.levels):
            level_of[np.asarray(ids)] = g
        cols = {k: [] for k in "xiyjwgn"}
        first, inner = 0, 0
        total = forest.n_leaves
        for lib, tree, n in zip(libs, trees, sizes):
            if tree is not None and len(lib):
                lca = _lca_matrix(tree)
                local = lca[lib.x.cpu().numpy(), lib.y.cpu().numpy()]  # ids n .. 2n-2
                node = total + inner + (local - n)
                cols["g"].append(torch.from_numpy(level_of[node]).to(device))
                cols["n"].append(torch.from_numpy(node).to(device))
                for key in "xy":
                    cols[key].append(getattr(lib, key) + first)
                for key in "ijw":
                    cols[key].append(getattr(lib, key))
            first += n
            inner += max(0, n - 1)
        cat = {
            k: torch.cat(v) if v else torch.zeros(0, dtype=torch.int64, device=device)
            for k, v in cols.items()
        }
        # by level, and within a level by node: each node's entries are contiguous
        n_nodes = forest.n_leaves + forest.children.shape[0]
        order = torch.argsort(cat["g"] * n_nodes + cat["n"], stable=True)
        for k in "xiyjw":
            setattr(self, k, cat[k][order])
        self.node = cat["n"][order]  # the forest node where each entry's sequences meet
        g = cat["g"][order]
        self.level_start = torch.searchsorted(
            g, torch.arange(len(forest.levels) + 1, device=device)
        ).tolist()

    def add_level_tiles(self, S, g, table, seq_kid, n_pairs, s_off, n, m, kid_w, weights):
        """Adds level ``g``'s consistency to its packed ``int32`` scores ``S`` in place
        (:func:`~torchmsa.ops.rules.consistency_tile.add_tile`).

        Arguments:
            table: the residue table (each residue's column in its current node).
            seq_kid: ``int64 [N]`` each sequence's child index in the level (-1: none);
                children ``0 .. n_pairs - 1`` are the pairs' first, the rest their second.
            s_off: ``int64 [n_pairs]`` each pair's first score; n, m: its profiles' columns.
            kid_w: ``int64 [2 n_pairs]`` the children's weights; weights: the sequences'.
        """
        lo, hi = self.level_start[g], self.level_start[g + 1]
        x, i, y, j, w = (t[lo:hi] for t in (self.x, self.i, self.y, self.j, self.w))
        col_x = table.col[table.seq_off[x] + i]
        col_y = table.col[table.seq_off[y] + j]
        kx, ky = seq_kid[x], seq_kid[y]
        a_is_x = kx < n_pairs
        p = torch.where(a_is_x, kx, ky)
        row = torch.where(a_is_x, col_x, col_y)
        col = torch.where(a_is_x, col_y, col_x)
        denom = kid_w[:n_pairs] * kid_w[n_pairs:]
        cell = s_off[p] + row * m[p] + col
        add_tile(S, cell, w * weights[x] * weights[y], self.weight, denom[p])
