"""One step of the tie-rule traceback (``cpu/dp.py``'s direction bits), shared by the
full-matrix traceback, the linear-space one (``cpu/dp_linear.py``) and best-K local alignment's
rectangle (``cpu/strip.py``)."""

from __future__ import annotations

from numba import njit

from torchmsa.constants import E_EXT, F_EXT, H_DIAG, H_STOP, H_UP, OP_LEFT, OP_MATCH, OP_UP

__all__ = ["trace_step", "end_gaps"]


@njit(cache=True, nogil=True, inline="always")
def trace_step(bits, state, ops, k):
    """From a cell with direction ``bits`` in ``state`` (0 H, 1 F: gap in b, 2 E: gap in a):
    ``(stop, state, di, dj, k)``; the op taken is written at ``ops[k]`` (ops come out last to
    first). ``stop``: a local path ends here (nothing written)."""
    if state == 0:
        src = bits & 3
        if src == H_STOP:
            return True, state, 0, 0, k
        if src == H_DIAG:
            ops[k] = OP_MATCH
            return False, 0, 1, 1, k + 1
        state = 1 if src == H_UP else 2
    if state == 1:
        ops[k] = OP_UP
        return False, (1 if bits & F_EXT else 0), 1, 0, k + 1
    ops[k] = OP_LEFT
    return False, (2 if bits & E_EXT else 0), 0, 1, k + 1


@njit(cache=True, nogil=True, inline="always")
def end_gaps(ops, k, a_left, b_left):
    """Write ``a_left`` ops ``OP_UP`` then ``b_left`` ops ``OP_LEFT`` from ``ops[k]``: the
    end gaps of a semiglobal path (before the traceback) and the start gaps of a global or
    semiglobal one (after it); returns the new ``k``."""
    for _ in range(a_left):
        ops[k] = OP_UP
        k += 1
    for _ in range(b_left):
        ops[k] = OP_LEFT
        k += 1
    return k
