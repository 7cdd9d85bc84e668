"""One PartTree over several ranks (issue #42 item 2): the same tree as one process.

A group's fate (its references, its split, its subtree) depends on its members only
(:class:`~torchmsa.parttree.Grow`), so the groups can be grown anywhere:

1. every rank splits the groups larger than ``N / (4 R)`` itself (the first one or two
   splits: ``n_ref + n_far`` counts per member), and stops at the smaller ones, the *work
   groups*;
2. the work groups are dealt to the ranks, largest first, each to the least loaded (by
   members); every rank grows its own to the end, small groups' trees included;
3. the ranks share what they found, keyed by each group's first member and size (a group
   holds other groups only whole, and is larger than each), and every rank replays the
   splitting loop from the root, looking every split and small tree up instead of computing
   it: the groups come out numbered as in one process, so the assembled tree is the same
   array for array.

The counts go to each rank's own device. What crosses between the ranks is the members of
the groups made in step 2 and the small groups' joins: about ``(depth + 3) N`` integers.
"""

from __future__ import annotations

import time

import numpy as np

from torchmsa.cpu import tree as cpu_tree
from torchmsa.distributed.partition import deal
from torchmsa.parttree.split import (
    add_children,
    children,
    flat_children,
    merge_close,
    nearest,
    random_refs,
)

__all__ = ["RowsGrow", "grow_over_ranks", "records", "replay"]

WORK_SHARE = 4  # work groups of at most N / (WORK_SHARE * R) members


def grow_over_ranks(grow, root: np.ndarray, ranks):
    """``(groups, splits, small)`` of the splitting loop from ``root``, the same as
    ``grow.run([root], [0])`` gives in one process, the work shared by ``ranks`` (see the
    module docstring)."""
    t0 = time.perf_counter()
    groups = [root]
    cap = max(grow.leaf_size, -(-len(root) // (WORK_SHARE * ranks.size)))
    rows = RowsGrow(grow, ranks).split_big
    splits, small, work = grow.run(groups, [0] if len(root) else [], defer=cap, split_big=rows)
    dealt = deal([len(groups[w]) for w in work], ranks.size)
    own = [groups[w] for w, r in zip(work, dealt) if r == ranks.rank]
    count, members = len(own), sum(map(len, own))
    t1 = time.perf_counter()
    own_splits, own_small, _ = grow.run(own, list(range(len(own))))  # own grows
    t2 = time.perf_counter()
    split_rec, leaf_rec = records(groups, splits, small)
    for found in ranks.all_gather(records(own, own_splits, own_small)):
        split_rec.update(found[0])
        leaf_rec.update(found[1])
    out = replay(root, split_rec, leaf_rec, grow.leaf_size)
    ranks.say(
        f"torchmsa: {ranks.tag}: PartTree split the top in {t1 - t0:.2f} s, grew {count} of "
        f"{len(work)} groups ({members} of {len(root)} sequences) in {t2 - t1:.2f} s, shared "
        f"and replayed in {time.perf_counter() - t2:.2f} s"
    )
    return out


class RowsGrow:
    """What :meth:`~torchmsa.parttree.Grow.run` calls as ``split_big`` to split the large
    groups with their members shared by rows: rank ``r`` counts and labels the ``r``-th
    contiguous share of every group against its references, and the ranks meet once per
    farthest-point round (each rank's best candidate: the farthest, the first among equals)
    and twice per split (the members' references and the references' own rows; then whether
    each child is flat). Every rank ends with one process's splits."""

    def __init__(self, grow, ranks):
        self.grow, self.ranks = grow, ranks
        self.counts, self.sc = grow.counts, grow.sc

    def _rows(self, m: np.ndarray) -> tuple[int, int]:
        size, rank = self.ranks.size, self.ranks.rank
        return len(m) * rank // size, len(m) * (rank + 1) // size

    def split_big(self, groups, big, splits, small, frontier) -> None:
        """:meth:`~torchmsa.parttree.Grow.split_big`, on this rank's rows."""
        counts, sc, ranks = self.counts, self.sc, self.ranks
        ms = [groups[g] for g in big]
        rows = [self._rows(m) for m in ms]
        part = [m[lo:hi] for m, (lo, hi) in zip(ms, rows)]
        refs_of = [
            random_refs(m, r, self.grow.n_ref, self.grow.seed)
            for m, r in zip(ms, self._farthest(ms, part))
        ]
        tasks = [(i, (p, r)) for i, (p, r) in enumerate(zip(part, refs_of)) if len(p)]
        blocks: list = [np.zeros((0, len(r)), np.int64) for r in refs_of]
        for (i, _), block in zip(tasks, counts.blocks([t for _, t in tasks])):
            blocks[i] = block
        mine = []
        for m, (lo, hi), p, refs, block in zip(ms, rows, part, refs_of, blocks):
            at = np.searchsorted(m, refs)
            d = counts.distances(block, sc[p], sc[refs])
            own = nearest(block, d, sc[p], sc[refs]) if len(p) else np.zeros(0, np.int64)
            here = (at >= lo) & (at < hi)
            own[at[here] - lo] = np.flatnonzero(here)
            mine.append((own.astype(np.int32), np.flatnonzero(here), d[at[here] - lo]))
        found = ranks.all_gather(mine)
        labels, owns = [], []
        for i, refs in enumerate(refs_of):
            d_at = np.empty((len(refs), len(refs)))
            for got in found:
                d_at[got[i][1]] = got[i][2]
            own = np.concatenate([got[i][0] for got in found]).astype(np.int64)
            label, ref_tree = merge_close(
                cpu_tree.linkage((d_at + d_at.T) / 2, self.grow.linkage), self.grow.merge
            )
            labels.append((label, ref_tree))
            owns.append(label[own])
        flats = ranks.all_gather(
            [
                flat_children(block, own[lo:hi], label, p, sc, refs)
                for (label, _), own, (lo, hi), p, refs, block in zip(
                    labels, owns, rows, part, refs_of, blocks
                )
            ]
        )
        for i, (g, m) in enumerate(zip(big, ms)):
            flat = np.logical_and.reduce([f[i] for f in flats])
            label, ref_tree = labels[i]
            kids = add_children(groups, children(m, owns[i], label), flat, small, frontier)
            splits[g] = (ref_tree, kids)

    def _farthest(self, ms, part) -> list[list[int]]:
        """Each group's longest member, then its farthest-point picks (``choose_refs``),
        every round's candidates gathered from the ranks' rows."""
        counts, sc = self.counts, self.sc
        refs = [[int(m[np.argmax(sc[m])])] for m in ms]
        near = [np.full(len(p), np.inf) for p in part]
        want = [min(self.grow.n_far + 1, self.grow.n_ref, len(m)) for m in ms]
        while todo := [i for i, m in enumerate(ms) if len(refs[i]) < want[i]]:
            live = [i for i in todo if len(part[i])]
            cols = counts.blocks([(part[i], np.array(refs[i][-1:])) for i in live])
            best = {}
            for i, col in zip(live, cols):
                p = part[i]
                near[i] = np.minimum(near[i], counts.distances(col, sc[p], sc[refs[i][-1:]])[:, 0])
                score = np.where(np.isin(p, refs[i]), -1.0, near[i])
                k = int(np.argmax(score))
                best[i] = (float(score[k]), int(p[k]))
            got = self.ranks.all_gather(best)
            for i in todo:  # ranks hold the rows in order: the first of the farthest wins
                cands = [b[i] for b in got if i in b]
                top = max(c[0] for c in cands)
                refs[i].append(next(c[1] for c in cands if c[0] == top))
        return refs


def _key(members: np.ndarray) -> tuple[int, int]:
    return int(members[0]), len(members)


def records(groups: list[np.ndarray], splits: dict, small: dict) -> tuple[dict, dict]:
    """What the loop found, keyed by group: ``({key: (reference tree, [(child members,
    flat)...])}, {key: small group's linkage})``."""
    split_rec = {
        _key(groups[g]): (tree, [(groups[c], c in small and small[c] is None) for c in kids])
        for g, (tree, kids) in splits.items()
    }
    leaf_rec = {_key(groups[g]): t for g, t in small.items() if t is not None}
    return split_rec, leaf_rec


def replay(root: np.ndarray, split_rec: dict, leaf_rec: dict, leaf_size: int):
    """The splitting loop of :meth:`~torchmsa.parttree.Grow.run` from ``root``, each split
    and small tree looked up in the records: ``(groups, splits, small)`` numbered as one
    process numbers them."""
    groups = [root]
    splits: dict[int, tuple] = {}
    small: dict[int, tuple | None] = {}
    frontier = [0] if len(root) else []
    while frontier:
        big = [g for g in frontier if len(groups[g]) > leaf_size]
        for g in frontier:
            if 1 < len(groups[g]) <= leaf_size:
                small[g] = leaf_rec[_key(groups[g])]
        frontier = []
        for g in big:
            tree, kids = split_rec[_key(groups[g])]
            parts, flat = zip(*kids)
            splits[g] = (tree, add_children(groups, parts, flat, small, frontier))
    return groups, splits, small
