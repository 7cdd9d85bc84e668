"""Guide trees: building them from distances, sequence weights, levels, Newick out.

A :class:`Tree` over n sequences is rooted and binary. Leaf i is input sequence i; internal
node k (0-based, in join order) has id ``n + k`` and its children have smaller ids, so the root
is ``2n - 2`` and visiting ids in increasing order visits children before parents.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from torchmsa.config import ExecutionPolicy
from torchmsa.cpu import tree as cpu_tree
from torchmsa.errors import ArgumentError
from torchmsa.newick import parse_newick, quote

__all__ = ["Tree", "METHODS", "build_tree", "tree_from_tensor", "from_newick", "linkage_tree"]

METHODS = ("upgma", "upgma_mafft", "nj", "single")
COMPILED_WALK_LEAVES = 4096  # trees from this many leaves walk their nodes in compiled code
_LINKAGE = {"upgma": cpu_tree.UPGMA, "upgma_mafft": cpu_tree.MAFFT, "single": cpu_tree.SINGLE}


@dataclass(frozen=True, eq=False)
class Tree:
    """A rooted binary guide tree.

    Attributes:
        names: leaf names; leaf i is input sequence i.
        children: ``int64 [n-1, 2]``; row k holds the children of internal node ``n + k``
            (ids smaller than ``n + k``).
        lengths: ``float64 [2n-1]``: branch length from each node to its parent (root: 0).
    """

    names: list[str]
    children: np.ndarray
    lengths: np.ndarray
    _cache: dict = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self):
        n = len(self.names)
        children = np.array(self.children, dtype=np.int64).reshape(-1, 2)
        lengths = np.array(self.lengths, dtype=np.float64).reshape(-1)
        if n < 1 or children.shape[0] != n - 1 or lengths.shape[0] != 2 * n - 1:
            raise ArgumentError(
                f"a tree over {n} leaves needs children [{n - 1}, 2] and lengths [{2 * n - 1}]; "
                f"got {children.shape} and {lengths.shape}"
            )
        own = np.arange(n, 2 * n - 1)[:, None]
        if ((children < 0) | (children >= own)).any() or (
            np.bincount(children.ravel(), minlength=2 * n - 1)[:-1] != 1
        ).any():
            raise ArgumentError(
                "invalid tree: every node but the root must be the child of exactly one node "
                "with a larger id"
            )
        if not np.isfinite(lengths).all():
            raise ArgumentError("invalid tree: branch lengths must be finite")
        children.setflags(write=False)
        lengths.setflags(write=False)
        object.__setattr__(self, "names", [str(x) for x in self.names])
        object.__setattr__(self, "children", children)
        object.__setattr__(self, "lengths", lengths)

    def __repr__(self) -> str:
        return f"Tree(n_leaves={self.n_leaves})"

    @property
    def n_leaves(self) -> int:
        return len(self.names)

    @property
    def root(self) -> int:
        return 2 * self.n_leaves - 2

    def parents(self) -> np.ndarray:
        """``int64 [2n-1]``: each node's parent id (the root's is -1)."""
        n = self.n_leaves
        parent = np.full(2 * n - 1, -1, np.int64)
        parent[self.children.ravel()] = np.repeat(np.arange(n, 2 * n - 1), 2)
        return parent

    def _compiled(self) -> bool:
        """Whether the node walks run compiled (:mod:`torchmsa.cpu.tree_walks`): for large
        trees only, where the Python loops cost (a small tree loads no numba code)."""
        return self.n_leaves >= COMPILED_WALK_LEAVES

    def sizes(self) -> np.ndarray:
        """``int64 [2n-1]``: the number of leaves under each node."""
        if "sizes" not in self._cache:
            n = self.n_leaves
            if self._compiled():
                from torchmsa.cpu.tree_walks import subtree_sizes

                size = subtree_sizes(self.children, n)
            else:
                size = np.ones(2 * n - 1, np.int64)
                for k, (a, b) in enumerate(self.children.tolist()):
                    size[n + k] = size[a] + size[b]
            size.setflags(write=False)
            self._cache["sizes"] = size
        return self._cache["sizes"]

    def _spans(self) -> tuple[np.ndarray, np.ndarray]:
        # leaf order (left subtree's leaves, then right's) and each node's first position in it
        if "spans" not in self._cache:
            n, size = self.n_leaves, self.sizes()
            if self._compiled():
                from torchmsa.cpu.tree_walks import leaf_starts

                start = leaf_starts(self.children, n, size)
            else:
                pos = [0] * (2 * n - 1)
                sz = size.tolist()
                for k, (a, b) in reversed(list(enumerate(self.children.tolist()))):
                    pos[a] = pos[n + k]
                    pos[b] = pos[n + k] + sz[a]
                start = np.array(pos, np.int64)
            order = np.empty(n, np.int64)
            order[start[:n]] = np.arange(n)
            order.setflags(write=False)
            start.setflags(write=False)
            self._cache["spans"] = (order, start)
        return self._cache["spans"]

    def leaf_order(self) -> np.ndarray:
        """``int64 [n]``: the leaves from left to right (the order of :meth:`newick`)."""
        return self._spans()[0]

    def leaves_under(self) -> list[np.ndarray]:
        """The leaf ids under each internal node, ``[k]`` for node ``n + k``: the left
        subtree's leaves, then the right's (read-only views into :meth:`leaf_order`)."""
        order, start = self._spans()
        n, size = self.n_leaves, self.sizes()
        return [order[start[v] : start[v] + size[v]] for v in range(n, 2 * n - 1)]

    def levels(self) -> list[np.ndarray]:
        """Internal node ids grouped for level-by-level work.

        A node's group is 1 + the largest group of its children (leaves: group 0); group g is
        returned at index g - 1, ids ascending, so every node's children are leaves or sit in
        an earlier group.
        """
        n = self.n_leaves
        if self._compiled():
            from torchmsa.cpu.tree_walks import node_groups

            group = node_groups(self.children, n)
        else:
            group = np.zeros(2 * n - 1, np.int64)
            for k, (a, b) in enumerate(self.children.tolist()):
                group[n + k] = 1 + max(group[a], group[b])
        inner = group[n:]
        ids = np.argsort(inner, kind="stable") + n
        bounds = np.searchsorted(inner[ids - n], np.arange(1, int(inner.max(initial=0)) + 2))
        return [ids[bounds[g] : bounds[g + 1]] for g in range(len(bounds) - 1)]

    def weights(self) -> np.ndarray:
        """ClustalW-style sequence weights, ``float64 [n]`` with mean 1.

        A leaf's raw weight is the sum, over the edges from the root down to it, of the edge's
        length divided by the number of leaves under the edge; the weights are then scaled to
        mean 1. All weights are 1 when every raw weight is 0 (e.g. all lengths 0).
        """
        if "weights" not in self._cache:
            n, size = self.n_leaves, self.sizes()
            if self._compiled():
                from torchmsa.cpu.tree_walks import sum_down

                acc = self.lengths / size
                sum_down(self.children, n, acc)
                w = acc[:n].copy()
            else:
                acc = (self.lengths / size).tolist()  # Python floats: the same sums as numba's
                for k, (a, b) in reversed(list(enumerate(self.children.tolist()))):
                    acc[a] += acc[n + k]
                    acc[b] += acc[n + k]
                w = np.array(acc[:n])
            total = w.sum()
            w = w * (n / total) if total > 0 else np.ones(n)
            w.setflags(write=False)
            self._cache["weights"] = w
        return self._cache["weights"].copy()

    def newick(self) -> str:
        """The tree in Newick format, with branch lengths (shortest round-trip decimals).

        Names holding whitespace or any of ``()[]':;,`` (or empty) are single-quoted, with
        quotes doubled.
        """
        n = self.n_leaves
        if n == 1:
            return quote(self.names[0]) + ";"
        lens = self.lengths.tolist()
        out: list[str] = []
        stack = [self.root]  # v >= 0: visit node v; -1: a comma; -2 - v: close node v
        while stack:
            v = stack.pop()
            if v == -1:
                out.append(",")
            elif v < -1:
                v = -2 - v
                out.append(")" if v == self.root else f"):{lens[v]!r}")
            elif v < n:
                out.append(f"{quote(self.names[v])}:{lens[v]!r}")
            else:
                a, b = self.children[v - n].tolist()
                out.append("(")
                stack.extend((-2 - v, b, -1, a))
        return "".join(out) + ";"

    def to_biopython(self):
        """The tree as a ``Bio.Phylo.BaseTree.Tree`` (via Newick)."""
        from io import StringIO

        from Bio import Phylo

        return Phylo.read(StringIO(self.newick()), "newick")


def from_newick(text: str, names: list[str]) -> Tree:
    """The :class:`Tree` a Newick string describes, leaf i being ``names[i]``
    (:func:`torchmsa.newick.parse_newick` says what it accepts and raises)."""
    children, lengths = parse_newick(text, names)
    return Tree(list(names), children, lengths)


def _distances(dist) -> np.ndarray:
    if hasattr(dist, "detach"):
        dist = dist.detach().cpu().numpy()
    d = np.ascontiguousarray(dist, dtype=np.float64)
    if d.ndim != 2 or d.shape[0] != d.shape[1] or d.shape[0] < 1:
        raise ArgumentError(
            f"`dist` must be a square [n, n] matrix with n >= 1; got shape {d.shape}"
        )
    kind, i, j = cpu_tree.check_distances(d)
    if kind:
        what = ("is not finite", "is negative", f"differs from dist[{j}, {i}] = {float(d[j, i])!r}")
        raise ArgumentError(
            f"dist[{i}, {j}] = {float(d[i, j])!r} {what[kind - 1]}; distances must be finite, "
            f">= 0 and symmetric (symmetrise with (d + d.T) / 2)"
        )
    return d


def build_tree(dist, method: str = "upgma", names: list[str] | None = None) -> Tree:
    """Build a guide tree from a distance matrix.

    Methods (details and formulas in ``torchmsa/cpu/tree.py``):

    * ``"upgma"``: average linkage; node heights are half the joining distance and branch
      lengths the differences of heights;
    * ``"upgma_mafft"``: MAFFT's modified UPGMA, new distance ``0.9 * min + 0.1 * mean`` of
      the two joined clusters' distances (MAFFT's documented rule, see
      https://mafft.cbrc.jp/alignment/software/algorithms/upg.html); heights as UPGMA;
    * ``"single"``: single linkage (minimum); heights as UPGMA;
    * ``"nj"``: neighbour joining, rooted where the last two clusters join (at half their
      distance); negative branch lengths are raised to 0.

    Deterministic: among equal criteria the pair of smallest ``(i, j)`` is joined, where a
    joined cluster takes the smaller index of its two; the lower node id goes left. Single
    linkage joins along its minimum spanning tree instead, leaf pairs ``i < j`` ordered by
    ``(d(i, j), i, j)`` (the same tree where no two distances are equal). The linkages run in
    O(n^2) time, neighbour joining in O(n^3); UPGMA and neighbour joining hold one n x n
    float64 copy, single linkage only reads ``dist``.

    Arguments:
        dist: ``float64 [n, n]`` (numpy or torch) symmetric, finite and non-negative off the
            diagonal; the diagonal is ignored.
        method: ``"upgma"``, ``"upgma_mafft"``, ``"nj"`` or ``"single"``.
        names: leaf names (default ``seq1 .. seqn``).

    Returns:
        The :class:`Tree`; with n == 1 it has no internal node.
    """
    _check_method(method)
    return _assemble(_distances(dist), method, names, owned=False)


def tree_from_tensor(
    dist: torch.Tensor,
    method: str,
    names: list[str] | None = None,
    *,
    policy: ExecutionPolicy | None = None,
) -> Tree:
    """:func:`build_tree` of a distance tensor on any device, checked where it lies.

    For large inputs (10^4 sequences: an 800 MB matrix) on a GPU the checks run there as tensor
    operations, in row blocks of about ``policy.retree_block`` entries, instead of the host's
    loop (``benchmarks.stages`` times both). Single linkage then runs on the GPU too
    (``triton_kernels/linkage.py``, the same joins as the host's), and only its spanning tree's
    edges cross to the host; the other methods copy the matrix to the host once, into the array
    that the clustering works in. The tree is the one :func:`build_tree` gives, and so are the
    errors (on the CPU, or when the device's check fails, the host's check runs and raises).
    ``dist`` is left as it was.

    Arguments:
        dist, method, names: as :func:`build_tree`.
        policy: the block size of the device's checks (``retree_block``; never changes the
            tree).
    """
    _check_method(method)
    policy = ExecutionPolicy() if policy is None else policy
    square = dist.ndim == 2 and dist.shape[0] == dist.shape[1] >= 1
    d64 = dist.to(torch.float64)  # dist itself when it is float64 already
    checked = square and dist.device.type != "cpu" and valid_distances(d64, policy.retree_block)
    if checked and method == "single" and dist.device.type == "cuda":
        from torchmsa.ops.linkage import single_linkage

        names = _names(names, dist.shape[0])
        return _linkage_tree(*single_linkage(d64, "triton"), names)
    # the agglomerations overwrite their matrix (a private copy); single linkage only reads
    copy = method != "single"
    host = dist.to("cpu", torch.float64, copy=copy, memory_format=torch.contiguous_format)
    d = host.numpy() if checked else _distances(host.numpy())  # the host's loop, its errors
    return _assemble(d, method, names, owned=copy)


def valid_distances(d: torch.Tensor, block: int) -> bool:
    """Whether ``d`` is finite, non-negative and symmetric off the diagonal, checked as tensor
    operations on its device, about ``block`` entries at a time (bounds their memory)."""
    n = d.shape[0]
    step = max(1, block // n)
    for r0 in range(0, n, step):
        rows = d[r0 : r0 + step]
        bad = ~torch.isfinite(rows) | (rows < 0) | (rows != d[:, r0 : r0 + step].T)
        diag = torch.arange(rows.shape[0], device=d.device)
        bad[diag, diag + r0] = False
        if bool(bad.any()):
            return False
    return True


def _check_method(method: str) -> None:
    if method not in METHODS:
        raise ArgumentError(
            f"Invalid value for `method` argument: {method!r}; use one of {METHODS}"
        )


def _assemble(d: np.ndarray, method: str, names, owned: bool) -> Tree:
    """The tree of a checked ``float64 [n, n]`` matrix; ``owned``: ``d`` may be overwritten."""
    names = _names(names, d.shape[0])
    if method != "nj":
        children, heights = cpu_tree.linkage(d, _LINKAGE[method], overwrite=owned)
        return _linkage_tree(children, heights, names)
    children, lengths = cpu_tree.neighbor_joining(d)
    return Tree(names, children, lengths)


def _names(names, n: int) -> list[str]:
    names = [f"seq{i + 1}" for i in range(n)] if names is None else [str(x) for x in names]
    if len(names) != n:
        raise ArgumentError(f"`names` holds {len(names)} names for a {n} x {n} distance matrix")
    return names


def linkage_tree(children: np.ndarray, heights: np.ndarray, names=None) -> Tree:
    """The :class:`Tree` of a linkage's joins (``children int [n-1, 2]`` with their
    ``heights``), leaf i named ``names[i]`` (default ``seq1 .. seqN``)."""
    return _linkage_tree(children, heights, _names(names, children.shape[0] + 1))


def _linkage_tree(children: np.ndarray, heights: np.ndarray, names) -> Tree:
    """The tree of a linkage's joins: branch lengths are differences of heights."""
    n = children.shape[0] + 1
    height = np.concatenate([np.zeros(n), heights])
    parent = np.full(2 * n - 1, 2 * n - 2, np.int64)
    parent[children.ravel()] = np.repeat(np.arange(n, 2 * n - 1), 2)
    return Tree(names, children, height[parent] - height)
