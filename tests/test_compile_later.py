"""After a command, the parallel functions its twins stood in for are compiled for the next
one (``torchmsa/compile_later.py``, decision 0067)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import twin_pair

from torchmsa import compile_later
from torchmsa.cpu import twins

HERE = Path(__file__).parent


@pytest.fixture
def cold(monkeypatch):
    """The pair's parallel function counts as not compiled, threads as many; ``cells`` run on
    the twin in its place, as a command's host work would."""
    monkeypatch.setattr(twins, "_cold_cells", {})
    monkeypatch.setattr(compile_later, "_handed", set())
    real = twins.compiled
    monkeypatch.setattr(
        twins, "compiled", lambda d: False if d is twin_pair.row_sums_parallel else real(d)
    )
    monkeypatch.setattr(twins.numba, "get_num_threads", lambda: 4)

    def run(cells: int):
        fn = twins.pick(twin_pair.row_sums_parallel, twin_pair.row_sums_one, cells)
        x = np.arange(12, dtype=np.int64).reshape(3, 4)
        out = np.zeros(3, np.int64)
        fn(x, out)
        return fn, out

    return run


def test_jobs_name_the_parallel_function_once_its_twin_ran_enough_cells(cold):
    fn, out = cold(1 << 22)
    assert fn is twin_pair.row_sums_one and out.tolist() == [6, 22, 38]
    assert compile_later.jobs(1 << 23) == []  # fewer cells than asked
    cold(1 << 22)
    (job,) = compile_later.jobs(1 << 23)
    assert (job["module"], job["name"]) == ("twin_pair", "row_sums_parallel")


def test_the_process_compiles_the_jobs_for_the_next_one(cold, monkeypatch):
    """The detached process (waited for here) compiles the parallel function into numba's
    cache for the twin's argument types; a later process finds it compiled."""
    cold(1 << 22)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(HERE), *sys.path]))
    monkeypatch.setenv("TORCHMSA_COMPILE_AHEAD", "1")
    done = compile_later.compile_later(1 << 20, wait=True)
    assert done.returncode == 0 and done.stdout.strip() == "compiled 1", done.stderr
    assert compile_later.compile_later(1 << 20, wait=True) is None  # handed off once
    check = (
        "import twin_pair, torchmsa.cpu.twins as t; print(t.compiled(twin_pair.row_sums_parallel))"
    )
    got = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True)
    assert got.stdout.strip() == "True", got.stderr


def test_nothing_starts_when_compile_ahead_is_off(cold, monkeypatch):
    cold(1 << 22)
    monkeypatch.setenv("TORCHMSA_COMPILE_AHEAD", "0")
    assert compile_later.compile_later(1 << 20, wait=True) is None


def test_a_failure_to_start_it_does_not_fail_the_command(cold, monkeypatch):
    cold(1 << 22)
    monkeypatch.setenv("TORCHMSA_COMPILE_AHEAD", "1")
    monkeypatch.setattr(compile_later.sys, "executable", "/nonexistent/python")
    assert compile_later.compile_later(1 << 20) is None


def test_benchmarks_wait_for_a_compile_left_for_the_next_command():
    """``benchmarks.harness.wait_compiling_later``: the next timed process starts once no
    ``torchmsa.compile_later`` process runs (here a stand-in of that name)."""
    from benchmarks.harness import compiling_later, wait_compiling_later

    code = "import time; time.sleep(1.5)"
    child = subprocess.Popen([sys.executable, "-c", code, "torchmsa.compile_later"])
    try:
        # the child shows its own command line once it has started (before: the parent's)
        deadline = time.monotonic() + 10
        while not compiling_later() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert compiling_later() >= 1
        waited = wait_compiling_later(30)
        assert child.poll() is not None and 0 < waited < 30
        assert compiling_later() == 0
    finally:
        child.kill()
        child.wait()
