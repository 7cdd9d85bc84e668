"""The one-thread twins of numba's parallel functions (:mod:`torchmsa.cpu.twins`) give the
same integers as the parallel functions: the same alignments, trees and scores whichever one a
call takes."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch

import torchmsa
from torchmsa.alphabet import get_alphabet
from torchmsa.constants import LOCAL
from torchmsa.cpu import dp, twins
from torchmsa.scoring import get_scoring
from torchmsa.synthetic import family


def _force(monkeypatch, which: str) -> None:
    """``small``: every call below the threshold; ``parallel``: none; ``one-thread``: every
    call above it, on one thread (the compiled twins of large calls)."""
    cells = {"small": 1 << 62, "parallel": -1, "one-thread": 0}[which]
    monkeypatch.setattr(twins, "SERIAL_CELLS", cells)
    threads = 1 if which == "one-thread" else twins.numba.get_num_threads()
    monkeypatch.setattr(twins.numba, "get_num_threads", lambda: threads)


@pytest.mark.parametrize("mode", ["default", "accurate"])
def test_twins_align_alike(monkeypatch, mode):
    seqs = {f"s{k}": s for k, s in enumerate(family(14, 140, 7, indels=True))}
    out = {}
    for which in ("small", "parallel", "one-thread"):
        _force(monkeypatch, which)
        aln = torchmsa.align(seqs, device="cpu", mode=mode)
        out[which] = (aln.names, aln.codes.tolist(), aln.tree.newick())
    assert out["small"] == out["parallel"] == out["one-thread"]


def test_twins_score_and_align_pairs_alike(monkeypatch):
    # local pairs past the striped kernel's threshold: the parallel function takes it
    seqs = family(6, 300, 3, indels=True)
    enc = torchmsa.encode_sequences(seqs, seqtype="protein")
    a, b = enc.codes[:3], enc.codes[3:]
    la, lb = enc.lengths[:3], enc.lengths[3:]
    mat = torch.as_tensor(get_scoring(get_alphabet("protein")).matrix.copy(), dtype=torch.int32)
    got = {}
    for which in ("small", "parallel", "one-thread"):
        _force(monkeypatch, which)
        score = dp.pairwise_score(a, la, b, lb, mat, 10, 1, LOCAL)
        info, ops = dp.pairwise_align(a, la, b, lb, mat, 10, 1, LOCAL)
        got[which] = (score, info, ops)
    for s, p, o in zip(got["small"], got["parallel"], got["one-thread"]):
        assert torch.equal(s, p) and torch.equal(s, o)


def test_serial_below_the_threshold_and_on_one_thread(monkeypatch):
    assert twins.serial(0) and twins.small(0)
    assert not twins.small(twins.SERIAL_CELLS)
    monkeypatch.setattr(twins.numba, "get_num_threads", lambda: 1)
    assert twins.serial(twins.SERIAL_CELLS) and not twins.small(twins.SERIAL_CELLS)
    monkeypatch.setattr(twins, "SERIAL_CELLS", -1)
    assert not twins.serial(0) and not twins.small(0)


def test_cold_calls_take_the_twin_until_the_budget_is_spent(monkeypatch):
    """A call above the threshold takes the twin while the parallel function is not compiled,
    until :data:`COLD_CELLS` cells ran on the twin in this process; then the parallel one."""
    par, one = dp._profile_parallel, dp._profile_serial
    monkeypatch.setattr(twins, "_cold_cells", {})
    monkeypatch.setattr(twins, "COLD_CELLS", 3 * twins.SERIAL_CELLS)
    monkeypatch.setattr(twins.numba, "get_num_threads", lambda: 4)
    monkeypatch.setattr(twins, "compiled", lambda f: False)
    big = twins.SERIAL_CELLS
    assert [twins.pick(par, one, big) is one for _ in range(4)] == [True, True, True, False]
    assert twins.pick(par, one, 10) is one  # small calls: the twin, whatever the budget
    monkeypatch.setattr(twins, "SERIAL_CELLS", -1)  # the warm-up's parallel task
    assert twins.pick(par, one, 10) is par
    monkeypatch.undo()
    monkeypatch.setattr(twins, "compiled", lambda f: True)
    monkeypatch.setattr(twins.numba, "get_num_threads", lambda: 1)
    assert twins.pick(par, one, big) is one  # one thread: the twin
    assert twins.pick(par, one, big, one_thread=False) is par  # ... unless it leaves work out


def test_cold_first_align_is_the_parallel_ones(monkeypatch):
    """With no parallel function compiled, an align whose calls are above the threshold runs
    on the twins (the budget records them) and gives the parallel functions' alignment."""
    seqs = {f"s{k}": s for k, s in enumerate(family(24, 300, 5, indels=True))}
    _force(monkeypatch, "parallel")
    want = torchmsa.align(seqs, device="cpu")
    monkeypatch.setattr(twins, "SERIAL_CELLS", 1 << 12)
    monkeypatch.setattr(twins, "_cold_cells", {})
    monkeypatch.setattr(twins, "compiled", lambda f: False)
    got = torchmsa.align(seqs, device="cpu")
    assert twins._cold_cells  # the cold rule chose the twins
    assert (got.names, got.codes.tolist()) == (want.names, want.codes.tolist())


_MODULE = """
from numba import njit

@njit(cache=True)
def twice(x):
    return 2 * x
"""


def test_compiled_sees_this_process_and_the_disk_cache(tmp_path):
    (tmp_path / "cold_mod.py").write_text(_MODULE)
    script = (
        "import sys; sys.path.insert(0, sys.argv[1]); import cold_mod; "
        "from torchmsa.cpu import twins; before = twins.compiled(cold_mod.twice); "
        "cold_mod.twice(3); print(before, twins.compiled(cold_mod.twice))"
    )
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache")}
    env.pop("TORCHMSA_CACHE_DIR", None)
    run = [sys.executable, "-c", script, str(tmp_path)]
    first = subprocess.run(run, env=env, capture_output=True, text=True, check=True)
    again = subprocess.run(run, env=env, capture_output=True, text=True, check=True)
    assert first.stdout.split() == ["False", "True"]  # compiled by its call
    assert again.stdout.split() == ["True", "True"]  # in the disk cache
