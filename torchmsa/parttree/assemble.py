"""The PartTree's nodes: each group's subtree built bottom-up into one
:class:`~torchmsa.tree.Tree` (the joins in compiled code, ``cpu/tree.py``'s
``assemble_nodes``; a plain-Python twin is the oracle of ``tests/test_parttree.py``)."""

from __future__ import annotations

import numpy as np

from torchmsa.cpu.tree import assemble_nodes
from torchmsa.tree import Tree

__all__ = ["assemble"]

EMPTY, SPLIT, ONE, FLAT, LINKAGE = 0, 1, 2, 3, 4


def assemble(names, groups, splits, small, empty) -> Tree:
    """Build the groups' subtrees bottom-up (children groups have larger ids) into a Tree.

    Arguments:
        names: leaf names.
        groups: each group's members (``int`` arrays).
        splits: ``{g: ((children, heights), child_ids)}``: a split group's reference tree over
            its child groups.
        small: ``{g: (children, heights)}`` a small group's linkage over its members, or
            ``{g: None}``: a flat group (identical members).
        empty: the sequences without a k-mer (a flat subtree at 0.5 beside the rest).
    """
    total = len(names)
    kind = np.zeros(len(groups), np.int8)
    joins, join_h, kids = [], [], []
    jcount = np.zeros(len(groups), np.int64)
    ccount = np.zeros(len(groups), np.int64)
    for g, m in enumerate(groups):
        if len(m) == 0:
            continue
        if g in splits:
            (children, heights), child_ids = splits[g]
            kind[g] = SPLIT
            kids.append(np.asarray(child_ids, np.int64))
            ccount[g] = len(child_ids)
        elif len(m) == 1:
            kind[g] = ONE
            continue
        elif small.get(g) is None:
            kind[g] = FLAT
            continue
        else:
            kind[g] = LINKAGE
            children, heights = small[g]
        joins.append(np.asarray(children, np.int64).reshape(-1, 2))
        join_h.append(np.asarray(heights, np.float64))
        jcount[g] = len(heights)
    sizes = np.fromiter(map(len, groups), np.int64, len(groups))
    members = np.concatenate(groups).astype(np.int64) if groups else np.zeros(0, np.int64)
    children, height = assemble_nodes(
        kind,
        members,
        _offsets(sizes),
        np.concatenate(joins) if joins else np.zeros((0, 2), np.int64),
        np.concatenate(join_h) if join_h else np.zeros(0, np.float64),
        _offsets(jcount),
        np.concatenate(kids) if kids else np.zeros(0, np.int64),
        _offsets(ccount),
        np.asarray(empty, np.int64),
        total,
    )
    parent = np.full(2 * total - 1, 2 * total - 2, np.int64)
    parent[children.ravel()] = np.repeat(np.arange(total, 2 * total - 1), 2)
    return Tree(names, children, height[parent] - height)


def _offsets(counts: np.ndarray) -> np.ndarray:
    out = np.zeros(len(counts) + 1, np.int64)
    np.cumsum(counts, out=out[1:])
    return out
