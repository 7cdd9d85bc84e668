"""A tiny parallel numba function and its one-thread twin, for ``test_compile_later.py``."""

from __future__ import annotations

from numba import njit, prange

from torchmsa.cpu.twins import twin


def _row_sums(x, out):
    for i in prange(x.shape[0]):
        s = 0
        for j in range(x.shape[1]):
            s += x[i, j]
        out[i] = s


row_sums_parallel = njit(cache=True, parallel=True)(_row_sums)
row_sums_one = njit(cache=True)(twin(_row_sums))
