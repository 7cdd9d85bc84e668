"""Splitting a group of sequences by its references: choosing them, each member's nearest,
and merging references that the reference tree joins low."""

from __future__ import annotations

import numpy as np

from torchmsa.cpu import tree as cpu_tree

__all__ = [
    "add_children",
    "children",
    "choose_refs",
    "flat_children",
    "merge_close",
    "nearest",
    "random_refs",
    "split",
]


def choose_refs(groups, counts, sc, n_ref, n_far, seed) -> list[np.ndarray]:
    """References of each group: longest, farthest points, then random members; the
    farthest-point rounds of all groups are counted together."""
    refs = [[int(m[np.argmax(sc[m])])] for m in groups]
    nearest = [np.full(len(m), np.inf) for m in groups]
    want = [min(n_far + 1, n_ref, len(m)) for m in groups]
    while todo := [i for i, m in enumerate(groups) if len(refs[i]) < want[i]]:
        cols = counts.blocks([(groups[i], np.array(refs[i][-1:])) for i in todo])
        for i, col in zip(todo, cols):
            m = groups[i]
            d = counts.distances(col, sc[m], sc[refs[i][-1:]])[:, 0]
            nearest[i] = np.minimum(nearest[i], d)
            refs[i].append(int(m[np.argmax(np.where(np.isin(m, refs[i]), -1.0, nearest[i]))]))
    return [random_refs(m, r, n_ref, seed) for m, r in zip(groups, refs)]


def random_refs(m: np.ndarray, refs: list[int], n_ref: int, seed: int) -> np.ndarray:
    """``refs`` and random members of ``m`` up to ``n_ref`` references, seeded by the group
    (``[seed, first member, size]``): a group's references depend on its members only."""
    rest = m[~np.isin(m, refs)]
    rng = np.random.default_rng([seed, int(m[0]), len(m)])
    extra = rng.choice(rest, size=min(n_ref - len(refs), len(rest)), replace=False)
    return np.array(refs + sorted(int(x) for x in extra), dtype=np.int64)


def nearest(counts: np.ndarray, d: np.ndarray, sm: np.ndarray, sr: np.ndarray) -> np.ndarray:
    """Each member's nearest reference; among equal distances the one closest in size
    (``1 - c / max(s_a, s_b)`` smallest), so fragments gather with fragments; then the first."""
    tied = d == d.min(axis=1, keepdims=True)
    size_gap = 1.0 - counts / np.maximum(np.maximum(sm[:, None], sr[None, :]), 1)
    return np.argmin(np.where(tied, size_gap, np.inf), axis=1)


def split(groups, g, refs, block, sc, linkage, small, frontier, merge, dist_fn):
    """Split group ``g`` by its references (``block``: members x references counts, turned
    into distances by ``dist_fn``): new groups are appended to ``groups``, the ones to split
    or cluster further to ``frontier``, identical ones (by their counts) marked flat in
    ``small``. Returns ``(reference tree, child ids)``."""
    m = groups[g]
    at = np.searchsorted(m, refs)
    d = dist_fn(block, sc[m], sc[refs])
    own = nearest(block, d, sc[m], sc[refs])
    own[at] = np.arange(len(refs))
    label, ref_tree = merge_close(cpu_tree.linkage((d[at] + d[at].T) / 2, linkage), merge)
    own = label[own]
    flat = flat_children(block, own, label, m, sc, refs)
    return ref_tree, add_children(groups, children(m, own, label), flat, small, frontier)


def flat_children(block, own, label, members, sc, refs) -> np.ndarray:
    """``bool [C]``: whether every member of each child (``own``, the rows of ``block``) has
    the same k-mers as the child's first reference (by their counts)."""
    out = np.zeros(int(label.max()) + 1, bool)
    for c in range(len(out)):
        first = int(np.argmax(label == c))  # the group's first reference
        rows = own == c
        size = sc[refs[first]]
        out[c] = bool(((block[rows, first] == size) & (sc[members[rows]] == size)).all())
    return out


def children(m: np.ndarray, own: np.ndarray, label: np.ndarray) -> list[np.ndarray]:
    """The members of each child of a split group (members ``m``, each in child ``own``)."""
    return [m[own == c] for c in range(int(label.max()) + 1)]


def add_children(groups, parts, flat, small, frontier) -> list[int]:
    """Children of a split group (their members ``parts``) appended to ``groups``; those to
    split or cluster further to ``frontier``, the ``flat`` ones (the same k-mers as their
    reference) marked in ``small``. Returns their ids."""
    child_ids = []
    for part, same in zip(parts, flat):
        child_ids.append(len(groups))
        groups.append(part)
        if len(part) > 1 and same:
            small[child_ids[-1]] = None
        elif len(part) > 1:
            frontier.append(child_ids[-1])
    return child_ids


def merge_close(ref_tree, fraction: float = 0.5):
    """References joined below ``fraction`` of the root height share one group (seed 002:
    references too similar to another one are dropped).

    Arguments:
        ref_tree: ``(children [R-1, 2], heights [R-1])`` of a linkage over R references;
            heights never decrease along the joins, so the joins below the cut come first.

    Returns:
        ``(label int [R], (children [C-1, 2], heights [C-1]))``: each reference's group
        0..C-1 (numbered by first reference) and the tree over the groups (the root join is
        never below the cut, so C >= 2).
    """
    children, heights = ref_tree
    n = len(children) + 1
    cut = fraction * heights[-1] if len(heights) else 0.0
    below = int(np.argmax(heights >= cut)) if len(heights) else 0
    root = list(range(n))  # union-find over references
    rep = list(range(n))  # a reference under each node
    for a, b in children[:below].tolist():
        ra, rb = _find(root, rep[a]), _find(root, rep[b])
        root[max(ra, rb)] = min(ra, rb)
        rep.append(min(ra, rb))
    label = np.unique([_find(root, r) for r in range(n)], return_inverse=True)[1].reshape(-1)
    groups = int(label.max()) + 1
    node = [int(label[_find(root, r)]) for r in rep]  # leaves and joins below the cut
    node += [groups + k for k in range(n - 1 - below)]
    top = children[below:]
    return label, (
        np.array([[node[a], node[b]] for a, b in top.tolist()]).reshape(-1, 2),
        heights[below:],
    )


def _find(root: list[int], x: int) -> int:
    while root[x] != x:
        root[x] = root[root[x]]
        x = root[x]
    return x
