"""A gap cost facing a column (twin of :func:`torchmsa.ops.rules.facing.facing`); the DP's row
fill (:mod:`torchmsa.cpu.dp_rows`) and the path rules inline it."""

from __future__ import annotations

from numba import njit

from torchmsa.constants import RES_SHIFT

__all__ = ["facing"]


@njit(cache=True, nogil=True, inline="always")
def facing(cost, res):
    """A gap cost scaled by the residue fraction ``res / RES_ONE`` of the column it faces."""
    return (cost * res) >> RES_SHIFT
