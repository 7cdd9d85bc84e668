"""PartTree: a guide tree for many sequences from N x n k-mer distances.

Katoh & Toh (2007), MAFFT's ``--parttree``, as seed 002 (CUDA-Parttree) describes it: a group
of more than ``leaf_size`` sequences is split by ``n_ref`` reference sequences, every member
joins the group of its nearest reference, a tree is built over the references, and each
group's subtree takes its reference's place in that tree; groups are split again until they
are small enough for a tree from their full distance matrix. The distances are the 6-mer
distances of :func:`torchmsa.ops.kmer.kmer_distances`, ``1 - c / min(s_a, s_b)``.

References of a group: its longest sequence (the most k-mers; MAFFT starts from the longest),
then ``n_far`` farthest-point picks (each the member farthest from all references so far, so
that well-separated clusters all get one; the first is MAFFT's "most distant from the
longest"), then random members (seeded, so the tree is deterministic), which place references
where the members are dense. Ties go to the lowest index; a member equally near to several
references joins the one closest to it in size. References joined in the reference tree below
half its root height share one group (seed 002: of references too similar to each other only
one is kept), so that a cluster without a reference of its own is not scattered over the
groups of several near-identical references. Trees over references and small groups use the
linkage ``method`` (:func:`torchmsa.cpu.tree.linkage`); a node's height is half its joining
distance, raised where needed to the heights of its children, so branch lengths are never
negative.

Work: each level of splitting counts ``n_ref + n_far`` pairs per member, the small groups
``g (g - 1) / 2`` pairs each, so N sequences cost ``O(N (n_ref + n_far) depth + N leaf_size)``
counts instead of ``N^2 / 2``. The counts of all groups of a level go together: ``n_far + 2``
batches of pairs a level (one kernel launch each on a GPU), large blocks as dense blocks (the
tensor-core ``matrix`` method).

Sequences without a k-mer (shorter than k) are at distance 1 from everything; they are kept out
of the splitting and hang from the root at height 0.5 in a balanced subtree of their own.
"""

from __future__ import annotations

import numpy as np

from torchmsa.config import ExecutionPolicy, MemoryBudget, TreeConfig
from torchmsa.cpu import tree as cpu_tree
from torchmsa.errors import ArgumentError
from torchmsa.parttree.assemble import assemble
from torchmsa.parttree.counts import BatchCounts, FnCounts, LcsCounts, pair_distances
from torchmsa.parttree.split import choose_refs, merge_close, split
from torchmsa.sequences import SequenceBatch
from torchmsa.tree import Tree

__all__ = ["Grow", "parttree", "parttree_tree", "merge_close", "leaf_trees"]

_LINKAGE = {"upgma": cpu_tree.UPGMA, "upgma_mafft": cpu_tree.MAFFT, "single": cpu_tree.SINGLE}


def parttree(
    source,
    *,
    n_ref: int | None = None,
    n_far: int | None = None,
    leaf_size: int | None = None,
    method: str | None = None,
    seed: int = 0,
    names: list[str] | None = None,
    n: int | None = None,
    self_counts=None,
    k: int = 6,
    distance: str | None = None,
    backend: str = "auto",
    config: TreeConfig | None = None,
    policy: ExecutionPolicy | None = None,
    budget: MemoryBudget | None = None,
    ranks=None,
) -> Tree:
    """A PartTree guide tree (see the module docstring).

    Arguments:
        source: a :class:`~torchmsa.sequences.SequenceBatch` (k-mers counted on its device),
            or a function ``counts_fn(a_idx, b_idx)`` returning the shared k-mer counts
            ``int [len(a_idx), len(b_idx)]`` of sequences given by ``int64`` index arrays.
        n_ref: references per split group (MAFFT's ``--partsize``; default
            ``config.parttree_n_ref``, 50).
        n_far: references chosen farthest-point after the longest (default ``n_ref // 4``).
        leaf_size: groups of at most this many sequences get a tree from all their pairs; with
            ``N <= leaf_size`` the result is ``build_tree`` of the full distance matrix
            (default ``config.parttree_leaf_size``, 500).
        method: linkage for those trees: ``"upgma_mafft"``, ``"upgma"`` or ``"single"``
            (default ``config.parttree_linkage``).
        seed: seed of the random reference picks.
        names: leaf names (default: the batch's names, or ``seq1 .. seqN``).
        n: the number of sequences (a counts function without ``self_counts`` only).
        self_counts: ``int [N]`` k-mers of each sequence (a counts function only; default:
            the diagonal of the counts function, in blocks).
        k: k-mer length (a batch only).
        distance: ``"kmer"`` (6-mer distances) or ``"lcs"`` (FAMSA's LCS distance, counted on
            the host; a batch only); default ``config.parttree_distance``.
        backend: ``"auto"``, ``"cpu"`` or ``"triton"`` (a batch only).
        config: the defaults of ``n_ref``, ``leaf_size`` and ``method``, and the fraction of
            the root height below which joined references merge
            (``config.parttree_merge_fraction``).
        policy: how pairs are counted (``parttree_dense_pairs``, ``parttree_pair_chunk``,
            ``kmer_method``; never changes the tree).
        budget: the memory that counting dense blocks may use (a batch on a GPU only).
        ranks: a :class:`~torchmsa.distributed.Session` (or any object with ``rank``,
            ``size`` and ``all_gather``) whose ranks share the groups' work; every rank
            passes the same source and gets the same tree, the tree of one process
            (:mod:`~torchmsa.parttree.shared`).

    Returns:
        The :class:`~torchmsa.tree.Tree`, leaf i = sequence i.
    """
    config = TreeConfig() if config is None else config
    policy = ExecutionPolicy() if policy is None else policy
    n_ref = _check(config.parttree_n_ref if n_ref is None else n_ref, "n_ref", 2)
    n_far = max(1, n_ref // 4) if n_far is None else _check(n_far, "n_far", 0)
    leaf_size = _check(
        config.parttree_leaf_size if leaf_size is None else leaf_size, "leaf_size", 1
    )
    method = config.parttree_linkage if method is None else method
    distance = config.parttree_distance if distance is None else distance
    if distance not in ("kmer", "lcs"):
        raise ArgumentError(
            f"Invalid value for `distance` argument: {distance!r}; use 'kmer' or 'lcs'"
        )
    if method not in _LINKAGE:
        raise ArgumentError(
            f"Invalid value for `method` argument: {method!r}; use one of {tuple(_LINKAGE)}"
        )
    if isinstance(source, SequenceBatch) and distance == "lcs":
        counts = LcsCounts(source)
        names = source.names if names is None else names
    elif isinstance(source, SequenceBatch):
        counts = BatchCounts(source, k, backend, policy, budget)
        names = source.names if names is None else names
    elif callable(source):
        counts = FnCounts(source, n, self_counts)
    else:
        raise ArgumentError(
            f"Invalid value for `source` argument: {type(source).__name__}; pass a "
            f"SequenceBatch or a function counts_fn(a_idx, b_idx)"
        )
    sc = counts.self_counts
    total = len(sc)
    names = [f"seq{i + 1}" for i in range(total)] if names is None else [str(x) for x in names]
    if len(names) != total or total < 1:
        raise ArgumentError(f"`names` holds {len(names)} names for {total} sequences (need >= 1)")
    linkage = _LINKAGE[method]
    grow = Grow(counts, sc, n_ref, n_far, leaf_size, linkage, config.parttree_merge_fraction, seed)
    root = np.flatnonzero(sc > 0)
    if ranks is not None and ranks.size > 1:
        from torchmsa.parttree.shared import grow_over_ranks

        groups, splits, small = grow_over_ranks(grow, root, ranks)
    else:
        groups = [root]
        splits, small, _ = grow.run(groups, [0] if len(root) else [])
    return assemble(names, groups, splits, small, np.flatnonzero(sc == 0))


class Grow:
    """PartTree's splitting loop over the groups of one counting source (see the module
    docstring): a group's fate depends on its members only, so any set of groups can be
    grown apart from the others (:mod:`~torchmsa.parttree.shared`)."""

    def __init__(self, counts, sc, n_ref, n_far, leaf_size, linkage, merge, seed):
        self.counts, self.sc = counts, sc
        self.n_ref, self.n_far, self.leaf_size = n_ref, n_far, leaf_size
        self.linkage, self.merge, self.seed = linkage, merge, seed

    def run(
        self,
        groups: list[np.ndarray],
        frontier: list[int],
        defer: int | None = None,
        split_big=None,
    ):
        """Splits the groups of ``frontier`` (ids into ``groups``, which grows) until every
        group is small; a group of at most ``defer`` members is left as it is. ``split_big``:
        what splits a round's large groups (default :meth:`split_big`; ranks that share the
        members pass :meth:`torchmsa.parttree.shared.RowsGrow.split_big`).

        Returns:
            ``(splits, small, deferred)``: ``{g: (reference tree, child ids)}``,
            ``{g: linkage or None (flat)}``, and the ids of the groups left, in order.
        """
        counts, sc, leaf_size = self.counts, self.sc, self.leaf_size
        splits: dict[int, tuple] = {}
        small: dict[int, tuple] = {}
        deferred: list[int] = []
        while frontier:
            if defer is not None:
                deferred += [g for g in frontier if len(groups[g]) <= defer]
                frontier = [g for g in frontier if len(groups[g]) > defer]
            big = [g for g in frontier if len(groups[g]) > leaf_size]
            leaf = [g for g in frontier if 1 < len(groups[g]) <= leaf_size]
            trees = leaf_trees(counts, [groups[g] for g in leaf], sc, self.linkage)
            small.update(zip(leaf, trees))
            frontier = []
            (split_big or self.split_big)(groups, big, splits, small, frontier)
        return splits, small, deferred

    def split_big(self, groups, big, splits, small, frontier) -> None:
        """Splits the groups ``big`` by their references: ``splits[g]`` for each, their
        children appended to ``groups`` (and to ``frontier`` or ``small``)."""
        counts, sc = self.counts, self.sc
        refs_of = choose_refs(
            [groups[g] for g in big], counts, sc, self.n_ref, self.n_far, self.seed
        )
        blocks = counts.blocks([(groups[g], r) for g, r in zip(big, refs_of)])
        for g, refs, block in zip(big, refs_of, blocks):
            splits[g] = split(
                groups, g, refs, block, sc, self.linkage, small, frontier, self.merge,
                counts.distances,
            )  # fmt: skip


def leaf_trees(counts, members: list[np.ndarray], sc: np.ndarray, linkage: int) -> list[tuple]:
    """The linkage ``(children, heights)`` of each small group from all its pairs: on 6-mer
    counts of a batch with an average linkage, every group in one compiled call (10^6
    sequences make about 30,000 such groups); otherwise group by group."""
    if not members:
        return []
    if isinstance(counts, BatchCounts) and linkage != cpu_tree.SINGLE:
        vals, first, second, pair_off = counts.group_pairs(members)
        dist = pair_distances(vals, sc[first], sc[second])
        sizes = np.fromiter(map(len, members), np.int64, len(members))
        join_off = np.zeros(len(members) + 1, np.int64)
        np.cumsum(sizes - 1, out=join_off[1:])  # m - 1 joins a group
        children = np.empty((int(join_off[-1]), 2), np.int64)
        heights = np.empty(int(join_off[-1]), np.float64)
        cpu_tree.group_linkages(dist, pair_off, sizes, linkage, children, heights, join_off)
        return [(children[lo:hi], heights[lo:hi]) for lo, hi in zip(join_off[:-1], join_off[1:])]
    out = []
    for m, block in zip(members, counts.blocks([(m, None) for m in members])):
        dist = counts.distances(block, sc[m], sc[m])
        out.append(cpu_tree.linkage((dist + dist.T) / 2, linkage))
    return out


def parttree_tree(
    batch: SequenceBatch,
    backend: str = "auto",
    method: str | None = None,
    *,
    config: TreeConfig | None = None,
    policy: ExecutionPolicy | None = None,
    budget: MemoryBudget | None = None,
) -> Tree:
    """The PartTree guide tree of ``batch`` under ``config`` (default: ``align``'s).

    Arguments:
        batch: the sequences (k-mers are counted on its device).
        backend: ``"auto"``, ``"cpu"`` or ``"triton"``.
        method: linkage of the reference trees and the small groups (default
            ``config.parttree_linkage``).
        config, policy, budget: as :func:`parttree`.

    Returns:
        The :class:`~torchmsa.tree.Tree` over ``batch.names``.
    """
    return parttree(
        batch, backend=backend, method=method, config=config, policy=policy, budget=budget
    )


def _check(value, name: str, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        raise ArgumentError(f"Invalid value for `{name}` argument: {value!r}; use an int >= {low}")
    return int(value)
