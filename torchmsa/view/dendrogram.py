"""The guide tree beside the rows: Newick parsing, pruning to the shown rows, and layout.

Coordinates: ``x`` is the distance from the root scaled to 0..1 (the deepest leaf at 1), ``y``
is in rows (row ``i``'s centre at ``i + 0.5``). The layout is two sets of segments: one
horizontal per node other than the root (from its parent's ``x`` to its own, at its ``y``) and
one vertical per internal node (at its ``x``, from its first child's ``y`` to its last's).
Every walk is iterative, so trees of 10^5 leaves of any shape work.
"""

from __future__ import annotations

import re
from collections import defaultdict, deque
from dataclasses import dataclass

import numpy as np

from torchmsa.errors import ArgumentError, FormatError

__all__ = ["Dendrogram", "parse_newick", "layout", "distance_newick", "MAX_COMPUTED_ROWS"]

MAX_COMPUTED_ROWS = 1000
_TOKEN = re.compile(r"\s*(?:(\[[^\]]*\])|('(?:[^']|'')*')|([(),:;])|([^\s()\[\]',:;]+))")


@dataclass(frozen=True, eq=False)
class Dendrogram:
    """A laid-out tree.

    Attributes:
        order: the alignment row indices of the leaves, top to bottom.
        h: ``float64 [M, 3]``: horizontal segments ``(x_parent, x, y)``.
        v: ``float64 [K, 3]``: vertical segments ``(x, y_first, y_last)``.
    """

    order: list[int]
    h: np.ndarray
    v: np.ndarray


@dataclass
class _Parsed:
    children: list[list[int]]
    names: list[str | None]
    lengths: list[float | None]


def parse_newick(text: str) -> _Parsed:
    """Parse one Newick tree (quoted names, branch lengths, ``[comments]``); node 0 is the root.

    Raises:
        FormatError: the text is not a Newick tree.
    """
    tree = _Parsed([[]], [None], [None])
    stack: list[int] = []
    node, pos, want_length, done = 0, 0, False, False
    text = text.strip()
    while pos < len(text) and not done:
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            raise _newick_error(text, pos, "unexpected character")
        comment, quoted, punct, word = m.groups()
        if comment is not None:
            pass
        elif want_length:
            try:
                tree.lengths[node] = float(word if word is not None else "x")
            except ValueError:
                raise _newick_error(text, m.start(), "a branch length must follow ':'") from None
            want_length = False
        elif punct in ("(", ","):
            if punct == "(":
                stack.append(node)
            elif not stack:
                raise _newick_error(text, m.start(), "',' outside parentheses")
            tree.children.append([])
            tree.names.append(None)
            tree.lengths.append(None)
            node = len(tree.children) - 1
            tree.children[stack[-1]].append(node)
        elif punct == ")":
            if not stack:
                raise _newick_error(text, m.start(), "unbalanced ')'")
            node = stack.pop()
        elif punct == ":":
            want_length = True
        elif punct == ";":
            done = True
        else:
            tree.names[node] = quoted[1:-1].replace("''", "'") if quoted else word
        pos = m.end()
    if stack or want_length:
        raise _newick_error(text, len(text), "the tree ends early")
    return tree


def _newick_error(text: str, pos: int, what: str) -> FormatError:
    near = text[max(0, pos - 20) : pos + 20]
    return FormatError(f"not a Newick tree: {what} at character {pos + 1} (near {near!r})")


def layout(newick: str, names: list[str], keep: list[int]) -> Dendrogram:
    """Lay out ``newick``, pruned to the alignment rows ``keep``, leaves matched by name.

    Repeated names are matched in order. Pruning drops subtrees without a kept leaf and merges
    a node left with one child into it (adding the branch lengths). Missing branch lengths count
    1 when the tree has none, else 0; negative ones count 0.

    Raises:
        ArgumentError: a leaf is not a row of the alignment, or a kept row is not a leaf.
    """
    tree = parse_newick(newick)
    rows_of: dict[str, deque[int]] = defaultdict(deque)
    for i, name in enumerate(names):
        rows_of[name].append(i)
    kept = set(keep)
    has_lengths = any(x is not None for x in tree.lengths[1:])
    blen = [max(0.0, x) if x is not None else (0.0 if has_lengths else 1.0) for x in tree.lengths]

    preorder, stack = [], [0]
    while stack:
        v = stack.pop()
        preorder.append(v)
        stack.extend(reversed(tree.children[v]))
    leaf_row: dict[int, int] = {}
    for v in preorder:
        if not tree.children[v]:
            name = tree.names[v] or ""
            if not rows_of[name]:
                raise ArgumentError(
                    f"tree leaf {name!r} is not a row of the alignment (or appears twice); give "
                    f"the alignment's own guide tree (torchmsa align --tree-out)"
                )
            leaf_row[v] = rows_of[name].popleft()
    missing = kept - set(leaf_row.values())
    if missing:
        first = names[min(missing)]
        raise ArgumentError(
            f"row {first!r} is not a leaf of the tree ({len(missing)} rows are missing); give "
            f"the alignment's own guide tree (torchmsa align --tree-out)"
        )

    # prune: eff[v] is the node that stands for v's subtree, or -1 when none is kept
    eff = [-1] * len(tree.children)
    kids: dict[int, list[int]] = {}
    for v in reversed(preorder):
        if not tree.children[v]:
            eff[v] = v if leaf_row[v] in kept else -1
            continue
        alive = [eff[c] for c in tree.children[v] if eff[c] >= 0]
        if len(alive) == 1:
            eff[v] = alive[0]
            blen[alive[0]] += blen[v]
        elif alive:
            eff[v] = v
            kids[v] = alive
    root = eff[0]

    depth = {root: 0.0}
    order, walk, stack = [], [], [root]
    while stack:
        v = stack.pop()
        walk.append(v)
        if v in kids:
            for c in kids[v]:
                depth[c] = depth[v] + blen[c]
            stack.extend(reversed(kids[v]))
        else:
            order.append(leaf_row[v])
    top = max(depth.values())
    if top <= 0:  # all lengths zero: show the topology, each node one step from its parent
        for v in walk:
            for c in kids.get(v, ()):
                depth[c] = depth[v] + 1.0
        top = max(depth.values()) or 1.0
    y: dict[int, float] = {}
    row = 0
    for v in walk:
        if v not in kids:
            y[v] = row + 0.5
            row += 1
    for v in reversed(walk):
        if v in kids:
            y[v] = (y[kids[v][0]] + y[kids[v][-1]]) / 2
    h = [(depth[v] / top, depth[c] / top, y[c]) for v in walk for c in kids.get(v, ())]
    vert = [(depth[v] / top, y[kids[v][0]], y[kids[v][-1]]) for v in walk if v in kids]
    return Dendrogram(order, np.array(h).reshape(-1, 3), np.array(vert).reshape(-1, 3))


def distance_newick(chars: np.ndarray, names: list[str]) -> str:
    """A UPGMA tree (Newick) of the rows' p-distances, for an alignment that has no guide tree.

    The p-distance of two rows is the fraction of the columns where both have a residue that
    hold different residues (1 where no column has both).

    Raises:
        ArgumentError: more than :data:`MAX_COMPUTED_ROWS` rows.
    """
    import torch

    from torchmsa import tree as tree_mod
    from torchmsa.view.tracks import GAP, symbols

    n = len(chars)
    if n > MAX_COMPUTED_ROWS:
        raise ArgumentError(
            f"the alignment has no guide tree, and computing one is limited to "
            f"{MAX_COMPUTED_ROWS} rows ({n} given); pass the tree's Newick file (--tree-file) "
            f"or fewer rows"
        )
    syms = torch.from_numpy(symbols(chars).astype(np.int64))
    residue = (syms < GAP).to(torch.float32)
    both = residue @ residue.T
    same = torch.zeros(n, n, dtype=torch.float32)
    for letter in torch.unique(syms[syms < GAP]).tolist():
        m = (syms == letter).to(torch.float32)
        same += m @ m.T
    dist = torch.where(both > 0, 1.0 - same / both.clamp_min(1), torch.ones_like(both))
    dist = ((dist + dist.T) / 2).double()
    dist.fill_diagonal_(0.0)
    return tree_mod.build_tree(dist, "upgma", names).newick()
