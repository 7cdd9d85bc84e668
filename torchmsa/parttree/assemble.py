"""The PartTree's nodes: each group's subtree built bottom-up into one
:class:`~torchmsa.tree.Tree`."""

from __future__ import annotations

import numpy as np

from torchmsa.tree import Tree

__all__ = ["Builder", "assemble"]


class Builder:
    """Internal nodes in creation order (ids n, n+1, ...), each with its height."""

    def __init__(self, n: int):
        self.n = n
        self.children: list[tuple[int, int]] = []
        self.height = [0.0] * n

    def join(self, a: int, b: int, h: float) -> int:
        self.children.append((min(a, b), max(a, b)))
        self.height.append(max(h, self.height[a], self.height[b]))
        return len(self.height) - 1

    def linkage(self, nodes: list[int], children: np.ndarray, heights: np.ndarray) -> int:
        """Place a tree over local leaves 0..m-1 (``nodes``) built by ``cpu_tree.linkage``."""
        local = list(nodes)
        for (a, b), h in zip(children.tolist(), heights.tolist()):
            local.append(self.join(local[a], local[b], h))
        return local[-1]

    def balanced(self, nodes: list[int], h: float) -> int:
        while len(nodes) > 1:
            pairs = [self.join(nodes[i], nodes[i + 1], h) for i in range(0, len(nodes) - 1, 2)]
            nodes = pairs + nodes[len(nodes) - len(nodes) % 2 :]
        return nodes[0]


def assemble(names, groups, splits, small, empty) -> Tree:
    """Build the groups' subtrees bottom-up (children groups have larger ids) into a Tree."""
    total = len(names)
    build = Builder(total)
    node: dict[int, int] = {}
    for g in range(len(groups) - 1, -1, -1):
        members = groups[g].tolist()
        if len(members) == 0:
            continue
        if g in splits:
            (children, heights), child_ids = splits[g]
            node[g] = build.linkage([node[c] for c in child_ids], children, heights)
        elif len(members) == 1:
            node[g] = members[0]
        elif small.get(g) is None:
            node[g] = build.balanced(members, 0.0)
        else:
            node[g] = build.linkage(members, *small[g])
    roots = [node[0]] if 0 in node else []
    if len(empty):
        roots.append(build.balanced(empty.tolist(), 0.5))
    if len(roots) == 2:
        build.join(roots[0], roots[1], 0.5)
    children = np.array(build.children, dtype=np.int64).reshape(-1, 2)
    height = np.array(build.height)
    parent = np.full(2 * total - 1, 2 * total - 2, np.int64)
    parent[children.ravel()] = np.repeat(np.arange(total, 2 * total - 1), 2)
    return Tree(names, children, height[parent] - height)
