"""End to end on a GPU machine: torchmsa on the GPU and on the CPU, and the peers, same run.

    python -m benchmarks.e2e_gpu --datasets balibase3,balifam1000 [--tools ...] [--threads 16]
        [--cases BB RV30 ...] [--shard K/N] [--limit N] [--mode default] [--timeout S]
        [--warm] [--config NAME=VALUE] [--policy NAME=VALUE] [--out DIR]

``--cases`` keeps the cases matching any token (as in ``benchmarks.accuracy``); ``--shard K/N``
keeps every N-th of them from the K-th (0-based), so a long table can be run in several calls of
the device's 10-minute limit; give the calls one ``TORCHMSA_RUN`` id and their rows count as
one run (``python -m benchmarks.tools.merge_results`` appends the rows a device call brought
back to ``benchmarks/results/e2e_gpu.csv``). ``--warm``
aligns every case once, untimed, before torchmsa is timed: on a fresh machine the first calls
compile Triton kernels (one per launch shape) and numba functions into on-disk caches that later
runs reuse, so the timed pass is the steady state; the warm-up's wall time is reported as
``warmup_s``.

Tools:

* ``torchmsa-gpu-batch``: every case of a dataset in one :func:`torchmsa.align_many` call on
  the GPU (the cases share each tree level's launches); its time is that call's wall time.
* ``torchmsa-gpu``: one :func:`torchmsa.align` call per case on the GPU. Also reports the
  per-case overhead: wall time minus the GPU kernel time of the same call, measured in a second
  run of the case under ``torch.profiler`` (kernel durations summed), after every case has
  been timed (a process that has run the profiler launches kernels more slowly).
* ``torchmsa-cpu``: one call per case with ``device="cpu"`` (numba with ``--threads`` threads).
* peers (``mafft-auto``, ``famsa``, ``clustalo``, ``kalign`` ...): ``--threads`` threads each.

Every alignment is checked (names, residues) and scored against the reference (restricted to
the reference's rows, core columns). Appends one row per tool and case to ``e2e_gpu.csv`` in
``--out``, and one ``summary`` row per tool and dataset (wall time, warm-up, overheads); prints
the summaries.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from pathlib import Path

import numba
import torch

from benchmarks.harness import (
    DATA_DIR,
    RESULTS_DIR,
    Timer,
    add_settings_options,
    align_kwargs,
    append_rows,
    case_files,
    load_cases,
    markdown_table,
    parsed_settings,
    run_metadata,
    score,
    select_cases,
    settings_columns,
    small_case,
)
from benchmarks.peers import PeerFailed, PeerNotInstalled, run_peer
from torchmsa import align, align_many
from torchmsa.io import read_sequences

DEFAULT_TOOLS = "torchmsa-gpu-batch,torchmsa-gpu,torchmsa-cpu,mafft-auto,famsa,clustalo,kalign"


def _check(aln, inp):
    recs = read_sequences(inp)
    if [r.replace("-", "") for r in aln.rows] != [r.seq.replace("-", "") for r in recs]:
        raise RuntimeError(f"{inp}: residues changed")


def _kernel_seconds(fn) -> float:
    """GPU kernel time of ``fn()`` (summed durations of device kernels)."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    total_us = 0.0
    for evt in prof.events():
        if evt.device_type == torch.autograd.DeviceType.CUDA:
            total_us += evt.device_time_total if hasattr(evt, "device_time_total") else 0.0
    return total_us / 1e6


def _row(dataset, case, tool, args):
    torchmsa = tool.startswith("torchmsa")
    return {
        "dataset": dataset,
        "case": case["case"],
        "ref_set": case.get("ref_set", "all"),
        "tool": tool,
        "mode": args.mode if torchmsa else "",
        **(args.columns if torchmsa else {}),
        "threads": args.threads,
        "sp": math.nan,
        "tc": math.nan,
        "seconds": math.nan,
        "overhead_s": math.nan,
        "error": "",
        "small": small_case(case),
    }


def run_torchmsa_batch(dataset, cases, ddir, args) -> tuple[list[dict], float, float]:
    files = [case_files(ddir, c["case"]) for c in cases]
    inputs = [str(f[0]) for f in files]
    with Timer(cuda=True) as warm:  # compile and warm up
        align_many(inputs if args.warm else inputs[:2], device="cuda", mode=args.mode, **args.kw)
    with Timer(cuda=True) as t:
        alns = align_many(inputs, device="cuda", mode=args.mode, **args.kw)
    rows = []
    for case, (inp, ref, core), aln in zip(cases, files, alns):
        row = _row(dataset, case, "torchmsa-gpu-batch", args)
        try:
            _check(aln, inp)
            row["sp"], row["tc"] = score(aln.names, aln.rows, ref, core)
        except Exception as exc:  # recorded, not fatal
            row["error"] = f"{type(exc).__name__}: {exc}"[:300]
        rows.append(row)
    return rows, t.seconds, warm.seconds


def run_torchmsa(dataset, cases, ddir, args, device) -> tuple[list[dict], float, float]:
    tool = "torchmsa-gpu" if device == "cuda" else "torchmsa-cpu"
    files = [case_files(ddir, c["case"]) for c in cases]
    smallest = min(files, key=lambda f: f[0].stat().st_size)[0]
    with Timer(cuda=device == "cuda") as warm:  # compile and warm up
        for inp in [f[0] for f in files] if args.warm else [smallest]:
            align(str(inp), device=device, mode=args.mode, **args.kw)
    rows, wall = [], 0.0
    for case, (inp, ref, core) in zip(cases, files):
        row = _row(dataset, case, tool, args)
        try:
            with Timer(cuda=device == "cuda") as t:
                aln = align(str(inp), device=device, mode=args.mode, **args.kw)
            row["seconds"] = round(t.seconds, 4)
            wall += t.seconds
            _check(aln, inp)
            row["sp"], row["tc"] = score(aln.names, aln.rows, ref, core)
        except Exception as exc:  # recorded, not fatal
            row["error"] = f"{type(exc).__name__}: {exc}"[:300]
        rows.append(row)
        print(
            f"{tool:18s} {case['case']:12s} {row['seconds']:8.2f} s  SP {row['sp']:.3f}", flush=True
        )
    if device == "cuda" and args.overhead:
        # after the timed pass: a process that has run torch.profiler aligns more slowly
        # afterwards (results/probes-small-cases.md), so no profiled case precedes a timed one
        for row, (inp, _, _) in zip(rows, files):
            if not row["error"]:
                kern = _kernel_seconds(
                    lambda p=str(inp): align(p, device=device, mode=args.mode, **args.kw)
                )
                row["overhead_s"] = round(row["seconds"] - kern, 4)
    return rows, wall, warm.seconds


def run_peer_tool(dataset, cases, ddir, tool, args) -> tuple[list[dict], float]:
    rows, wall = [], 0.0
    for case in cases:
        inp, ref, core = case_files(ddir, case["case"])
        row = _row(dataset, case, tool, args)
        try:
            names, aligned, seconds = run_peer(tool, inp, args.threads, args.timeout)
            row["seconds"] = round(seconds, 4)
            wall += seconds
            row["sp"], row["tc"] = score(names, aligned, ref, core)
        except PeerNotInstalled as exc:
            print(f"skipping {tool}: {exc}", file=sys.stderr)
            return [], math.nan
        except PeerFailed as exc:
            row["error"] = str(exc)[:300]
        rows.append(row)
        print(
            f"{tool:18s} {case['case']:12s} {row['seconds']:8.2f} s  SP {row['sp']:.3f}", flush=True
        )
    return rows, wall


def summary(rows, dataset, tool, wall, warmup=math.nan) -> dict:
    ok = [r for r in rows if not r["error"]]
    over = [r["overhead_s"] for r in ok if not math.isnan(r["overhead_s"])]
    small = [r["overhead_s"] for r in ok if r["small"] and not math.isnan(r["overhead_s"])]
    first = rows[0] if rows else {}
    keep = ("mode", "config", "policy", "budget", "threads")
    return {
        "scope": "summary",
        "dataset": dataset,
        "tool": tool,
        **{k: first[k] for k in keep if k in first},
        "cases": len(rows),
        "failures": len(rows) - len(ok),
        "sp": statistics.fmean(r["sp"] for r in ok) if ok else math.nan,
        "tc": statistics.fmean(r["tc"] for r in ok) if ok else math.nan,
        "wall_s": round(wall, 3),
        "median_overhead_ms": round(1000 * statistics.median(over), 2) if over else math.nan,
        "small_cases": sum(r["small"] for r in ok),
        "median_small_overhead_ms": (
            round(1000 * statistics.median(small), 2) if small else math.nan
        ),
        "warmup_s": round(warmup, 3),
    }


def _shard(text: str) -> tuple[int, int]:
    try:
        k, n = (int(x) for x in text.split("/"))
    except ValueError:
        k, n = -1, 0
    if not 0 <= k < n:
        raise SystemExit(f"--shard {text!r}: use K/N with 0 <= K < N, e.g. 0/3")
    return k, n


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", default="balibase3,balifam1000,balifam10000")
    ap.add_argument("--tools", default=DEFAULT_TOOLS)
    ap.add_argument("--threads", type=int, default=16)
    ap.add_argument("--limit", type=int, default=None, help="at most N cases per dataset")
    ap.add_argument("--cases", nargs="*", default=[], help="case names, prefixes or RV sets")
    ap.add_argument("--shard", default="0/1", help="K/N: every N-th case from the K-th")
    ap.add_argument("--mode", default="default")
    ap.add_argument("--timeout", type=float, default=None)
    ap.add_argument("--no-overhead", dest="overhead", action="store_false")
    ap.add_argument(
        "--warm",
        action="store_true",
        help="align every case once, untimed, before timing torchmsa (fills the kernel caches)",
    )
    ap.add_argument("--data", default=str(DATA_DIR))
    ap.add_argument("--out", default=str(RESULTS_DIR))
    add_settings_options(ap)
    args = ap.parse_args(argv)
    settings = parsed_settings(ap, args)
    args.kw, args.columns = align_kwargs(*settings), settings_columns(*settings)
    shard, n_shards = _shard(args.shard)
    numba.set_num_threads(min(args.threads, numba.config.NUMBA_NUM_THREADS))
    torch.set_num_threads(args.threads)
    meta = run_metadata("cuda" if torch.cuda.is_available() else "cpu")
    sums = []
    for dataset in args.datasets.split(","):
        ddir = Path(args.data) / dataset
        cases = select_cases(load_cases(ddir), args.cases, args.limit)[shard::n_shards]
        for tool in args.tools.split(","):
            t0 = time.perf_counter()
            warmup = math.nan
            if tool == "torchmsa-gpu-batch":
                rows, wall, warmup = run_torchmsa_batch(dataset, cases, ddir, args)
            elif tool in ("torchmsa-gpu", "torchmsa-cpu"):
                device = "cuda" if tool == "torchmsa-gpu" else "cpu"
                rows, wall, warmup = run_torchmsa(dataset, cases, ddir, args, device)
            else:
                rows, wall = run_peer_tool(dataset, cases, ddir, tool, args)
            if not rows:
                continue
            sums.append(summary(rows, dataset, tool, wall, warmup))
            print(f"== {dataset} {tool}: {sums[-1]} ({time.perf_counter() - t0:.0f} s)", flush=True)
            # after every tool, so a run cut short by a time limit keeps what it finished
            append_rows("e2e_gpu", [*rows, sums[-1]], meta, args.out)
    cols = ["dataset", "tool", "cases", "failures", "sp", "tc", "wall_s", "median_overhead_ms"]
    print(markdown_table(sums, cols))
    return 0


if __name__ == "__main__":
    sys.exit(main())
