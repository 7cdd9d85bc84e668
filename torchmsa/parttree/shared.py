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

__all__ = ["deal", "grow_over_ranks", "records", "replay"]

WORK_SHARE = 4  # work groups of at most N / (WORK_SHARE * R) members


def grow_over_ranks(grow, root: np.ndarray, ranks):
    """``(groups, splits, small)`` of the splitting loop from ``root``, the same as
    ``grow.run([root], [0])`` gives in one process, the work shared by ``ranks`` (see the
    module docstring)."""
    t0 = time.perf_counter()
    groups = [root]
    cap = max(grow.leaf_size, -(-len(root) // (WORK_SHARE * ranks.size)))
    splits, small, work = grow.run(groups, [0] if len(root) else [], defer=cap)
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


def deal(costs: list[int], size: int) -> list[int]:
    """Each item's rank: costliest first (ties by index), to the least loaded rank (ties to
    the lowest)."""
    load = [0] * size
    out = [0] * len(costs)
    for i in sorted(range(len(costs)), key=lambda i: (-costs[i], i)):
        r = min(range(size), key=lambda k: (load[k], k))
        out[i] = r
        load[r] += costs[i]
    return out


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
            ids = []
            for part, flat in kids:
                ids.append(len(groups))
                groups.append(part)
                if len(part) > 1 and flat:
                    small[ids[-1]] = None
                elif len(part) > 1:
                    frontier.append(ids[-1])
            splits[g] = (tree, ids)
    return groups, splits, small
