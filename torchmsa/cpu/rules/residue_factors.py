"""Residue factors of one profile (twin of
:func:`torchmsa.ops.rules.residue_factors.residue_factors`)."""

from __future__ import annotations

import numpy as np
from numba import njit

from torchmsa.constants import RES_ONE


@njit(cache=True, nogil=True)
def residue_factors(prof, weight, occ_shift):
    """``int32 [n + 1]``: index ``k + 1`` holds column k's factor ``floor(RES_ONE * residue
    weight / weight)``, at least ``RES_ONE >> occ_shift``; index 0 is unused (0)."""
    n = prof.shape[0]
    res = np.zeros(n + 1, np.int32)
    for k in range(n):
        res[k + 1] = max(prof[k].sum() * RES_ONE // weight, RES_ONE >> occ_shift)
    return res
