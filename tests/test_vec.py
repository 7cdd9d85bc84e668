"""The lane-vector intrinsics (``torchmsa/cpu/vec.py``) against numpy, on uint64 lanes."""

from __future__ import annotations

import numpy as np
from numba import njit, types

from torchmsa.cpu import vec

P8 = vec.lanes(types.uint64, 8)


@njit
def _ops(x, y, out):
    p = P8()
    a, b = vec.vload(x, 0, p), vec.vload(y, 0, p)
    vec.vstore(out, 0, vec.vadd(a, b))
    vec.vstore(out, 8, vec.vsub(a, b))
    vec.vstore(out, 16, vec.vand(a, b))
    vec.vstore(out, 24, vec.vor(a, b))
    vec.vstore(out, 32, vec.vxor(a, b))
    vec.vstore(out, 40, vec.vandnot(a, b))
    vec.vstore(out, 48, vec.vshr(a, 63))
    vec.vstore(out, 56, vec.vpopcount(a))
    vec.vstore(out, 64, vec.vsplat(np.uint64(7), p))
    return vec.lane_count(p)


def test_uint64_lane_ops_equal_numpy():
    rng = np.random.default_rng(0)
    top = np.iinfo(np.uint64).max
    x = rng.integers(0, top, 8, dtype=np.uint64, endpoint=True)
    y = rng.integers(0, top, 8, dtype=np.uint64, endpoint=True)
    x[:3] = [top, 0, 1 << 63]
    y[:3] = [1, 0, 1 << 63]  # wrapping sums
    out = np.zeros(72, np.uint64)
    assert _ops(x, y, out) == 8
    with np.errstate(over="ignore"):
        want = [x + y, x - y, x & y, x | y, x ^ y, x & ~y, x >> np.uint64(63)]
    want += [[bin(int(v)).count("1") for v in x], [7] * 8]
    assert np.array_equal(out, np.concatenate([np.asarray(w, np.uint64) for w in want]))
