"""Boundary gap costs of one profile (twin of :func:`torchmsa.ops.rules.gap_costs.gap_costs`)."""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def gap_costs(both, weight, gap_open, t_num, t_den, occ_shift):
    """``(opening, closing) int32 [n + 1]`` halves of the gap cost of each boundary of a profile
    of weight ``weight`` whose boundary weights are ``both int64 [n + 1]``; the first and last
    boundary (terminal gaps) cost ``t_num / t_den`` of the inner cost."""
    n = both.size - 1
    opening = np.empty(n + 1, np.int32)
    closing = np.empty(n + 1, np.int32)
    for k in range(n + 1):
        crossing = both[k]
        if crossing > 0:
            crossing = max(crossing, weight >> occ_shift)
        cost = gap_open * crossing // weight
        if k == 0 or k == n:
            cost = cost * t_num // t_den
        closing[k] = cost // 2
        opening[k] = cost - cost // 2
    return opening, closing
