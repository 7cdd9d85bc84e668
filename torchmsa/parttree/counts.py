"""What PartTree measures sequences by: shared k-mer counts from a
:class:`~torchmsa.sequences.SequenceBatch` (id lists on its device) or from a user's counts
function, with their distances (:func:`distances`); or LCS lengths (:class:`LcsCounts`), with
FAMSA's LCS distance. Each source has ``self_counts`` (a sequence against itself: 0 for one
that can be measured against nothing), ``blocks(tasks)`` and ``distances``."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from torchmsa.config import ExecutionPolicy
from torchmsa.constants import LCS_TIE
from torchmsa.errors import ArgumentError
from torchmsa.sequences import SequenceBatch

__all__ = ["BatchCounts", "FnCounts", "LcsCounts", "distances", "pair_distances", "lcs_distances"]


class _KmerDistances:
    """Sources of shared k-mer counts turn them into :func:`distances`."""

    def distances(self, counts, sa, sb):
        return distances(counts, sa, sb)


class BatchCounts(_KmerDistances):
    """Shared k-mer counts of a SequenceBatch: id lists kept on the counting device."""

    def __init__(self, batch: SequenceBatch, k: int, backend: str, policy: ExecutionPolicy, budget):
        from torchmsa.ops.backend import resolve_backend
        from torchmsa.ops.kmer import kmer_ids, reduced_map

        self.policy, self.budget = policy, budget
        self.dense_pairs = policy.parttree_dense_pairs  # blocks this large are counted dense
        self.pair_chunk = policy.parttree_pair_chunk  # pairs per pair-count call
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
        block = shared_counts(
            self.ids[ia],
            self.n[ia],
            self.ids[ib],
            self.n[ib],
            self.impl,
            policy=self.policy,
            budget=self.budget,
        )
        return block.cpu().numpy()

    def _pairs(self, p: np.ndarray, q: np.ndarray) -> np.ndarray:
        from torchmsa.ops.kmer import pair_counts

        dev, out = self.ids.device, []
        step = self.pair_chunk
        for s in range(0, len(p), step):
            ps = torch.as_tensor(p[s : s + step], device=dev)
            qs = torch.as_tensor(q[s : s + step], device=dev)
            out.append(pair_counts(self.ids, self.n, self.ids, self.n, ps, qs, self.impl))
        return torch.cat(out).cpu().numpy() if out else np.zeros(0, np.int32)

    def group_pairs(self, groups: list[np.ndarray]):
        """The pairs ``i < j`` of each group, row-major, counted in one batch: ``(counts
        int64 [P], first int64 [P], second int64 [P], offsets int64 [G + 1])``, the pairs'
        sequence indices in ``first`` and ``second`` (``blocks`` with ``b`` None, unpacked)."""
        sizes = np.fromiter(map(len, groups), np.int64, len(groups))
        off = np.zeros(len(groups) + 1, np.int64)
        np.cumsum(sizes * (sizes - 1) // 2, out=off[1:])
        tri: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        p_parts, q_parts = [], []
        for a in groups:
            i, j = tri.get(len(a)) or tri.setdefault(len(a), np.triu_indices(len(a), 1))
            p_parts.append(a[i])
            q_parts.append(a[j])
        if not off[-1]:
            empty = np.zeros(0, np.int64)
            return empty, empty, empty, off
        p, q = np.concatenate(p_parts), np.concatenate(q_parts)
        return self._pairs(p, q).astype(np.int64), p, q, off

    def blocks(self, tasks):
        """Counts of each task ``(a, b)`` (``int [len(a), len(b)]``; ``b`` None: all pairs of
        ``a``): large blocks dense, all the others as one batch of pairs."""
        out: list = [None] * len(tasks)
        p_parts, q_parts, owners = [], [], []
        for t, (a, b) in enumerate(tasks):
            if b is not None and len(a) * len(b) >= self.dense_pairs:
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


class FnCounts(_KmerDistances):
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


FLAT_PAIRS = 1 << 16  # pairs from which 1-D distances are computed in one compiled pass


def distances(counts: np.ndarray, sa: np.ndarray, sb: np.ndarray) -> np.ndarray:
    """The 6-mer distances of a block of shared counts between sequences of ``sa`` and
    ``sb`` k-mers (:func:`pair_distances` of every pair)."""
    return pair_distances(counts, sa[:, None], sb[None, :])


def pair_distances(counts: np.ndarray, sa: np.ndarray, sb: np.ndarray) -> np.ndarray:
    """``1 - c / min(s_a, s_b)`` of pairs with ``c`` shared k-mers (1 where a side has none),
    element by element (many equal-length 1-D pairs: in one compiled pass,
    :func:`torchmsa.cpu.kmer.pair_distances_flat`)."""
    if counts.ndim == 1 and counts.shape == sa.shape == sb.shape and len(counts) >= FLAT_PAIRS:
        from torchmsa.cpu.kmer import pair_distances_flat

        return pair_distances_flat(counts, sa, sb)
    smaller = np.minimum(sa, sb)
    d = 1.0 - counts / np.maximum(smaller, 1)
    return np.where(smaller > 0, d, 1.0)


class LcsCounts:
    """LCS lengths of a SequenceBatch's sequences, counted on the host (numba, every core):
    ``self_counts`` are the lengths, ``distances`` FAMSA's ``indel / (indel + LCS)``."""

    def __init__(self, batch: SequenceBatch):
        from torchmsa.cpu.lcs import host_inputs, lcs_masks

        self.codes, lens = host_inputs(batch.codes, batch.lengths)
        self.self_counts = lens.astype(np.int64)
        self.masks = lcs_masks(self.codes, self.self_counts)

    def blocks(self, tasks):
        return [self._block(a, b) for a, b in tasks]

    def _block(self, a: np.ndarray, b: np.ndarray | None) -> np.ndarray:
        from torchmsa.cpu.lcs import lcs_lengths
        from torchmsa.cpu.lcs_rows import lcs_block

        if b is None:  # all pairs of a group, each once: the all-pairs routine of the LCS tree
            return lcs_lengths(self.codes[a], self.self_counts[a]).numpy().astype(np.int64)
        return lcs_block(self.codes, self.self_counts, self.masks, a, b)

    def distances(self, lcs, sa, sb):
        return lcs_distances(lcs, sa, sb)


def lcs_distances(lcs: np.ndarray, sa: np.ndarray, sb: np.ndarray) -> np.ndarray:
    """The LCS distance of :func:`torchmsa.ops.lcs.lcs_distances` (FAMSA's ``indel / (indel +
    LCS)`` with its tie term), in the same float64 operations, of a block of LCS lengths
    between sequences of lengths ``sa`` and ``sb``."""
    union = (sa[:, None] + sb[None, :]).astype(np.float64) - lcs
    indel = union - lcs
    tie = np.sqrt(indel) / np.maximum(lcs, 1.0) * LCS_TIE
    return indel / np.maximum(union, 1.0) + tie
