"""One-thread twins of numba's parallel functions, for calls too small for threads to pay.

A ``parallel=True`` function compiles for much longer than the same function without it: numba
outlines each ``prange`` loop into a function of its own, which links and optimises every callee
again, and runs its parfor passes over the whole body (``merge_nodes`` 12 s against 4.5 s of
its own, ``evaluate_edges`` 11 s against under 3 s, on two shared cores). On a small family the
threads save milliseconds, yet the first ``align`` of one paid half a minute of that compiling
(issue #36).

So each such entry point has a twin compiled without ``parallel``, from the same code where it
can (``prange`` is ``range`` outside a parallel function): the same loop in the same order, so
the same integers. Its Python caller takes the twin below :data:`SERIAL_CELLS` dynamic
programming cells, or on one thread, and the parallel function above; each compiles the first
time it is taken. The twin of the pairwise scores (``dp._pair_score_rows``) also leaves out
the striped kernel, which pays only on long pairs and compiles for 15 s: it is taken for few
cells only, on one thread too. ``torchmsa warmup`` fills both (its ``parallel`` task sets
:data:`SERIAL_CELLS` to -1).
"""

from __future__ import annotations

import types

import numba

__all__ = ["SERIAL_CELLS", "serial", "small", "twin"]

# below this many DP cells in one call the twin runs: a few milliseconds on one core
SERIAL_CELLS = 1 << 21


def small(cells: int) -> bool:
    """Whether a call of about ``cells`` DP cells is below :data:`SERIAL_CELLS` (never when it
    is negative)."""
    return 0 <= SERIAL_CELLS and cells < SERIAL_CELLS


def serial(cells: int) -> bool:
    """Whether a call of about ``cells`` DP cells takes the one-thread twin: a small one, or
    any on one thread (never when :data:`SERIAL_CELLS` is negative)."""
    return small(cells) or (0 <= SERIAL_CELLS and numba.get_num_threads() == 1)


def twin(func, suffix: str = "_serial", **names):
    """A copy of the plain Python function ``func`` named ``func.__name__ + suffix``, so that
    numba compiles and caches it apart from ``func`` (its cache files go by the qualified
    name); ``names`` replace globals it reads (a threaded callee by a one-thread one)."""
    env = dict(func.__globals__, **names) if names else func.__globals__
    copy = types.FunctionType(
        func.__code__, env, func.__name__ + suffix, func.__defaults__, func.__closure__
    )
    copy.__qualname__ = func.__qualname__ + suffix
    copy.__module__ = func.__module__
    copy.__doc__ = func.__doc__
    return copy
