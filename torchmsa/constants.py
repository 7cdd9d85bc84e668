"""Facts shared by the numba code, the Triton kernels and the torch code: DP modes and codes,
fixed-point scales, k-mer list padding. One definition each; this module imports nothing.

The Triton kernels wrap these values in ``tl.constexpr`` globals of the same names.
"""

# ---- dynamic programming (cpu/dp.py, cpu/dp_rows.py, triton_kernels/dp_*.py) ----------------

# alignment modes: global (Needleman-Wunsch), local (Smith-Waterman), semiglobal (free end gaps)
GLOBAL = 0
LOCAL = 1
SEMIGLOBAL = 2
MODES = {"global": GLOBAL, "local": LOCAL, "semiglobal": SEMIGLOBAL}

# minus infinity of the int32 recurrences: far below any score, far above int32's minimum, so
# that subtracting gap costs from it never wraps
NEG = -(1 << 29)
# larger than any row or column index (first-maximum searches)
BIG = 1 << 30

# direction bits of a cell: H's source in bits 0-1, then "E / F extends" flags
H_DIAG = 0
H_UP = 1
H_LEFT = 2
H_STOP = 3
E_EXT = 4
F_EXT = 8

# traceback ops: a column of a with one of b, a column of a with a gap, a gap with a column of b
OP_MATCH = 0
OP_UP = 1
OP_LEFT = 2

# packed best-cell keys ``h * 2**KEY_BITS - j``: the larger h wins, then the smaller j
KEY_BITS = 14

# gap costs of profiles are scaled by the residue fraction of the column they face, in units
# of 1 / RES_ONE: ``(cost * res) >> RES_SHIFT``
RES_SHIFT = 8
RES_ONE = 1 << RES_SHIFT
# the occupancy floor's default: a column with under 2^-OCC_SHIFT of its profile's weight in
# residues counts as if it had that much (ScoringConfig.occ_shift; ops/colscores.py)
OCC_SHIFT = 5
# the vectorised row fill (cpu/dp_rows.py) scans a row only while m * ext stays below this
SCAN_LIMIT = 1 << 28

# ---- k-mers (cpu/kmer.py, triton_kernels/kmer.py) --------------------------------------------

# pads sorted k-mer id lists: larger than every id (int32's maximum)
PAD = (1 << 31) - 1
# the reduced-alphabet group of residues that are not counted (and of the gap code)
NOT_COUNTED = 255

# ---- guide trees (cpu/slink.py, ops/lcs.py, parttree/counts.py) -----------------------------

# The LCS distance's tie-break (decision 0065): ``indel / (indel + LCS)`` plus ``LCS_TIE`` times
# FAMSA's ``sqrt(indel) / LCS``. The second term is at most 6.4e-9 for two sequences whose
# lengths add up to 4,000 residues, below half the smallest gap between two different values
# of the first (``1 / union^2``, at least 6.25e-8 there), so up to that length it only orders
# pairs the first measure ties.
LCS_TIE = 1e-10
