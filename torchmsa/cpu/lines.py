"""Gapped rows as text lines: each residue code replaced by its letter as given (the input's
case), ``-`` for gaps, a line end after each row; what FASTA output and ``Alignment.rows``
are made of. One pass over the codes: numpy's boolean scatter took seconds at 10^6 rows."""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["gapped_lines"]

GAP, LINE_END = ord("-"), ord("\n")


@njit(cache=True, nogil=True)
def _fill(codes, gap, letters, starts, out) -> int:
    """Fill ``out [N, C + 1]``; returns the first row whose residue cells do not match its
    letters' count, or -1."""
    n, width = codes.shape
    for i in range(n):
        p = starts[i]
        for j in range(width):
            if codes[i, j] != gap:
                if p < starts[i + 1]:
                    out[i, j] = letters[p]
                p += 1
            else:
                out[i, j] = GAP
        out[i, width] = LINE_END
        if p != starts[i + 1]:
            return i
    return -1


def gapped_lines(codes: np.ndarray, gap: int, letters: bytes, lengths: np.ndarray) -> np.ndarray:
    """``uint8 [N, C + 1]`` lines of the alignment ``codes`` (``uint8 [N, C]``, ``gap`` for
    gaps): row ``i``'s residue cells take ``lengths[i]`` letters of ``letters`` in order (the
    rows' letters one after another).

    Raises:
        ValueError: a row holds a different number of residue cells than its letters.
    """
    codes = np.ascontiguousarray(codes, dtype=np.uint8)
    starts = np.zeros(codes.shape[0] + 1, dtype=np.int64)
    np.cumsum(lengths, out=starts[1:])
    if starts[-1] != len(letters):
        raise ValueError(f"{len(letters)} letters for rows of {int(starts[-1])} residues")
    out = np.empty((codes.shape[0], codes.shape[1] + 1), dtype=np.uint8)
    bad = _fill(codes, np.uint8(gap), np.frombuffer(letters, dtype=np.uint8), starts, out)
    if bad >= 0:
        raise ValueError(f"row {bad} of the codes does not hold its {int(lengths[bad])} residues")
    return out
