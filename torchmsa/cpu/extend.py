"""The consistency transformation of a library on the CPU (numba): every pair's entries
re-weighed by the paths through every third sequence (:mod:`torchmsa.consistency.extend`).

The library is held as rows: for each ordered pair of sequences ``(a, b)`` and residue ``i`` of
``a``, the residues of ``b`` it is paired with and their weights, sorted by residue
(:func:`library_rows`). Pair ``(x, y)``'s residue ``i`` then gathers

    a * w_xy(i, j)  +  b * sum over z != x, y, k of  w_xz(i, k) * w_zy(k, j)

(integer factors ``a`` and ``b``) into one accumulator per residue ``j`` of ``y``; each sum is
an integer, so the order of the additions does not matter and any number of threads gives the
same library. A pair costs the
entries of its rows times those of the rows they reach: ``N`` times its length for a library
with one partner per residue, ``N^3 L / 2`` in all.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from torchmsa.cpu.twins import pick, twin
from torchmsa.errors import ResourceError

__all__ = ["library_rows", "extend_entries"]


def library_rows(x, i, y, j, w, lengths: np.ndarray):
    """``(row_start, offsets, col, wt)``: the entries ``x < y`` (int64 numpy arrays) as rows of
    both directions. Row ``row_start[a * N + b] + i`` lists residue ``i`` of ``a``'s partners
    in ``b`` at ``col[offsets[r]:offsets[r + 1]]`` (ascending) with weights ``wt``."""
    n = lengths.shape[0]
    lens = lengths.astype(np.int64)
    first = np.zeros(n + 1, np.int64)
    first[1:] = np.cumsum(lens)
    # ordered pair (a, b) holds len(a) rows, after all of a's earlier partners
    a_idx = np.repeat(np.arange(n, dtype=np.int64), n)
    b_idx = np.tile(np.arange(n, dtype=np.int64), n)
    row_start = n * first[a_idx] + b_idx * lens[a_idx]
    a = np.concatenate([x, y])
    b = np.concatenate([y, x])
    r = row_start[a * n + b] + np.concatenate([i, j])
    c = np.concatenate([j, i])
    order = np.lexsort((c, r))
    counts = np.bincount(r, minlength=n * int(first[-1]))
    offsets = np.zeros(counts.shape[0] + 1, np.int64)
    offsets[1:] = np.cumsum(counts)
    return row_start, offsets, c[order], np.concatenate([w, w])[order]


@njit(cache=True, nogil=True, boundscheck=False)
def _gather(x, y, i, n, row_start, offsets, col, wt, a, b, acc, seen, touched):
    """Adds row ``i`` of pair (x, y)'s sums into ``acc`` and returns how many residues of
    ``y`` it touched (listed in ``touched``, unsorted; ``seen[c] == i`` marks them)."""
    nt = 0
    r = row_start[x * n + y] + i
    for e in range(offsets[r], offsets[r + 1]):
        c = col[e]
        if seen[c] != i:
            seen[c] = i
            touched[nt] = c
            nt += 1
        acc[c] += a * wt[e]
    for z in range(n):
        if z == x or z == y:
            continue
        r1 = row_start[x * n + z] + i
        base = row_start[z * n + y]
        for e1 in range(offsets[r1], offsets[r1 + 1]):
            w1 = b * wt[e1]
            r2 = base + col[e1]
            for e2 in range(offsets[r2], offsets[r2 + 1]):
                c = col[e2]
                if seen[c] != i:
                    seen[c] = i
                    touched[nt] = c
                    nt += 1
                acc[c] += w1 * wt[e2]
    return nt


@njit(cache=True, nogil=True, boundscheck=False)
def _pair(p, xs, ys, n, lengths, row_start, offsets, col, wt, a, b, den, out_i, out_j, out_w, at):
    """Pair ``p``'s transformed entries: counted when ``out_i`` is empty, else written from
    ``at``; returns the count."""
    x, y = xs[p], ys[p]
    acc = np.zeros(lengths[y], np.int64)
    seen = np.full(lengths[y], -1, np.int64)
    touched = np.empty(lengths[y], np.int64)
    write = out_i.shape[0] > 0
    k = at
    for i in range(lengths[x]):
        nt = _gather(x, y, i, n, row_start, offsets, col, wt, a, b, acc, seen, touched)
        if nt == 0:
            continue
        hits = np.sort(touched[:nt])
        for t in range(nt):
            c = hits[t]
            v = (2 * acc[c] + den) // (2 * den)  # the mean, rounded half up
            acc[c] = 0
            if v > 0:
                if write:
                    out_i[k] = i
                    out_j[k] = c
                    out_w[k] = v
                k += 1
    return k - at


def _extend(xs, ys, n, lengths, row_start, offsets, col, wt, a, b, den, counts, starts, oi, oj, ow):
    # first pass (no outputs): counts; second: writes from starts[p], the same counts again
    fill = oi.shape[0] > 0
    for p in prange(xs.shape[0]):
        at = starts[p] if fill else 0
        counts[p] = _pair(
            p, xs, ys, n, lengths, row_start, offsets, col, wt, a, b, den, oi, oj, ow, at
        )


_extend_parallel = njit(cache=True, parallel=True)(_extend)
_extend_serial = njit(cache=True, nogil=True)(twin(_extend))


def extend_entries(
    x,
    i,
    y,
    j,
    w,
    lengths: np.ndarray,
    a: int,
    b: int,
    den: int,
    max_entries: int | None = None,
    entry_bytes: int = 1,
):
    """The transformed library of entries ``x < y`` (int64 numpy arrays) of sequences of
    ``lengths``: ``(x, i, y, j, w)``, sorted by pair, residue of x, residue of y, where

        w'_xy(i, j) = round((a * w_xy(i, j) + b * sum_z,k w_xz(i, k) w_zy(k, j)) / den)

    (half up), entries of weight 0 left out. Counted before anything is allocated for them:
    more than ``max_entries`` raise :class:`~torchmsa.errors.ResourceError`, which counts
    ``entry_bytes`` for each."""
    n = lengths.shape[0]
    lens = lengths.astype(np.int64)
    empty = np.zeros(0, np.int64)
    if n < 2 or x.shape[0] == 0:
        return empty, empty, empty, empty, empty
    row_start, offsets, col, wt = library_rows(x, i, y, j, w, lens)
    xs, ys = np.triu_indices(n, 1)
    xs, ys = xs.astype(np.int64), ys.astype(np.int64)
    args = (xs, ys, n, lens, row_start, offsets, col, wt, a, b, den)
    fn = pick(_extend_parallel, _extend_serial, n * int(x.shape[0]))
    counts = np.zeros(xs.shape[0], np.int64)
    fn(*args, counts, empty, empty, empty, empty)
    starts = np.zeros(xs.shape[0] + 1, np.int64)
    starts[1:] = np.cumsum(counts)
    total = int(starts[-1])
    if max_entries is not None and total > max_entries:
        raise ResourceError(
            f"the transformed library of {n} sequences ({total} entries)",
            total * entry_bytes,
            max_entries * entry_bytes,
            "a smaller consistency.extend_share numerator (0: off) or mode='default'",
        )
    oi, oj, ow = (np.empty(total, np.int64) for _ in range(3))
    fn(*args, counts, starts, oi, oj, ow)
    return np.repeat(xs, counts), oi, np.repeat(ys, counts), oj, ow
