"""Two groups of an alignment merged along a path (twin of
:func:`torchmsa.ops.rules.apply_path.apply_path`)."""

from __future__ import annotations

import numpy as np
from numba import njit

from torchmsa.constants import OP_LEFT, OP_UP


@njit(cache=True, nogil=True)
def apply_path(codes, side, ops, gap):
    """``uint8 [N, len(ops)]``: ``codes`` with the rows of ``side`` (group A) and the others
    (group B), each without its all-gap columns, merged along the path ``ops``."""
    n, width = codes.shape
    has_a = np.zeros(width, np.bool_)
    has_b = np.zeros(width, np.bool_)
    for r in range(n):
        has = has_a if side[r] else has_b
        for c in range(width):
            if codes[r, c] != gap:
                has[c] = True
    cols_a, cols_b = np.nonzero(has_a)[0], np.nonzero(has_b)[0]
    # the source column of every path step, per group (-1: a gap column for that group)
    src_a = np.full(ops.size, -1, np.int64)
    src_b = np.full(ops.size, -1, np.int64)
    ia = ib = 0
    for k in range(ops.size):
        if ops[k] != OP_LEFT:
            src_a[k] = cols_a[ia]
            ia += 1
        if ops[k] != OP_UP:
            src_b[k] = cols_b[ib]
            ib += 1
    out = np.full((n, ops.size), gap, np.uint8)
    for r in range(n):
        src = src_a if side[r] else src_b
        for k in range(ops.size):
            if src[k] >= 0:
                out[r, k] = codes[r, src[k]]
    return out
