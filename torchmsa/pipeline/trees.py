"""Guide trees of the fast and default modes: the first tree from k-mer or LCS distances (or
PartTree), default mode's second tree from the distances of its first alignment; trees given
by the user (a :class:`~torchmsa.tree.Tree` or Newick text, :func:`given_tree`; the pass
along them is :func:`~torchmsa.pipeline.groups.along_tree`); rows in tree order
(:func:`tree_order`)."""

from __future__ import annotations

import numpy as np
import torch

from torchmsa.config import AlignConfig, ExecutionPolicy, MemoryBudget, TreeConfig
from torchmsa.errors import ArgumentError, ResourceError
from torchmsa.ops.backend import resolve_backend, resolve_device
from torchmsa.ops.identity import identity_counts
from torchmsa.pipeline.jobs import prepare_jobs
from torchmsa.sequences import SequenceBatch
from torchmsa.stages import stage
from torchmsa.tree import Tree, from_newick, tree_from_tensor

__all__ = [
    "FULL_MATRIX_BYTES",
    "check_full_matrix",
    "first_tree",
    "first_distances",
    "alignment_tree",
    "alignment_distances",
    "given_tree",
    "given_job_tree",
    "is_newick",
    "restrict",
    "tree_order",
    "guide_distances",
]

FULL_MATRIX_BYTES = 16  # per pair, a full-matrix tree: int32 LCS or k-mer counts, float64 distances


def check_full_matrix(
    n: int, device: torch.device, method: str, *, budget: MemoryBudget | None = None
) -> None:
    """:class:`~torchmsa.errors.ResourceError` where an ``n x n`` guide-tree matrix does not
    fit in ``budget.limit(device)``; the message says which limit applied."""
    budget = MemoryBudget() if budget is None else budget
    need = FULL_MATRIX_BYTES * n * n
    avail = budget.limit(device)
    if need > avail:
        raise ResourceError(
            f"a full-matrix guide tree ({method}) of {n} sequences on {device}",
            need,
            avail,
            f"use tree='parttree' or tree='lcs', which need no N x N matrix (the limit: "
            f"{budget.source(device)})",
        )


def first_tree(
    batch: SequenceBatch,
    method: str,
    backend: str,
    *,
    config: TreeConfig | None = None,
    policy: ExecutionPolicy | None = None,
    budget: MemoryBudget | None = None,
    ranks=None,
) -> Tree:
    """The first guide tree (``method`` from :func:`~torchmsa.pipeline.modes.first_tree_method`):
    PartTree, single linkage on LCS distances (streamed: memory linear in N), or 6-mer
    distances and a linkage (an N x N matrix, up to ``TreeConfig.parttree_min_n``).
    ``ranks``: a session whose ranks share PartTree's groups (the other methods run on every
    rank)."""
    with stage("first_tree"):
        if method == "parttree":
            from torchmsa.parttree import parttree

            return parttree(
                batch, backend=backend, config=config, policy=policy, budget=budget, ranks=ranks
            )
        if method == "lcs":  # single linkage streamed over row blocks: no N x N matrix
            from torchmsa.ops.lcs import lcs_single_linkage
            from torchmsa.tree import linkage_tree

            lengths = batch.lengths.to(batch.codes.device)
            joins = lcs_single_linkage(batch.codes, lengths, backend)
            return linkage_tree(*joins, batch.names)
        dist = first_distances(batch, method, backend, policy=policy, budget=budget)
        return tree_from_tensor(dist, method, batch.names, policy=policy)


def alignment_tree(
    codes: torch.Tensor,
    gap: int,
    method: str,
    names: list[str],
    *,
    policy: ExecutionPolicy | None = None,
    budget: MemoryBudget | None = None,
) -> Tree:
    """Default mode's second guide tree: ``method``'s linkage of the p-distances of an
    alignment's rows (:func:`alignment_distances`)."""
    with stage("alignment_tree"):
        check_full_matrix(codes.shape[0], codes.device, method, budget=budget)
        dist = alignment_distances(codes, gap, policy=policy)
        return tree_from_tensor(dist, method, names, policy=policy)


def alignment_distances(
    codes: torch.Tensor, gap: int, *, policy: ExecutionPolicy | None = None
) -> torch.Tensor:
    """p-distance of every pair of rows: 1 - identical / aligned residue pairs, from the exact
    counts of :func:`torchmsa.ops.identity.identity_counts`."""
    same, pairs = identity_counts(codes, gap, policy=policy)
    dist = 1.0 - same / pairs.clamp_min(1.0)
    dist[pairs == 0] = 1.0
    dist.fill_diagonal_(0.0)
    return dist


def given_tree(tree, names: list[str]) -> Tree:
    """A guide tree given by the user: a :class:`~torchmsa.tree.Tree` or Newick text, its
    leaves matched to ``names`` by name (leaf i of the result is ``names[i]``).

    Raises:
        ArgumentError: the text is not a rooted binary Newick tree, or its leaves are not
            exactly ``names`` (:func:`torchmsa.newick.parse_newick` says which).
    """
    if isinstance(tree, Tree):
        if list(tree.names) == list(names):
            return tree
        tree = tree.newick()
    if not isinstance(tree, str):
        raise ArgumentError(
            f"Invalid value for `tree` argument: {type(tree).__name__}; give a method name, a "
            f"torchmsa.Tree or Newick text"
        )
    return from_newick(tree.strip(), names)


def is_newick(tree) -> bool:
    """Whether ``tree`` is a tree (a :class:`~torchmsa.tree.Tree` or Newick text) rather than
    the name of a guide-tree method."""
    return isinstance(tree, Tree) or (isinstance(tree, str) and tree.strip().endswith(";"))


def restrict(tree: Tree, keep: np.ndarray) -> Tree:
    """The tree over the leaves ``keep`` (leaf i of the result is leaf ``keep[i]``): a node
    left with one child is replaced by it, the branch lengths added."""
    keep = np.asarray(keep, np.int64)
    n = tree.n_leaves
    if len(keep) == n and (keep == np.arange(n)).all():
        return tree
    new_id = np.full(2 * n - 1, -1, np.int64)
    new_id[keep] = np.arange(len(keep))
    extra = np.zeros(2 * n - 1)  # lengths of removed nodes, added to their surviving child
    children: list[tuple[int, int]] = []
    lengths = list(tree.lengths[keep])
    for k, (a, b) in enumerate(tree.children.tolist()):
        v = n + k
        alive = [c for c in (a, b) if new_id[c] >= 0]
        if len(alive) == 2:
            children.append((int(new_id[a]), int(new_id[b])))
            new_id[v] = len(keep) + len(children) - 1
            lengths.append(tree.lengths[v])
            for c in (a, b):
                lengths[new_id[c]] += extra[c]
        elif len(alive) == 1:
            new_id[v] = new_id[alive[0]]
            extra[v] = extra[alive[0]] + tree.lengths[alive[0]]
            lengths[new_id[v]] = tree.lengths[v]
    lengths[-1] = 0.0
    names = [tree.names[i] for i in keep]
    return Tree(names, np.asarray(children, np.int64).reshape(-1, 2), lengths)


def tree_order(aln):
    """``aln`` (an :class:`~torchmsa.Alignment`) with its rows in its guide tree's leaf order
    (MAFFT's ``--reorder``); unchanged without a tree."""
    from torchmsa.alignment import Alignment

    if aln.tree is None or len(aln) < 2:
        return aln
    order = aln.tree.leaf_order().copy()
    rows = aln.rows
    keep = torch.from_numpy(order).to(aln.codes.device)
    out = Alignment(
        [aln.names[i] for i in order],
        [aln.descriptions[i] for i in order],
        [rows[i].replace("-", "") for i in order],
        aln.codes[keep],
        aln.alphabet,
        restrict(aln.tree, order),
        aln.weights[torch.from_numpy(order).to(aln.weights.device)],
        {**aln.metadata, "order": "tree"},
    )
    return out


def first_distances(
    batch: SequenceBatch,
    method: str,
    backend: str,
    *,
    policy: ExecutionPolicy | None = None,
    budget: MemoryBudget | None = None,
) -> torch.Tensor:
    """``float64 [N, N]`` the distances the first guide tree of ``method`` is built from:
    1 - LCS length / shorter length (``"lcs"``) or 6-mer distances (the linkages).

    Raises:
        ArgumentError: ``method`` is ``"parttree"``, which builds no full matrix.
    """
    from torchmsa.ops.kmer import kmer_distances, shared_kmer_counts

    if method == "parttree":
        raise ArgumentError(
            "PartTree builds no full distance matrix; choose another tree (e.g. tree='lcs') "
            "to get one"
        )
    check_full_matrix(len(batch), batch.codes.device, method, budget=budget)
    if method == "lcs":
        from torchmsa.ops.lcs import lcs_distances, lcs_lengths

        lengths = batch.lengths.to(batch.codes.device)
        return lcs_distances(lcs_lengths(batch.codes, lengths, backend, budget=budget), lengths)
    counts = shared_kmer_counts(batch, backend=backend, policy=policy, budget=budget)
    self_counts = torch.diagonal(counts)
    return kmer_distances(counts, self_counts, self_counts)


def given_job_tree(tree, names: list[str], keep: np.ndarray | None = None) -> Tree | None:
    """A job's guide tree from the user's ``tree`` over its input ``names``, restricted to the
    leaves ``keep`` (the distinct sequences a job aligns); ``None`` for a single leaf."""
    t = given_tree(tree, names)
    if keep is not None:
        t = restrict(t, keep)
    return t if t.n_leaves > 1 else None


def guide_distances(
    seqs,
    *,
    config: AlignConfig | None = None,
    policy: ExecutionPolicy | None = None,
    budget: MemoryBudget | None = None,
    device="auto",
    seqtype: str = "auto",
    backend: str = "auto",
) -> tuple[list[str], torch.Tensor]:
    """The sequences' names and the distances ``float64 [N, N]`` that :func:`torchmsa.align`'s
    first guide tree is built from under ``config``: 6-mer or LCS distances, or in accurate
    mode those of the all-pairs local alignments (copies of a sequence at distance 0).

    Raises:
        ArgumentError: the first tree would be PartTree, which builds no full matrix.
    """
    config = AlignConfig() if config is None else config
    policy = ExecutionPolicy() if policy is None else policy
    dev = resolve_device(device)
    host_small = backend == "auto" and dev.type == "cuda"
    (job,) = prepare_jobs(
        [seqs], seqtype, dev, host_small, config=config, policy=policy, budget=budget
    )
    b, impl = job.batch, resolve_backend(backend, job.place)
    if len(b) == 1:
        dist = torch.zeros(1, 1, dtype=torch.float64)
    elif job.mode == "accurate":
        from torchmsa.pipeline.accurate import library, local_scoring

        local = local_scoring(b.alphabet, config=config.consistency)
        lib = library(b, local, impl, config=config.consistency, policy=policy, budget=budget)
        dist = torch.as_tensor(lib.dist, dtype=torch.float64)
    else:
        dist = first_distances(b, job.first, impl, policy=policy, budget=budget)
    if job.copies is None:
        return list(b.names), dist
    rep = torch.from_numpy(job.copies.rep).to(dist.device)
    return list(job.copies.full.names), dist[rep][:, rep]
