"""Identical sequences aligned once: a job keeps one copy of each distinct sequence (the same
residue codes: the same residues up to case, in one alphabet), and every copy gets its
representative's row back, with its own name, header and case (:func:`collapse`,
:func:`restore`, :func:`restore_tree`).

The distinct sequences are aligned exactly as they would be on their own, so a set of 1,000
copies of one sequence costs what one sequence does (docs/decisions, collapse-duplicates).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import torch

from torchmsa.records import bulk
from torchmsa.sequences import SequenceBatch
from torchmsa.tree import Tree

__all__ = ["Copies", "collapse", "restore", "restore_tree"]


@dataclass(frozen=True)
class Copies:
    """How a job's input maps onto its distinct sequences.

    Attributes:
        full: the input as given (every copy, input order).
        rep: ``int64 [N]``: each input sequence's row among the distinct ones.
        first: ``int64 [D]``: each distinct sequence's first input index (its representative).
    """

    full: SequenceBatch
    rep: np.ndarray
    first: np.ndarray

    @property
    def collapsed(self) -> int:
        """How many input sequences were copies of an earlier one."""
        return len(self.rep) - len(self.first)


def collapse(batch: SequenceBatch) -> tuple[SequenceBatch, Copies | None]:
    """``batch`` with every sequence that repeats an earlier one left out, and the map back
    (``None`` when all sequences are distinct: the batch is returned as it is)."""
    n = len(batch)
    if n < 2:
        return batch, None
    codes = np.ascontiguousarray(batch.codes.cpu().numpy())
    lengths = batch.lengths.cpu().numpy()
    # a row's codes with their padding (gap codes, never a residue's) are its key: equal
    # sequences have equal lengths, so equal keys; ids go to keys in order of first sight
    buf, w = codes.tobytes(), codes.shape[1]
    seen: dict[bytes, int] = {}
    with bulk():
        keys = (buf[s * w : (s + 1) * w] for s in range(n))
        rep = np.fromiter((seen.setdefault(k, len(seen)) for k in keys), np.int64, n)
    if len(seen) == n:
        return batch, None
    keep = np.unique(rep, return_index=True)[1].astype(np.int64)  # each id's first index
    first = keep.tolist()
    width = int(lengths[keep].max()) if len(keep) else 0
    index = torch.from_numpy(keep).to(batch.codes.device)
    distinct = dataclasses.replace(
        batch,
        names=[batch.names[s] for s in first],
        descriptions=[batch.descriptions[s] for s in first],
        residues=[batch.residues[s] for s in first],
        codes=batch.codes[index, :width].contiguous(),
        lengths=batch.lengths[index].contiguous(),
    )
    return distinct, Copies(batch, rep, keep)


def restore(codes: torch.Tensor, copies: Copies | None) -> torch.Tensor:
    """The distinct sequences' alignment ``codes`` (``uint8 [D, C]``) as the input's
    (``[N, C]``): every copy takes its representative's row."""
    if copies is None:
        return codes
    return codes[torch.from_numpy(copies.rep).to(codes.device)]


def restore_tree(tree: Tree | None, copies: Copies | None) -> Tree | None:
    """The distinct sequences' tree with every representative's leaf replaced by a comb of
    its copies at distance 0 (leaf i = input sequence i); ``None`` for a one-sequence job
    stays ``None`` unless it had copies."""
    if copies is None:
        return tree
    n, d = len(copies.rep), len(copies.first)
    names = copies.full.names
    groups: list[list[int]] = [[] for _ in range(d)]
    for s, r in enumerate(copies.rep.tolist()):
        groups[r].append(s)
    children: list[tuple[int, int]] = []
    top = np.empty(d, np.int64)  # the node that stands for each distinct leaf
    for r, members in enumerate(groups):
        node = members[0]
        for s in members[1:]:
            children.append((node, s))
            node = n + len(children) - 1
        top[r] = node
    extra = len(children)
    lengths = np.zeros(2 * n - 1, np.float64)
    if tree is None:  # every sequence a copy of one: the comb is the tree
        return Tree(names, np.asarray(children, np.int64).reshape(-1, 2), lengths)

    def new_id(v: int) -> int:
        return int(top[v]) if v < d else n + extra + (v - d)

    for a, b in tree.children.tolist():
        children.append((new_id(a), new_id(b)))
    for v in range(2 * d - 1):
        lengths[new_id(v)] = tree.lengths[v]
    return Tree(names, np.asarray(children, np.int64), lengths)
