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

A first ``align`` without ``torchmsa warmup`` would still compile every parallel function it
meets above that threshold (a 50-sequence family: 65 s of a 66 s first call on an H100
machine's host, most of it ``merge_nodes`` and ``evaluate_edges``). So :func:`pick` also takes
the twin while the parallel function is not compiled yet, neither in this process nor in
numba's on-disk cache, until this process has run :data:`COLD_CELLS` cells on the twin in its
place: below that the threads save less time than compiling them costs (decision 0049).
"""

from __future__ import annotations

import types

import numba

__all__ = [
    "SERIAL_CELLS",
    "COLD_CELLS",
    "cold_twins",
    "compiled",
    "pick",
    "serial",
    "small",
    "twin",
]

# below this many DP cells in one call the twin runs: a few milliseconds on one core
SERIAL_CELLS = 1 << 21
# cells a process runs on a twin in place of a parallel function not compiled yet: about 2 s
# on one core, against 5-25 s of compiling the parallel function
COLD_CELLS = 1 << 30
_cold_cells: dict[tuple, int] = {}  # (parallel function, its twin) -> cells run on the twin
_on_disk: dict[int, bool] = {}  # id(parallel function) -> its overloads were in the disk cache


def small(cells: int) -> bool:
    """Whether a call of about ``cells`` DP cells is below :data:`SERIAL_CELLS` (never when it
    is negative)."""
    return 0 <= SERIAL_CELLS and cells < SERIAL_CELLS


def serial(cells: int) -> bool:
    """Whether a call of about ``cells`` DP cells takes the one-thread twin: a small one, or
    any on one thread (never when :data:`SERIAL_CELLS` is negative)."""
    return small(cells) or (0 <= SERIAL_CELLS and numba.get_num_threads() == 1)


def pick(parallel, one, cells: int, *, one_thread: bool = True):
    """The function a call of about ``cells`` DP cells takes: the one-thread twin ``one`` where
    :func:`serial` says so (:func:`small` without ``one_thread``: a twin that leaves out what
    long calls want), or while ``parallel`` is not :func:`compiled` and this process has run
    fewer than :data:`COLD_CELLS` cells on ``one`` in its place; else ``parallel``."""
    if serial(cells) if one_thread else small(cells):
        return one
    if SERIAL_CELLS < 0 or compiled(parallel):
        return parallel
    spent = _cold_cells.get((parallel, one), 0)
    if spent + cells > COLD_CELLS:
        return parallel
    _cold_cells[(parallel, one)] = spent + cells
    return one


def cold_twins(min_cells: int) -> list[tuple]:
    """``(parallel, twin)`` for each parallel function whose twin has run at least
    ``min_cells`` cells in this process in its place because it was not compiled (what
    :mod:`torchmsa.compile_later` compiles for the next process)."""
    return [pair for pair, cells in _cold_cells.items() if cells >= min_cells]


def compiled(dispatcher) -> bool:
    """Whether the numba function ``dispatcher`` has a compiled overload in this process or,
    for this machine, in numba's on-disk cache (looked up once a process). Where numba's
    cache does not say (another version of its internals, no cache), it counts as compiled:
    the call compiles what it needs, as before."""
    if dispatcher.overloads:
        return True
    key = id(dispatcher)
    if key not in _on_disk:
        try:
            index = dispatcher._cache._cache_file._load_index()
            magic = dispatcher.targetctx.codegen().magic_tuple()
            _on_disk[key] = any(k[1] == magic for k in index)
        except Exception:  # numba internals this check does not know
            _on_disk[key] = True
    return _on_disk[key]


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
