"""Where a path takes each column of the two profiles it aligns (twin of
:func:`torchmsa.ops.rules.path_columns.path_columns`)."""

from __future__ import annotations

from numba import njit

from torchmsa.constants import OP_LEFT, OP_UP


@njit(cache=True, nogil=True)
def path_columns(ops, width, map_a, map_b):
    """Fills ``map_a[i]`` (``map_b[j]``) with the step of ``ops[:width]`` that takes column i
    of the first (j of the second) profile: its column in the merged profile."""
    i = j = 0
    for t in range(width):
        if ops[t] != OP_LEFT:
            map_a[i] = t
            i += 1
        if ops[t] != OP_UP:
            map_b[j] = t
            j += 1
