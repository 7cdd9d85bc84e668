"""Where a job runs: a small job on a GPU runs wholly on the host, where its work costs less
than a GPU's launches and copies would; the same alignment either way."""

from __future__ import annotations

import contextlib

from torchmsa.config import ExecutionPolicy
from torchmsa.stages import stage

__all__ = ["host_job", "thread_cap", "entry_section"]


def host_job(n: int, longest: int, mode: str, *, policy: ExecutionPolicy | None = None) -> bool:
    """Whether a job of ``n`` sequences, the longest ``longest`` residues, is small enough to
    run on the host rather than a GPU: at most ``policy.host_job_max_n`` sequences and
    ``N L^2`` at most ``policy.host_job_cells``; in accurate mode, whose work is its all-pairs
    local alignments, pairs times ``L^2`` at most ``policy.host_accurate_cells``."""
    policy = ExecutionPolicy() if policy is None else policy
    if mode == "accurate":
        pairs = n * (n - 1) // 2
        return (
            n <= policy.host_job_max_n and pairs * longest * longest <= policy.host_accurate_cells
        )
    return n <= policy.host_job_max_n and n * longest * longest <= policy.host_job_cells


@contextlib.contextmanager
def thread_cap(threads: int | None):
    """numba's and torch's CPU threads capped at ``threads`` for the block (``None``: as
    they are); both are restored after it."""
    if threads is None:
        yield
        return
    import numba
    import torch

    before = numba.get_num_threads(), torch.get_num_threads()
    numba.set_num_threads(max(1, min(threads, numba.config.NUMBA_NUM_THREADS)))
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        numba.set_num_threads(before[0])
        torch.set_num_threads(before[1])


@contextlib.contextmanager
def entry_section(name: str, policy: ExecutionPolicy):
    """What a public entry point (``align``, ``build_tree``, ``add``, ``merge``) runs inside:
    torchmsa's process-wide numba lock (:func:`torchmsa.runtime.parallel_section`), a profiler
    range ``torchmsa.<name>``, and ``policy``'s thread cap (:func:`thread_cap`)."""

    from torchmsa import runtime

    with (
        runtime.parallel_section(),
        stage(name),
        thread_cap(policy.threads),
    ):
        yield
