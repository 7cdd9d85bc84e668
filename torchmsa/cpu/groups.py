"""Profiles of row subsets of an alignment (numba), for refinement's partitions."""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def group_profile(codes, rows, weights, gap, n_alpha):
    """Profile of the sub-alignment of ``rows`` with its all-gap columns removed.

    Arguments:
        codes: ``uint8 [N, C]`` alignment.
        rows: ``int64 [k]`` row indices of the group.
        weights: ``int64 [N]`` sequence weights.
        gap: the gap code.
        n_alpha: number of residue codes.

    Returns:
        ``(keep bool [C], prof float64 [C', A], both int64 [C' + 1], weight)``: the kept
        columns, weighted residue counts, the weight of rows with residues on both sides of each
        boundary of the sub-alignment (the outside counting as residue), the group's weight.
    """
    n_cols = codes.shape[1]
    keep = np.zeros(n_cols, np.bool_)
    for r in rows:
        for c in range(n_cols):
            if codes[r, c] != gap:
                keep[c] = True
    kidx = np.empty(n_cols, np.int64)
    k = 0
    for c in range(n_cols):
        kidx[c] = k
        if keep[c]:
            k += 1
    prof = np.zeros((k, n_alpha), np.float64)
    both = np.zeros(k + 1, np.int64)
    total = 0
    for r in rows:
        w = weights[r]
        total += w
        prev = -1
        for c in range(n_cols):
            x = codes[r, c]
            if x == gap:
                continue
            col = kidx[c]
            prof[col, x] += w
            if prev < 0:
                if col == 0:
                    both[0] += w
            elif col == prev + 1:
                both[col] += w
            prev = col
        if prev == k - 1 and prev >= 0:
            both[k] += w
    return keep, prof, both, total
