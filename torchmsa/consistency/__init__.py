"""Accurate mode's library: all-pairs alignments and the consistency scores built on them.

Stage 1 of L-INS-i (seed 000): every pair of sequences is aligned locally (affine Smith-Waterman,
batched on the device), whose scores give distances for the guide tree and whose spans mark
terminal extensions (:mod:`.trims`), and end-gap-free globally, whose aligned residues form
library entries ``(x, i, y, j, w)`` with an integer weight from the pair's identity and the
substitution scores around each entry (:mod:`.library`).

When two groups A and B are aligned, the consistency tile is

    C[ca, cb] = sum over entries with x in A, y in B of  w * w_x * w_y

for the columns ``ca`` holding residue i of x and ``cb`` holding residue j of y, and the DP
scores ``S + floor(weight * C / (W_A W_B))``: integers, so exact and order-independent
(:mod:`torchmsa.ops.rules.consistency_tile`; the progressive levels' tiles: :mod:`.tiles`).
"""

from torchmsa.consistency.library import (
    Library,
    LocalScoring,
    entry_values,
    library_bytes,
    local_library,
    window_scores,
)
from torchmsa.consistency.tiles import Consistency
from torchmsa.consistency.trims import terminal_trims

__all__ = [
    "Library",
    "LocalScoring",
    "Consistency",
    "entry_values",
    "library_bytes",
    "local_library",
    "terminal_trims",
    "window_scores",
]
