"""The first call's compile plan (``torchmsa/compile_plan.py``): the recorded plan names real
functions and types, the scheduler respects what calls what, and compiling a mode's plan
in worker processes leaves nothing for a first align to compile."""

from __future__ import annotations

import base64
import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest
from numba.core.dispatcher import Dispatcher

from torchmsa import compile_plan
from torchmsa.compile_plan import PlanEntry, _closure, _dispatcher, _priorities, load_plan

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "superoxide_dismutase.fasta"


def test_the_plan_names_numba_functions_with_readable_types():
    entries = load_plan()
    assert entries, "no plan: run `python -m torchmsa.compile_plan record`"
    for mode in ("fast", "default", "accurate"):
        assert any(mode in e.modes for e in entries)
    for i, e in enumerate(entries):
        assert isinstance(_dispatcher(e), Dispatcher), (e.module, e.name)
        types = pickle.loads(base64.b64decode(e.types))
        assert isinstance(types, tuple) and str(types) == e.text
        assert all(0 <= c < len(entries) and c != i for c in e.calls)
    # what calls what has no cycle: every entry's callees can be done before it
    done: set[int] = set()
    while len(done) < len(entries):
        ready = {i for i, e in enumerate(entries) if i not in done and set(e.calls) <= done}
        assert ready, "the plan's calls form a cycle"
        done |= ready


def _entry(seconds, calls=(), modes=("default",)):
    return PlanEntry("m", "f", "()", "", tuple(calls), seconds, tuple(modes))


def test_closure_and_priorities_follow_the_chains_of_callers():
    # 0 <- 1 <- 3 (a chain of three), 2 <- 3; 4 alone, in another mode
    entries = [
        _entry(1.0, modes=()),
        _entry(2.0, [0], modes=()),
        _entry(0.5, modes=()),
        _entry(3.0, [1, 2]),
        _entry(9.0, modes=("fast",)),
    ]
    assert _closure(entries, "default") == [0, 1, 2, 3]
    assert _closure(entries, "fast") == [4]
    prio = _priorities(entries, [0, 1, 2, 3])
    assert prio == {3: 3.0, 1: 5.0, 2: 3.5, 0: 6.0}  # the longest chain of callers above
    assert _priorities(entries, [2, 3]) == {3: 3.0, 2: 3.5}  # compiled entries drop out


def test_nothing_runs_when_turned_off_or_warm(monkeypatch):
    monkeypatch.setenv("TORCHMSA_COMPILE_AHEAD", "0")
    assert compile_plan.cold() is False
    assert compile_plan.compile_cold("default") is None
    monkeypatch.setenv("TORCHMSA_COMPILE_AHEAD", "1")
    monkeypatch.setattr(compile_plan, "usable_cores", lambda: 1)  # one core: nothing to share
    assert compile_plan.cold() is False
    assert compile_plan.compile_cold("default") is None
    monkeypatch.setattr(compile_plan, "usable_cores", lambda: 2)
    monkeypatch.setattr(compile_plan, "_pending", lambda entries, ids: [0, 1, 2])
    assert compile_plan.compile_cold("default", workers=1) is None  # --threads 1: one process
    monkeypatch.setattr(compile_plan, "_pending", lambda entries, ids: [])  # a warm cache
    assert compile_plan.cold() is False
    assert compile_plan.compile_cold("default") is None
    monkeypatch.setattr(compile_plan, "load_plan", lambda: [])  # no plan
    assert compile_plan.compile_cold("default") is None


_FIRST_ALIGN = """
import sys
from numba.core.dispatcher import Dispatcher
compiled = []
original = Dispatcher.compile
def compile_(self, sig):
    misses = sum(self.stats.cache_misses.values())
    try:
        return original(self, sig)
    finally:
        mine = self.py_func.__module__.startswith("torchmsa.")
        if mine and sum(self.stats.cache_misses.values()) > misses:
            compiled.append(self.py_func.__name__)
Dispatcher.compile = compile_
from torchmsa.cli import main
code = main(["align", sys.argv[1], "-o", sys.argv[2], "--mode", "fast", "--device", "cpu",
             "-q"])
print("COMPILED", ",".join(compiled))
sys.exit(code)
"""


@pytest.mark.slow
def test_the_plan_leaves_a_first_align_nothing_to_compile(tmp_path):
    """Against empty caches, ``torchmsa align -v`` compiles the plan on two processes first;
    a later first align in a fresh process then compiles no torchmsa function, and the
    alignment is the one a warm process makes."""
    env = dict(os.environ, TORCHMSA_CACHE_DIR=str(tmp_path / "cache"))
    env.pop("NUMBA_CACHE_DIR", None)
    env["TORCHMSA_COMPILE_AHEAD"] = "1"
    out1 = tmp_path / "first.fasta"
    run = subprocess.run(
        [sys.executable, "-m", "torchmsa", "align", str(EXAMPLE), "-o", str(out1)]
        + ["--mode", "fast", "--device", "cpu", "-v"],
        env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert "numba functions for fast mode" in run.stderr
    # the plan alone, into a second empty cache, then a first align with a compile counter
    env["TORCHMSA_CACHE_DIR"] = str(tmp_path / "cache2")
    plan = subprocess.run(
        [sys.executable, "-c", "from torchmsa.compile_plan import compile_cold as c; "
         "r = c('fast', workers=2); print(r.compiled, r.failed, r.errors)"],
        env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    compiled, failed, errors = plan.stdout.split(" ", 2)
    assert int(compiled) > 10 and failed == "0", plan.stdout + plan.stderr
    out2 = tmp_path / "second.fasta"
    env["TORCHMSA_COMPILE_AHEAD"] = "0"
    first = subprocess.run(
        [sys.executable, "-c", _FIRST_ALIGN, str(EXAMPLE), str(out2)],
        env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert first.returncode == 0, first.stderr
    line = next(x for x in first.stdout.splitlines() if x.startswith("COMPILED"))
    assert line == "COMPILED ", f"compiled by the align, not by the plan: {line[9:]}"
    assert out1.read_text() == out2.read_text()


def test_the_plan_file_is_json_with_its_numba_version():
    raw = json.loads(compile_plan.PLAN.read_text())
    assert set(raw) == {"numba", "python", "entries"}
    assert len(raw["entries"]) == len(load_plan())
