"""Bounded kernel variants and the ahead-of-time warm-up (issue #36).

Every Triton variant is fixed by the kind of call and a launch shape from a short menu; these
tests count the variants a varied workload asks for (launch keys: constexpr arguments and
pointer alignments, what Triton compiles a variant per) and fail when the count grows with
the workload.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
import torch

from torchmsa._triton import dp as tdp
from torchmsa._triton import dp_plan
from torchmsa.cli import main
from torchmsa.constants import GLOBAL, LOCAL, SEMIGLOBAL
from torchmsa.errors import ArgumentError
from torchmsa.precompile import CPU_TASKS, GPU_TASKS, warmup

KINDS = [(False, False), (False, True), (True, True)]  # (profile, trace)


@pytest.mark.parametrize("profile,trace", KINDS)
def test_choose_config_stays_on_the_menu(profile, trace):
    r_max = dp_plan.r_cap(profile, trace)
    menu = dp_plan.menu(r_max)
    assert len(menu) == len(set(menu)) <= 20
    seen = set()
    for n in (1, 3, 17, 64, 100, 255, 300, 513, 1000, 2047, 5000, 30000):
        for m in (1, 50, 300, 4000):
            for pairs in (1, 7, 100, 10_000, 1_000_000):
                for lanes in (1024, 132 * 1024):
                    seen.add(dp_plan.choose_config(n, m, pairs, lanes, r_max))
    assert seen <= set(menu)
    assert len(seen) > 1  # the grid reaches several shapes, all of them on the menu


def _best_cost(n, m, pairs, lanes, r_max, qs, rs) -> float:
    costs = []
    for q in qs:
        for r in (r for r in rs if r <= r_max):
            passes = max(1, -(-n // (q * r)))
            step = r + dp_plan.STEP_COST + (dp_plan.XWARP_COST if q > 32 else 0)
            costs.append(passes * (m + q - 1) * step * max(1.0, pairs * q / lanes))
    return min(costs)


@pytest.mark.parametrize("profile,trace", KINDS)
def test_the_menu_costs_little_modelled_time(profile, trace):
    """Against the menu before decision 0037 (lanes 4-128 in 5 steps, rows 4-24 in 6), the
    best modelled time of no call grows by more than a quarter."""
    r_max = dp_plan.r_cap(profile, trace)
    old = ((4, 16, 32, 64, 128), (4, 8, 12, 16, 20, 24))
    new = (dp_plan.Q_CHOICES, dp_plan.R_CHOICES)
    worst = 0.0
    for n in (20, 50, 100, 150, 200, 300, 400, 500, 700, 1000, 1500, 2000, 3000, 5000):
        for pairs in (1, 10, 100, 1000, 10_000, 100_000, 1_000_000):
            for lanes in (1024, 132 * 1024):
                args = (n, n, pairs, lanes, r_max)
                worst = max(worst, _best_cost(*args, *new) / _best_cost(*args, *old))
    assert worst <= 1.25


def test_misaligned_views_are_copied_aligned():
    buf = torch.arange(40, dtype=torch.int32)
    view = buf[1:]  # 4 bytes past an aligned start
    assert view.data_ptr() % 16
    assert dp_plan._aligned(view).data_ptr() % 16 == 0
    assert torch.equal(dp_plan._aligned(view), view)
    assert dp_plan._aligned(buf) is buf


def _launch_keys(monkeypatch) -> list:
    """Record a key per kernel launch: its constexpr and launch options, and for every
    tensor argument whether it starts 16-byte aligned."""
    keys = []

    def recording(name, launch):
        def wrapped(grid, *args, **meta):
            aligned = tuple(a.data_ptr() % 16 == 0 for a in args if isinstance(a, torch.Tensor))
            keys.append((name, tuple(sorted(meta.items())), aligned))
            return launch(grid, *args, **meta)

        return wrapped

    for name in ("launch_fill", "launch_traceback", "launch_query_profile"):
        monkeypatch.setattr(tdp, name, recording(name, getattr(tdp, name)))
    return keys


def _pair_workload(device, rng, rounds: int):
    """Pair calls of every mode with varied counts, lengths and odd-sized views."""
    mat = torch.from_numpy(rng.integers(-4, 7, (24, 24)).astype(np.int32))
    for _ in range(rounds):
        for mode in (GLOBAL, LOCAL, SEMIGLOBAL):
            p = int(rng.integers(1, 6))
            la = torch.from_numpy(rng.integers(0, 12, p).astype(np.int32))
            lb = torch.from_numpy(rng.integers(0, 12, p).astype(np.int32))
            codes = torch.from_numpy(rng.integers(0, 24, (2 * p + 1, 13)).astype(np.uint8))
            ca, cb = codes[1 : p + 1], codes[p + 1 :]  # views that start at odd offsets
            args = [t.to(device) for t in (ca, la, cb, lb, mat)]
            tdp.pairwise_score(*args, 10, 1, mode)
            tdp.pairwise_align(*args, 10, 1, mode)


def _variants(keys) -> set:
    return {k for k in keys if k[0] == "launch_fill"}


@pytest.mark.interpreter
def test_variants_do_not_grow_with_the_workload(device, monkeypatch):
    keys = _launch_keys(monkeypatch)
    _pair_workload(device, np.random.default_rng(1), rounds=1)
    small = _variants(keys)
    _pair_workload(device, np.random.default_rng(2), rounds=3)
    grown = _variants(keys)
    assert all(all(aligned) for _, _, aligned in keys)  # never a second, unaligned variant
    # each fill variant is a kind of call and a shape of its menu
    bound = 0
    for trace in (False, True):
        menu = dp_plan.menu(dp_plan.r_cap(False, trace))
        bound += len(menu) * (1 + 2 + 2)  # global unpacked; local and semiglobal both ways
        for _, meta, _ in grown:
            meta = dict(meta)
            if meta["TRACE"] == trace and not meta["PROFILE"]:
                shape = (meta["Q"], meta["R"], meta["PB"], meta["num_warps"])
                assert shape in {(c.q, c.r, c.pb, c.num_warps) for c in menu}
    assert len(small) <= len(grown) <= bound


def test_warmup_arguments_are_checked():
    with pytest.raises(ArgumentError, match="unknown warm-up task"):
        warmup("cpu", tasks=["nope"])
    with pytest.raises(ArgumentError, match="jobs"):
        warmup("cpu", jobs=0)
    assert set(CPU_TASKS).isdisjoint(GPU_TASKS)


def test_a_gpu_task_needs_a_gpu_and_a_failing_task_is_named(monkeypatch):
    from torchmsa import precompile
    from torchmsa.errors import TorchMSAError

    with pytest.raises(ArgumentError, match="compiles GPU kernels"):
        warmup("cpu", tasks=["dp-profile-0"])

    def broken(device):
        raise RuntimeError("no compiler here")

    monkeypatch.setitem(precompile.TASKS, "broken", broken)
    monkeypatch.setitem(precompile.CPU_TASKS, "broken", broken)
    with pytest.raises(TorchMSAError, match="task 'broken' failed: RuntimeError: no compiler"):
        warmup("cpu", jobs=1, tasks=["broken"])


def test_warmup_command_runs_a_task(capsys):
    assert main(["warmup", "--device", "cpu", "--task", "pairwise", "--jobs", "1", "-v"]) == 0
    out, err = capsys.readouterr()
    assert "warm-up on cpu: 1 tasks" in out
    assert "pairwise" in err


def test_cache_folder_variable_sets_both_caches(tmp_path):
    code = (
        "import os, numba, torchmsa; print(numba.config.CACHE_DIR); "
        "print(os.environ['TRITON_CACHE_DIR'])"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "TRITON_CACHE_DIR")}
    env["TORCHMSA_CACHE_DIR"] = str(tmp_path)
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=tmp_path, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [str(tmp_path / "numba"), str(tmp_path / "triton")]


@pytest.mark.gpu
def test_no_compiles_after_warmup_on_a_gpu():
    from torchmsa.precompile import _run_task, triton_build_counter

    for task in GPU_TASKS:
        if task.startswith("dp-"):
            _run_task(task, "cuda")
    built = triton_build_counter()
    from torchmsa.alphabet import get_alphabet
    from torchmsa.pipeline.accurate import local_scoring

    sc = local_scoring(get_alphabet("protein"))
    rng = np.random.default_rng(3)
    for p, longest in ((1, 3000), (5, 700), (300, 300), (5000, 120), (20_000, 40)):
        la = torch.from_numpy(rng.integers(1, longest + 1, p).astype(np.int32))
        lb = torch.from_numpy(rng.integers(1, longest + 1, p).astype(np.int32))
        codes = torch.from_numpy(rng.integers(0, 20, (2 * p, longest)).astype(np.uint8))
        args = [t.cuda() for t in (codes[:p], la, codes[p:], lb, sc.matrix)]
        tdp.pairwise_score(*args, sc.gap_open, sc.gap_extend, LOCAL)
        tdp.pairwise_align(*args, sc.gap_open, sc.gap_extend, LOCAL)
        tdp.pairwise_align(*args, sc.gap_open, sc.gap_extend, SEMIGLOBAL)
    torch.cuda.synchronize()
    assert built() == 0


def test_the_refine_task_compiles_what_a_first_call_takes():
    from torchmsa.cpu import refine
    from torchmsa.precompile import _run_task

    report = _run_task("refine", "cpu")
    assert report.name == "refine" and refine.first_calls_compiled()
