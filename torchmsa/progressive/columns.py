"""Accurate mode's consistency tiles need each residue's column in its current node after every
level: :class:`ColumnTracker` keeps the residue table up to date."""

from __future__ import annotations

import numpy as np
import torch

from torchmsa.progressive.forest import ResidueTable

__all__ = ["ColumnTracker"]


class ColumnTracker:
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
            from torchmsa.consistency import entry_values  # accurate mode's modules, on use

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

    def add_tiles(self, S, cons, g, kids, P, s_off, cols, kid_w):
        """Adds level ``g``'s consistency tiles to its packed scores ``S``."""
        dev = self.kid_pos.device
        n, m, w = (torch.from_numpy(x).to(dev) for x in (cols[:P], cols[P:], kid_w))
        seq_kid = self._seq_kid(kids)
        cons.add_level_tiles(S, g, self.table, seq_kid, P, s_off, n, m, w, self.weights)

    def move(self, kids, P, col_off, new_col, parents):
        """Moves the level's residues to their columns in the parents."""
        table, dev = self.table, self.kid_pos.device
        seq_kid = self._seq_kid(kids)
        idx = torch.nonzero(seq_kid[table.seq] >= 0).squeeze(1)
        r_kid = seq_kid[table.seq[idx]]
        offs = torch.from_numpy(col_off).to(dev)
        table.col[idx] = new_col.to(dev)[offs[r_kid] + table.col[idx]]
        in_level = seq_kid >= 0
        par = torch.from_numpy(parents).to(dev)
        self.node_of_seq[in_level] = par[seq_kid[in_level] % P]
