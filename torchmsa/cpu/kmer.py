"""k-mer ids and shared k-mer counts on the CPU (numba), the twin of ``triton_kernels/kmer.py``.

Each residue code maps to a group of a reduced alphabet (``reduced``: ``uint8 [A + 1]``, one
entry per code including the gap code; 255 = not counted). A k-mer is k consecutive residues of
one sequence; it is counted when none of its residues maps to 255, and its id is the base-G
number of its groups (G = number of groups, first residue most significant).

Sequence s's ids are kept as a sorted list: ``ids[s, :n[s]]`` ascending, padded with
:data:`PAD` (larger than every id, so padded rows stay sorted). The shared count of two
sequences, ``sum over k-mers of min(count in a, count in b)``, is the size of the multiset
intersection of their lists. For small id ranges (``6**6`` for Dayhoff 6-mers) one list is
spread into a dense count table and each list of the other set is looked up in it, the o-th
copy of an id being shared when the table holds more than o of it (about 2 ns a k-mer on one
core); larger ranges fall back to a merge walk of the two sorted lists. :func:`pair_counts` counts
chosen pairs (PartTree's groups), one table per run of pairs with the same sequence of a.
"""

from __future__ import annotations

import numba
import numpy as np
import torch
from numba import njit, prange

from torchmsa.constants import NOT_COUNTED, PAD
from torchmsa.cpu.twins import pick, twin
from torchmsa.errors import ArgumentError, check_codes

__all__ = ["PAD", "NOT_COUNTED", "kmer_ids", "shared_counts", "pair_counts", "pair_distances_flat"]

# id ranges below this size are counted through a dense per-thread table (4 bytes an entry),
# larger ones by merging the sorted lists (the ``table_limit`` default; both give the same counts)
TABLE_LIMIT = 1 << 22


def _kmer_ids(codes, lengths, reduced, k, base, ids, n_ids):
    top = base ** (k - 1)
    for s in prange(codes.shape[0]):
        row = ids[s]
        c = 0
        run = 0  # residues in the current stretch of counted ones
        v = 0  # id of the last min(run, k) residues
        for p in range(lengths[s]):
            g = reduced[codes[s, p]]
            if g == NOT_COUNTED:
                run = 0
                v = 0
                continue
            v = (v % top) * base + g
            run += 1
            if run >= k:
                row[c] = v
                c += 1
        row[:c].sort()
        n_ids[s] = c


@njit(cache=True, inline="always")
def _merge_count(a, na, b, nb):
    # branch-free merge: equal heads count once and both advance
    i = 0
    j = 0
    c = 0
    while i < na and j < nb:
        x = a[i]
        y = b[j]
        c += x == y
        i += x <= y
        j += y <= x
    return c


@njit(cache=True, inline="always")
def _table_count(table, b, nb):
    # table[id] = count in a; the o-th copy of an id in sorted b is shared when o < table[id]
    c = 0
    o = 0
    prev = -1
    for t in range(nb):
        x = b[t]
        o = o + 1 if x == prev else 0
        prev = x
        c += o < table[x]
    return c


@njit(cache=True, inline="always")
def _row(ids_a, len_a, ids_b, len_b, out, p, q0, table, mirror):
    """``out[p, q]`` for ``q >= q0`` (and ``out[q, p]`` too when ``mirror``)."""
    a = ids_a[p]
    na = len_a[p]
    use_table = table.shape[0] > 0
    if use_table:
        for t in range(na):
            table[a[t]] += 1
    for q in range(q0, ids_b.shape[0]):
        if use_table:
            c = _table_count(table, ids_b[q], len_b[q])
        else:
            c = _merge_count(a, na, ids_b[q], len_b[q])
        out[p, q] = c
        if mirror:
            out[q, p] = c
    if use_table:
        for t in range(na):
            table[a[t]] = 0


def _shared(ids_a, len_a, ids_b, len_b, out, table_size, n_chunks, symmetric):
    # symmetric: task t is rows t and N-1-t of the triangle q >= p, so tasks carry equal work
    n = ids_a.shape[0]
    n_tasks = (n + 1) // 2 if symmetric else n
    for chunk in prange(n_chunks):
        table = np.zeros(table_size, np.int32)
        for t in range(chunk * n_tasks // n_chunks, (chunk + 1) * n_tasks // n_chunks):
            if symmetric:
                _row(ids_a, len_a, ids_a, len_a, out, t, t, table, True)
                if n - 1 - t != t:
                    _row(ids_a, len_a, ids_a, len_a, out, n - 1 - t, n - 1 - t, table, True)
            else:
                _row(ids_a, len_a, ids_b, len_b, out, t, 0, table, False)


# each with a one-thread twin for small or first calls (:mod:`torchmsa.cpu.twins`)
_kmer_ids_parallel = njit(cache=True, parallel=True)(_kmer_ids)
_kmer_ids_serial = njit(cache=True, nogil=True)(twin(_kmer_ids))
_shared_parallel = njit(cache=True, parallel=True)(_shared)
_shared_serial = njit(cache=True, nogil=True)(twin(_shared))


@njit(cache=True, parallel=True)
def _pairs(ids_a, len_a, ids_b, len_b, p, q, out, starts, table_size, n_chunks):
    # pairs grouped in runs of equal p (starts[r] .. starts[r + 1]): one table per run
    n_runs = starts.shape[0] - 1
    for chunk in prange(n_chunks):
        table = np.zeros(table_size, np.int32)
        for r in range(chunk * n_runs // n_chunks, (chunk + 1) * n_runs // n_chunks):
            s0, s1 = starts[r], starts[r + 1]
            a = ids_a[p[s0]]
            na = len_a[p[s0]]
            if table_size > 0:
                for t in range(na):
                    table[a[t]] += 1
            for t in range(s0, s1):
                if table_size > 0:
                    out[t] = _table_count(table, ids_b[q[t]], len_b[q[t]])
                else:
                    out[t] = _merge_count(a, na, ids_b[q[t]], len_b[q[t]])
            if table_size > 0:
                for t in range(na):
                    table[a[t]] = 0


def _np(t) -> np.ndarray:
    if isinstance(t, torch.Tensor):
        t = t.detach().cpu()
    return np.ascontiguousarray(t)


def _lists(ids, lens, which: str) -> tuple[np.ndarray, np.ndarray]:
    ids, lens = _np(ids).astype(np.int32, copy=False), _np(lens).astype(np.int32, copy=False)
    if ids.ndim != 2 or lens.shape != (ids.shape[0],):
        raise ArgumentError(
            f"`ids_{which}` must be [N, W] with `len_{which}` [N]; got {ids.shape} and {lens.shape}"
        )
    if lens.size and (lens.min() < 0 or lens.max() > ids.shape[1]):
        raise ArgumentError(f"`len_{which}` must lie in 0..{ids.shape[1]} (the width of the lists)")
    return ids, lens


def _max_id(ids: np.ndarray, lens: np.ndarray) -> int:
    # rows are sorted, so a row's largest id is its last one
    last = ids[np.arange(ids.shape[0]), np.maximum(lens, 1) - 1][lens > 0]
    return int(last.max()) if last.size else -1


def kmer_ids(codes, lengths, reduced, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Sorted k-mer id lists of many sequences.

    Arguments:
        codes: ``uint8 [N, L]`` residue codes (positions past a sequence's length are ignored).
        lengths: ``int32 [N]`` sequence lengths.
        reduced: ``uint8 [A + 1]`` group of each code (the gap code included); 255 = not
            counted.
        k: k-mer length (>= 1); ``G ** k`` must stay below 2**31 - 1.

    Returns:
        ``(ids int32 [N, max(1, L - k + 1)], n int32 [N])``: row s holds sequence s's ``n[s]``
        k-mer ids in ascending order, then :data:`PAD`.
    """
    codes, lengths, reduced = _np(codes), _np(lengths).astype(np.int32), _np(reduced)
    if reduced.dtype != np.uint8 or reduced.ndim != 1:
        raise ArgumentError(
            f"`reduced` must be a 1-D uint8 map; got {reduced.dtype} {reduced.shape}"
        )
    check_codes(codes, lengths)
    groups = reduced[reduced != NOT_COUNTED]
    base = int(groups.max()) + 1 if groups.size else 1
    if k < 1 or base**k >= PAD:
        raise ArgumentError(
            f"Invalid value for `k` argument: {k!r}; use 1 <= k with {base} ** k < 2**31 - 1"
        )
    if codes.size and int(codes.max()) >= reduced.shape[0]:
        raise ArgumentError(
            f"a residue code ({int(codes.max())}) lies outside the reduced map of "
            f"{reduced.shape[0]} entries; the map needs one entry per code and the gap code"
        )
    ids = np.full((codes.shape[0], max(1, codes.shape[1] - k + 1)), PAD, np.int32)
    n_ids = np.zeros(codes.shape[0], np.int32)
    run = pick(_kmer_ids_parallel, _kmer_ids_serial, codes.size)
    run(codes, lengths, reduced, int(k), base, ids, n_ids)
    return torch.from_numpy(ids), torch.from_numpy(n_ids)


def shared_counts(
    ids_a, len_a, ids_b=None, len_b=None, *, table_limit: int = TABLE_LIMIT
) -> torch.Tensor:
    """Shared k-mer counts of every pair ``(a[p], b[q])``.

    Arguments:
        ids_a, len_a: id lists ``int32 [Na, Wa]``, each ``ids_a[p, :len_a[p]]`` ascending and
            non-negative, and their lengths ``int32 [Na]``, as :func:`kmer_ids` returns them.
        ids_b, len_b: the same for the second set; ``None`` for all pairs within the first set
            (computed once per unordered pair).
        table_limit: id ranges below this count through a dense table, larger ones by merging
            the lists (same counts; tests force the merge walk with 0).

    Returns:
        ``int32 [Na, Nb]``: ``out[p, q] = sum over ids of min(count in a[p], count in b[q])``.
    """
    ids_a, len_a = _lists(ids_a, len_a, "a")
    symmetric = ids_b is None
    if symmetric:
        ids_b, len_b = ids_a, len_a
    else:
        ids_b, len_b = _lists(ids_b, len_b, "b")
    out = np.zeros((ids_a.shape[0], ids_b.shape[0]), np.int32)
    top = max(_max_id(ids_a, len_a), _max_id(ids_b, len_b))
    table_size = top + 1 if top < table_limit else 0
    n_chunks = min(max(1, ids_a.shape[0]), 8 * numba.get_num_threads())
    run = pick(_shared_parallel, _shared_serial, ids_a.size * ids_b.shape[0])
    run(ids_a, len_a, ids_b, len_b, out, table_size, n_chunks, symmetric)
    return torch.from_numpy(out)


def pair_counts(
    ids_a, len_a, ids_b, len_b, p, q, *, table_limit: int = TABLE_LIMIT
) -> torch.Tensor:
    """Shared k-mer counts of chosen pairs ``(a[p[t]], b[q[t]])``.

    Consecutive pairs with the same ``p`` share one count table of ``a[p]`` (the merge walk
    for large id ranges), so pairs grouped by ``p`` are cheapest.

    Arguments:
        ids_a, len_a: sorted id lists ``int32 [Na, Wa]`` and lengths ``int32 [Na]``.
        ids_b, len_b: the same for the second set (may be the first set again).
        p, q: ``int [P]`` row indices into a and b.
        table_limit: as :func:`shared_counts`.

    Returns:
        ``int32 [P]``: ``out[t] = sum over ids of min(count in a[p[t]], count in b[q[t]])``.
    """
    ids_a, len_a = _lists(ids_a, len_a, "a")
    ids_b, len_b = _lists(ids_b, len_b, "b")
    p, q = _np(p).astype(np.int64, copy=False), _np(q).astype(np.int64, copy=False)
    if p.shape != q.shape or p.ndim != 1:
        raise ArgumentError(f"`p` and `q` must be 1-D of one length; got {p.shape} and {q.shape}")
    for idx, n, which in ((p, ids_a.shape[0], "p"), (q, ids_b.shape[0], "q")):
        if idx.size and (idx.min() < 0 or idx.max() >= n):
            raise ArgumentError(
                f"`{which}` must index rows 0..{n - 1}; got {idx.min()}..{idx.max()}"
            )
    out = np.zeros(p.shape[0], np.int32)
    if p.size == 0:
        return torch.from_numpy(out)
    starts = np.concatenate([[0], np.flatnonzero(p[1:] != p[:-1]) + 1, [p.size]])
    rows_a, rows_b = np.unique(p), np.unique(q)
    top = max(_max_id(ids_a[rows_a], len_a[rows_a]), _max_id(ids_b[rows_b], len_b[rows_b]))
    table_size = top + 1 if top < table_limit else 0
    n_chunks = min(starts.size - 1, 8 * numba.get_num_threads())
    _pairs(ids_a, len_a, ids_b, len_b, p, q, out, starts, table_size, n_chunks)
    return torch.from_numpy(out)


@njit(cache=True, nogil=True)
def pair_distances_flat(counts, sa, sb):
    """``float64 [P]``: :func:`torchmsa.parttree.counts.pair_distances` of equal-length 1-D
    arrays in one pass, where numpy makes five (all of PartTree's calls of it took 0.52 s at
    10^5 sequences on two cores, a one-off cProfile); the same float64 operations, so the
    same values."""
    out = np.empty(counts.shape[0], np.float64)
    for p in range(counts.shape[0]):
        smaller = min(sa[p], sb[p])
        out[p] = 1.0 - counts[p] / max(smaller, 1) if smaller > 0 else 1.0
    return out
