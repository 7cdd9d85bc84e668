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

from collections.abc import Callable

import numpy as np
import torch

from torchmsa.cpu import tree as cpu_tree
from torchmsa.errors import ArgumentError
from torchmsa.sequences import SequenceBatch
from torchmsa.tree import Tree

__all__ = ["DEFAULT_N_REF", "DEFAULT_LEAF_SIZE", "parttree", "parttree_tree"]

DEFAULT_N_REF = 50  # MAFFT's --partsize
DEFAULT_LEAF_SIZE = 500
DENSE_PAIRS = 1 << 22  # blocks with this many pairs are counted as dense blocks
PAIR_CHUNK = 1 << 24  # pairs per pair-count call
MERGE_FRACTION = 0.5  # references joined below this fraction of the root height merge
_LINKAGE = {"upgma": cpu_tree.UPGMA, "upgma_mafft": cpu_tree.MAFFT, "single": cpu_tree.SINGLE}


class _BatchCounts:
    """Shared k-mer counts of a SequenceBatch: id lists kept on the counting device."""

    def __init__(self, batch: SequenceBatch, k: int, backend: str):
        from torchmsa.ops.backend import resolve_backend
        from torchmsa.ops.kmer import kmer_ids, reduced_map

        self.impl = resolve_backend(backend, batch.device)
        dev = batch.device if self.impl == "triton" else torch.device("cpu")
        self.ids, self.n = kmer_ids(
            batch.codes.to(dev), batch.lengths.to(dev), reduced_map(batch.alphabet), k, self.impl
        )
        self.self_counts = self.n.cpu().numpy().astype(np.int64)

    def _dense(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        from torchmsa.ops.kmer import shared_counts

        ia = torch.as_tensor(a, device=self.ids.device)
        ib = torch.as_tensor(b, device=self.ids.device)
        block = shared_counts(self.ids[ia], self.n[ia], self.ids[ib], self.n[ib], self.impl)
        return block.cpu().numpy()

    def _pairs(self, p: np.ndarray, q: np.ndarray) -> np.ndarray:
        from torchmsa.ops.kmer import pair_counts

        dev, out = self.ids.device, []
        for s in range(0, len(p), PAIR_CHUNK):
            ps = torch.as_tensor(p[s : s + PAIR_CHUNK], device=dev)
            qs = torch.as_tensor(q[s : s + PAIR_CHUNK], device=dev)
            out.append(pair_counts(self.ids, self.n, self.ids, self.n, ps, qs, self.impl))
        return torch.cat(out).cpu().numpy() if out else np.zeros(0, np.int32)

    def blocks(self, tasks):
        """Counts of each task ``(a, b)`` (``int [len(a), len(b)]``; ``b`` None: all pairs of
        ``a``): large blocks dense, all the others as one batch of pairs."""
        out: list = [None] * len(tasks)
        p_parts, q_parts, owners = [], [], []
        for t, (a, b) in enumerate(tasks):
            if b is not None and len(a) * len(b) >= DENSE_PAIRS:
                out[t] = self._dense(a, b)
                continue
            if b is None:  # pairs i < j
                i, j = np.triu_indices(len(a), 1)
                p_parts.append(a[i])
                q_parts.append(a[j])
            else:
                # the shorter side repeats: the CPU path counts a run of equal p from one table
                x, y = (a, b) if len(a) <= len(b) else (b, a)
                p_parts.append(np.repeat(x, len(y)))
                q_parts.append(np.tile(y, len(x)))
            owners.append(t)
        if not owners:
            return out
        flat = self._pairs(np.concatenate(p_parts), np.concatenate(q_parts))
        start = 0
        for t, part in zip(owners, p_parts):
            a, b = tasks[t]
            vals = flat[start : start + len(part)].astype(np.int64)
            start += len(part)
            if b is None:
                block = np.zeros((len(a), len(a)), np.int64)
                block[np.triu_indices(len(a), 1)] = vals
                block += block.T
                block[np.diag_indices(len(a))] = self.self_counts[a]
                out[t] = block
            elif len(a) <= len(b):
                out[t] = vals.reshape(len(a), len(b))
            else:
                out[t] = vals.reshape(len(b), len(a)).T
        return out


class _FnCounts:
    """Shared counts from a user function ``counts_fn(a_idx, b_idx) -> int [len(a), len(b)]``."""

    def __init__(self, fn: Callable, n: int | None, self_counts):
        self.fn = fn
        if self_counts is None:
            if n is None:
                raise ArgumentError(
                    "parttree with a counts function needs `self_counts` (each sequence's "
                    "k-mer count) or `n` (the number of sequences)"
                )
            chunks = np.array_split(np.arange(n), -(-n // 256))
            diag = [np.diagonal(self._call(c, c)) for c in chunks]
            self_counts = np.concatenate(diag) if diag else np.zeros(0)
        self.self_counts = np.asarray(self_counts, dtype=np.int64).reshape(-1)

    def _call(self, a, b):
        block = np.asarray(torch.as_tensor(self.fn(a, b)).cpu(), dtype=np.int64)
        if block.shape != (len(a), len(b)):
            raise ArgumentError(
                f"the counts function returned shape {block.shape} for {len(a)} x {len(b)} "
                f"sequences; it must return int [len(a_idx), len(b_idx)]"
            )
        return block

    def blocks(self, tasks):
        return [self._call(a, a if b is None else b) for a, b in tasks]


def _distances(counts: np.ndarray, sa: np.ndarray, sb: np.ndarray) -> np.ndarray:
    smaller = np.minimum(sa[:, None], sb[None, :])
    d = 1.0 - counts / np.maximum(smaller, 1)
    return np.where(smaller > 0, d, 1.0)


def _merge_close(ref_tree, fraction: float = MERGE_FRACTION):
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


class _Builder:
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


def _check(value, name: str, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        raise ArgumentError(f"Invalid value for `{name}` argument: {value!r}; use an int >= {low}")
    return int(value)


def _choose_refs(groups, counts, sc, n_ref, n_far, seed) -> list[np.ndarray]:
    """References of each group: longest, farthest points, then random members; the
    farthest-point rounds of all groups are counted together."""
    refs = [[int(m[np.argmax(sc[m])])] for m in groups]
    nearest = [np.full(len(m), np.inf) for m in groups]
    want = [min(n_far + 1, n_ref, len(m)) for m in groups]
    while todo := [i for i, m in enumerate(groups) if len(refs[i]) < want[i]]:
        cols = counts.blocks([(groups[i], np.array(refs[i][-1:])) for i in todo])
        for i, col in zip(todo, cols):
            m = groups[i]
            d = _distances(col, sc[m], sc[refs[i][-1:]])[:, 0]
            nearest[i] = np.minimum(nearest[i], d)
            refs[i].append(int(m[np.argmax(np.where(np.isin(m, refs[i]), -1.0, nearest[i]))]))
    out = []
    for m, r in zip(groups, refs):
        rest = m[~np.isin(m, r)]
        rng = np.random.default_rng([seed, int(m[0]), len(m)])
        extra = rng.choice(rest, size=min(n_ref - len(r), len(rest)), replace=False)
        out.append(np.array(r + sorted(int(x) for x in extra), dtype=np.int64))
    return out


def _nearest(counts: np.ndarray, d: np.ndarray, sm: np.ndarray, sr: np.ndarray) -> np.ndarray:
    """Each member's nearest reference; among equal distances the one closest in size
    (``1 - c / max(s_a, s_b)`` smallest), so fragments gather with fragments; then the first."""
    tied = d == d.min(axis=1, keepdims=True)
    size_gap = 1.0 - counts / np.maximum(np.maximum(sm[:, None], sr[None, :]), 1)
    return np.argmin(np.where(tied, size_gap, np.inf), axis=1)


def parttree(
    source,
    *,
    n_ref: int = DEFAULT_N_REF,
    n_far: int | None = None,
    leaf_size: int = DEFAULT_LEAF_SIZE,
    method: str = "upgma_mafft",
    seed: int = 0,
    names: list[str] | None = None,
    n: int | None = None,
    self_counts=None,
    k: int = 6,
    backend: str = "auto",
) -> Tree:
    """A PartTree guide tree (see the module docstring).

    Arguments:
        source: a :class:`~torchmsa.sequences.SequenceBatch` (k-mers counted on its device),
            or a function ``counts_fn(a_idx, b_idx)`` returning the shared k-mer counts
            ``int [len(a_idx), len(b_idx)]`` of sequences given by ``int64`` index arrays.
        n_ref: references per split group (MAFFT's ``--partsize``).
        n_far: references chosen farthest-point after the longest (default ``n_ref // 4``).
        leaf_size: groups of at most this many sequences get a tree from all their pairs; with
            ``N <= leaf_size`` the result is ``build_tree`` of the full distance matrix.
        method: linkage for those trees: ``"upgma_mafft"``, ``"upgma"`` or ``"single"``.
        seed: seed of the random reference picks.
        names: leaf names (default: the batch's names, or ``seq1 .. seqN``).
        n: the number of sequences (a counts function without ``self_counts`` only).
        self_counts: ``int [N]`` k-mers of each sequence (a counts function only; default:
            the diagonal of the counts function, in blocks).
        k: k-mer length (a batch only).
        backend: ``"auto"``, ``"cpu"`` or ``"triton"`` (a batch only).

    Returns:
        The :class:`~torchmsa.tree.Tree`, leaf i = sequence i.
    """
    n_ref = _check(n_ref, "n_ref", 2)
    n_far = max(1, n_ref // 4) if n_far is None else _check(n_far, "n_far", 0)
    leaf_size = _check(leaf_size, "leaf_size", 1)
    if method not in _LINKAGE:
        raise ArgumentError(
            f"Invalid value for `method` argument: {method!r}; use one of {tuple(_LINKAGE)}"
        )
    if isinstance(source, SequenceBatch):
        counts = _BatchCounts(source, k, backend)
        names = source.names if names is None else names
    elif callable(source):
        counts = _FnCounts(source, n, self_counts)
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
    groups: list[np.ndarray] = [np.flatnonzero(sc > 0)]
    splits: dict[int, tuple] = {}
    small: dict[int, tuple] = {}
    frontier = [0] if len(groups[0]) else []
    while frontier:
        big = [g for g in frontier if len(groups[g]) > leaf_size]
        leaf = [g for g in frontier if 1 < len(groups[g]) <= leaf_size]
        for g, block in zip(leaf, counts.blocks([(groups[g], None) for g in leaf])):
            m = groups[g]
            dist = _distances(block, sc[m], sc[m])
            small[g] = cpu_tree.linkage((dist + dist.T) / 2, linkage)
        frontier = []
        refs_of = _choose_refs([groups[g] for g in big], counts, sc, n_ref, n_far, seed)
        blocks = counts.blocks([(groups[g], r) for g, r in zip(big, refs_of)])
        for g, refs, block in zip(big, refs_of, blocks):
            splits[g] = _split(groups, g, refs, block, sc, linkage, small, frontier)
    return _assemble(names, groups, splits, small, np.flatnonzero(sc == 0))


def _split(groups, g, refs, block, sc, linkage, small, frontier):
    """Split group ``g`` by its references (``block``: members x references counts): new
    groups are appended to ``groups``, the ones to split or cluster further to ``frontier``,
    k-mer-identical ones marked flat in ``small``. Returns ``(reference tree, child ids)``."""
    m = groups[g]
    at = np.searchsorted(m, refs)
    d = _distances(block, sc[m], sc[refs])
    own = _nearest(block, d, sc[m], sc[refs])
    own[at] = np.arange(len(refs))
    label, ref_tree = _merge_close(cpu_tree.linkage((d[at] + d[at].T) / 2, linkage))
    own = label[own]
    child_ids = []
    for c in range(label.max() + 1):
        part = m[own == c]
        first = int(np.argmax(label == c))  # the group's first reference
        child_ids.append(len(groups))
        groups.append(part)
        same = (block[own == c, first] == sc[refs[first]]) & (sc[part] == sc[refs[first]])
        if len(part) > 1 and same.all():
            small[child_ids[-1]] = None  # the same k-mers as the reference: flat
        elif len(part) > 1:
            frontier.append(child_ids[-1])
    return ref_tree, child_ids


def _assemble(names, groups, splits, small, empty) -> Tree:
    """Build the groups' subtrees bottom-up (children groups have larger ids) into a Tree."""
    total = len(names)
    build = _Builder(total)
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


def parttree_tree(batch: SequenceBatch, backend: str = "auto", method: str = "upgma_mafft") -> Tree:
    """The PartTree guide tree of ``batch`` with the default settings (for ``align``).

    Arguments:
        batch: the sequences (k-mers are counted on its device).
        backend: ``"auto"``, ``"cpu"`` or ``"triton"``.
        method: linkage of the reference trees and the small groups.

    Returns:
        The :class:`~torchmsa.tree.Tree` over ``batch.names``.
    """
    return parttree(batch, backend=backend, method=method)
