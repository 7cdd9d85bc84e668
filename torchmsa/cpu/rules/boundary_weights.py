"""A child's boundary weights in its parent (twin of
:func:`torchmsa.ops.rules.boundary_weights.merged_boundaries`)."""

from __future__ import annotations

from numba import njit


@njit(cache=True, nogil=True)
def merged_boundaries(both, new_col, n, width, out, base):
    """Adds a child's boundary weights ``both [n + 1]`` (its column c going to parent column
    ``new_col[c]``) to the parent's ``out[base : base + width + 1]``: a boundary keeps its weight
    where the columns on both sides of it (or the profile's end) stay adjacent in the parent."""
    if n == 0:
        return
    for c in range(n + 1):
        here = new_col[c] if c < n else new_col[n - 1] + 1
        before = new_col[c - 1] + 1 if c > 0 else 0
        if here == before and (c < n or here == width):
            out[base + here] += both[c]
