"""Where a large family's time goes, level by level: one process aligns an evolved family
twice (the first call loads and compiles) and, on the second, times every batched level, every
host run and PartTree's phases, CUDA synchronised around each. Prints one JSON line per timed
piece and a summary; a one-off look (issue #35), not a benchmark.

    python -m benchmarks.probes.levels --n 100000 [--device cuda] [--json OUT.jsonl]
        [--profile 3,20,60,100]

``--cprofile ROWS``: a third call under cProfile, its functions by own and by cumulative time.
``--profile``: the batched levels of these indices (in the order they run) under
``torch.profiler``: wall time, kernel launches (``cudaLaunchKernel``; Triton's launches are
``cuLaunchKernel``), the kernels' own GPU time, and the host's operations by their own CPU
time.
"""

from __future__ import annotations

import argparse
import json
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
import torch


def _sync() -> float:
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    return time.perf_counter()


def _profiled(inner, picks: set[int]):
    """``inner`` (``align_level``) with the calls numbered ``picks`` run under the profiler."""
    from torch.profiler import ProfilerActivity, profile

    count = [0]

    def level(st, pairs, *args, **kwargs):
        k = count[0]
        count[0] += 1
        if k not in picks:
            return inner(st, pairs, *args, **kwargs)
        start = _sync()
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            out = inner(st, pairs, *args, **kwargs)
            wall = _sync() - start
        ops = prof.key_averages()
        # kernels' own GPU time (a range such as torchmsa.progressive_level has none of its own)
        gpu_ms = sum(e.self_device_time_total for e in ops) / 1e3
        launches = sum(e.count for e in ops if e.key in ("cudaLaunchKernel", "cuLaunchKernel"))
        widest = int(max(st.cols[pairs[:, 0]].max(), st.cols[pairs[:, 1]].max()))
        took = f"wall {wall * 1e3:.1f} ms, {launches} launches, {gpu_ms:.1f} ms on the GPU"
        print(f"level {k}: {len(pairs)} pairs, widest {widest} columns, {took}")
        print(ops.table(sort_by="self_cpu_time_total", row_limit=10))
        return out

    return level


class Recorder:
    def __init__(self):
        self.rows: list[dict] = []
        self.on = False

    def wrap(self, owner, name: str, label: str, describe=None):
        inner = getattr(owner, name)

        def timed(*args, **kwargs):
            if not self.on:
                return inner(*args, **kwargs)
            start = _sync()
            out = inner(*args, **kwargs)
            row = {"piece": label, "s": round(_sync() - start, 5)}
            if describe is not None:
                row.update(describe(*args, **kwargs))
            self.rows.append(row)
            return out

        setattr(owner, name, timed)


def _level(st, pairs, *args, **kwargs) -> dict:
    n, m = st.cols[pairs[:, 0]], st.cols[pairs[:, 1]]
    return {"pairs": len(pairs), "cells": int((n * m).sum()), "max_cells": int((n * m).max())}


def _host(st, levels, bound, *args, **kwargs) -> dict:
    pairs = np.concatenate(levels)
    b = bound[pairs[:, 0]] * bound[pairs[:, 1]]
    return {"levels": len(levels), "pairs": len(pairs), "bound_cells": int(b.sum())}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--length", type=int, default=250)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--data", type=Path, default=Path("/tmp/torchmsa-scale"))
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--profile", default="", help="comma list of level indices")
    ap.add_argument("--cprofile", type=int, default=0, help="a third call under cProfile: rows")
    args = ap.parse_args(argv)

    import torchmsa
    import torchmsa.parttree as pt
    import torchmsa.pipeline.groups as groups
    import torchmsa.progressive.host as host
    import torchmsa.progressive.levels as prog
    from benchmarks.scale import family_files
    from torchmsa.io import read_sequences

    rec = Recorder()
    rec.wrap(prog, "align_level", "level", _level)
    rec.wrap(host, "run_on_host", "host_run", _host)
    rec.wrap(pt.BatchCounts, "__init__", "kmer_setup")
    rec.wrap(pt, "choose_refs", "choose_refs")
    rec.wrap(pt, "split", "split")
    rec.wrap(pt, "leaf_trees", "leaf_trees")
    rec.wrap(pt, "assemble", "assemble")
    rec.wrap(pt.BatchCounts, "blocks", "blocks")
    rec.wrap(pt, "parttree", "parttree")
    rec.wrap(groups, "progressive_align", "progressive")
    seqs = read_sequences(family_files(args.n, args.length, 0, args.data)["input"])
    torchmsa.align(seqs, device=args.device)
    if args.profile:
        picks = {int(k) for k in args.profile.split(",")}
        prog.align_level = _profiled(prog.align_level, picks)
    rec.on = True
    start = _sync()
    torchmsa.align(seqs, device=args.device)
    whole = _sync() - start
    out = args.json.open("w") if args.json else None
    for row in rec.rows:
        if out:
            out.write(json.dumps(row) + "\n")
    totals, calls = defaultdict(float), defaultdict(int)
    for row in rec.rows:
        totals[row["piece"]] += row["s"]
        calls[row["piece"]] += 1
    print(f"n {args.n}: whole second call {whole:.3f} s")
    for piece, s in sorted(totals.items(), key=lambda kv: -kv[1]):
        print(f"  {piece:12s} {s:8.3f} s in {calls[piece]} calls")
    levels = [r for r in rec.rows if r["piece"] == "level"]
    if levels:
        s = np.array([r["s"] for r in levels])
        cells = np.array([r["cells"] for r in levels], float)
        fit = np.polyfit(cells / 1e9, s, 1)
        print(f"  level s ~ {fit[1] * 1e3:.2f} ms + {fit[0]:.3f} s per 10^9 cells; "
              f"median {np.median(s) * 1e3:.2f} ms; cells {cells.sum() / 1e9:.2f} G")  # fmt: skip
        for r in levels[:: max(1, len(levels) // 25)]:
            print("   ", r)
    for r in rec.rows:
        if r["piece"] == "host_run":
            print("   ", r)
    if args.cprofile:
        _cprofiled(lambda: torchmsa.align(seqs, device=args.device), args.cprofile, rec)
    return 0


def _cprofiled(call, rows: int, rec: Recorder) -> None:
    """One more call under cProfile: the functions by their own and by cumulative time."""
    from benchmarks.probes import cprofiled

    rec.on = False
    cprofiled(call, rows, _sync)


if __name__ == "__main__":
    raise SystemExit(main())
