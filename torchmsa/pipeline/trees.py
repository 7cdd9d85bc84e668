"""Guide trees of the fast and default modes: the first tree from k-mer or LCS distances (or
PartTree), and default mode's second tree from the distances of its first alignment."""

from __future__ import annotations

import torch

from torchmsa.config import ExecutionPolicy, MemoryBudget, TreeConfig
from torchmsa.errors import ResourceError
from torchmsa.sequences import SequenceBatch
from torchmsa.tree import Tree, tree_from_tensor

__all__ = ["FULL_MATRIX_BYTES", "check_full_matrix", "first_tree", "alignment_tree"]

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
            f"use tree='parttree', which needs no N x N matrix (the limit: "
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
) -> Tree:
    """The first guide tree (``method`` from :func:`~torchmsa.pipeline.modes.first_tree_method`):
    PartTree, single linkage on LCS distances, or 6-mer distances and a linkage."""
    from torchmsa.ops.kmer import kmer_distances, shared_kmer_counts

    with torch.profiler.record_function("torchmsa.first_tree"):
        if method == "parttree":
            from torchmsa.parttree import parttree

            return parttree(batch, backend=backend, config=config, policy=policy, budget=budget)
        check_full_matrix(len(batch), batch.codes.device, method, budget=budget)
        if method == "lcs":
            from torchmsa.ops.lcs import lcs_distances, lcs_lengths

            lengths = batch.lengths.to(batch.codes.device)
            lcs = lcs_lengths(batch.codes, lengths, backend, budget=budget)
            dist = lcs_distances(lcs, lengths)
            return tree_from_tensor(dist, "single", batch.names, policy=policy)
        counts = shared_kmer_counts(batch, backend=backend, policy=policy, budget=budget)
        self_counts = torch.diagonal(counts)
        dist = kmer_distances(counts, self_counts, self_counts)
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
    with torch.profiler.record_function("torchmsa.alignment_tree"):
        check_full_matrix(codes.shape[0], codes.device, method, budget=budget)
        dist = alignment_distances(codes, gap, policy=policy)
        return tree_from_tensor(dist, method, names, policy=policy)


def alignment_distances(
    codes: torch.Tensor, gap: int, *, policy: ExecutionPolicy | None = None
) -> torch.Tensor:
    """p-distance of every pair of rows: 1 - identical / aligned residue pairs.

    Exact integer counts from float64 matrix products, over column blocks of about
    ``policy.retree_block`` one-hot entries.
    """
    policy = ExecutionPolicy() if policy is None else policy
    n, width = codes.shape
    residue = (codes != gap).to(torch.float64)
    pairs = residue @ residue.T
    same = torch.zeros(n, n, dtype=torch.float64, device=codes.device)
    step = max(1, policy.retree_block // max(1, n * gap))
    for c0 in range(0, width, step):
        block = codes[:, c0 : c0 + step].long()
        hot = torch.nn.functional.one_hot(block, gap + 1)[..., :gap].reshape(n, -1)
        hot = hot.to(torch.float64)
        same += hot @ hot.T
    dist = 1.0 - same / pairs.clamp_min(1.0)
    dist[pairs == 0] = 1.0
    dist.fill_diagonal_(0.0)
    return dist
