"""A consistency tile joins the column scores (twin of
:func:`torchmsa.ops.rules.consistency_tile.add_tile`)."""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def add_tile(S, tile, cweight, denom):
    """``S += floor(tile * cweight / denom)`` on the cells the tile touches (``S int32 [n, m]``,
    ``tile int64 [n, m]``)."""
    n, m = S.shape
    for i in range(n):
        for j in range(m):
            if tile[i, j] != 0:
                S[i, j] += np.int32((tile[i, j] * cweight) // denom)
