"""The evolved families of ``benchmarks/evolve.py``: their rows are a true alignment."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from benchmarks.evolve import EvolveSpec, evolve, write
from benchmarks.scale import run_child
from torchmsa.metrics import score_alignment


def test_rows_are_the_sequences_with_gaps_and_deterministic():
    fam = evolve(EvolveSpec(n=300, length=60, seed=3))
    again = evolve(EvolveSpec(n=300, length=60, seed=3))
    assert fam.rows == again.rows and fam.names == again.names
    assert len({len(r) for r in fam.rows}) == 1
    assert [r.replace("-", "") for r in fam.rows] == fam.seqs
    grid = np.array([list(r) for r in fam.rows])
    assert (grid != "-").any(0).all(), "all-gap columns are dropped"
    assert fam.core.shape == (grid.shape[1],) and 0 < fam.core.sum() <= 60
    assert evolve(EvolveSpec(n=300, length=60, seed=4)).seqs != fam.seqs


@pytest.mark.parametrize("n", [1, 5, 64, 65])
def test_leaf_count_and_nonempty(n):
    fam = evolve(EvolveSpec(n=n, length=20, seed=1, indels=3.0))
    assert len(fam.seqs) == n and all(fam.seqs)


def test_divergence_grows_with_the_rate():
    def identity(spec):
        fam = evolve(spec)
        a = np.frombuffer(fam.rows[0].encode(), np.uint8)
        ids = []
        for r in fam.rows[1:]:
            b = np.frombuffer(r.encode(), np.uint8)
            m = (a != 45) & (b != 45) & fam.core
            ids.append((a[m] == b[m]).mean())
        return float(np.mean(ids))

    close = identity(EvolveSpec(n=200, length=100, divergence=0.1))
    far = identity(EvolveSpec(n=200, length=100, divergence=1.0))
    assert close > 0.8 > far


def test_written_reference_scores_itself_perfectly(tmp_path):
    fam = evolve(EvolveSpec(n=40, length=50, seed=2))
    paths = write(fam, tmp_path)
    s = score_alignment(paths["ref"], paths["ref"], paths["core"])
    assert s.sp == 1.0 and s.tc == 1.0


def test_run_child_reports_status_and_rss():
    ok = run_child([sys.executable, "-c", "x = bytearray(50_000_000)"], timeout=60)
    assert ok[0] == "ok" and ok[2] > 50_000_000
    bad = run_child([sys.executable, "-c", "import sys; sys.exit('boom')"], timeout=60)
    assert bad[0] == "failed" and bad[3] == "boom"
    slow = run_child([sys.executable, "-c", "import time; time.sleep(30)"], timeout=0.5)
    assert slow[0] == "timeout" and slow[1] < 10


def test_run_child_rss_is_the_childs_own_under_a_large_parent():
    """A child's ru_maxrss starts at its forking parent's RSS: the launcher keeps a large
    benchmark process's memory out of the figure (it read 698 MiB for an 80 MB child)."""
    ballast = bytearray(400_000_000)
    ballast[::4096] = b"x" * len(ballast[::4096])  # touched: resident
    got = run_child([sys.executable, "-c", "x = bytearray(80_000_000)"], timeout=60)
    assert got[0] == "ok" and 80_000_000 < got[2] < 300_000_000, got
    del ballast


def test_scale_times_fresh_and_served_processes_alike(tmp_path):
    """``benchmarks.scale --regimes fresh,served``: the served command is run by the warm
    server (its status says so) and gives the fresh process's alignment (same SP/TC); every
    row reaches the CSV."""
    import csv

    from benchmarks import scale

    argv = ["--sizes", "40", "--length", "40", "--tools", "torchmsa", "--device", "cpu",
            "--threads", "1", "--regimes", "fresh,served", "--bytecode", "as-is",
            "--data", str(tmp_path / "data"), "--out", str(tmp_path)]  # fmt: skip
    assert scale.main(argv) == 0
    rows = list(csv.DictReader(open(tmp_path / "scale.csv")))
    got = {r["regime"]: r for r in rows}
    assert sorted(got) == ["fresh", "served", "served-start"], rows
    assert all(r["status"] == "ok" for r in rows), rows
    assert got["fresh"]["sp"] == got["served"]["sp"] and float(got["fresh"]["sp"]) > 0.5
    assert got["served"]["peak_gpu_gib"] == "" and float(got["served"]["wall_s"]) > 0
    # the fresh process says whether its host merges could run threaded; the served one cannot
    assert (
        got["fresh"]["host_parallel"] in ("True", "False") and got["served"]["host_parallel"] == ""
    )
