"""The edges of a guide tree as partitions of its sequences."""

from __future__ import annotations

import numpy as np
import torch

__all__ = ["partitions", "edge_sides"]


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


def edge_sides(parts: list[np.ndarray], n: int) -> torch.Tensor:
    """``bool [K, n]``: True for the rows of each partition (each edge's group A)."""
    sides = torch.zeros(len(parts), n, dtype=torch.bool)
    for k, p in enumerate(parts):
        sides[k, torch.tensor(np.asarray(p), dtype=torch.int64)] = True
    return sides
