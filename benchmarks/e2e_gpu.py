"""End to end on a GPU machine: torchmsa on the GPU and on the CPU, and the peers, same run.

    python -m benchmarks.e2e_gpu --datasets balibase3,balifam1000 [--tools ...] [--threads 16]
        [--cases BB RV30 ...] [--shard K/N] [--limit N] [--mode default] [--timeout S]
        [--warm] [--name e2e_gpu] [--out DIR]

``--cases`` keeps the cases matching any token (as in ``benchmarks.accuracy``); ``--shard K/N``
keeps every N-th of them from the K-th (0-based), so a long table can be run in several calls of
the device's 10-minute limit and merged by ``python -m benchmarks.merge_results``. ``--warm``
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
the reference's rows, core columns). Writes ``<name>.csv``/``.md`` (per tool and dataset: cases,
failures, mean SP and TC, wall seconds) and ``<name>-cases.csv``.
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

from benchmarks.accuracy import case_files, load_cases, select_cases
from benchmarks.common import (
    DATA_DIR,
    RESULTS_DIR,
    Timer,
    add_settings_option,
    apply_settings,
    run_metadata,
    write_results,
)
from benchmarks.peers import PeerFailed, PeerNotInstalled, run_peer
from torchmsa.io import read_sequences
from torchmsa.metrics import restrict_to_reference, score_alignment
from torchmsa.pipeline import align, align_many

SMALL_N, SMALL_LEN = 20, 600  # "small case" for the overhead target (150 of BAliBASE's 386)
DEFAULT_TOOLS = "torchmsa-gpu-batch,torchmsa-gpu,torchmsa-cpu,mafft-auto,famsa,clustalo,kalign"


def _score(names, rows, ref, core):
    test = restrict_to_reference(list(zip(names, rows)), ref)
    s = score_alignment(test, ref, core)
    return s.sp, s.tc


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


def _row(dataset, case, tool, threads):
    return {
        "dataset": dataset,
        "case": case["case"],
        "ref_set": case.get("ref_set", "all"),
        "tool": tool,
        "threads": threads,
        "sp": math.nan,
        "tc": math.nan,
        "seconds": math.nan,
        "overhead_s": math.nan,
        "error": "",
        "small": small_case(case),
    }


def small_case(case) -> bool:
    """A small case: at most :data:`SMALL_N` sequences of at most :data:`SMALL_LEN` residues
    (from ``cases.tsv``)."""
    try:
        return int(case["nseq"]) <= SMALL_N and int(case["max_len"]) <= SMALL_LEN
    except (KeyError, ValueError):
        return False


def pick_cases(table: list[dict], spec: str) -> list[dict]:
    """``all`` cases of a ``cases.tsv`` table, the ``small`` ones (:func:`small_case`), or
    those a comma list of names, prefixes or reference sets selects (``select_cases``)."""
    if spec in ("all", "small"):
        return [c for c in table if spec == "all" or small_case(c)]
    return select_cases(table, spec.split(","), None)


def run_torchmsa_batch(dataset, cases, ddir, args) -> tuple[list[dict], float, float]:
    files = [case_files(ddir, c["case"]) for c in cases]
    inputs = [str(f[0]) for f in files]
    with Timer(cuda=True) as warm:  # compile and warm up
        align_many(inputs if args.warm else inputs[:2], device="cuda", mode=args.mode)
    with Timer(cuda=True) as t:
        alns = align_many(inputs, device="cuda", mode=args.mode)
    rows = []
    for case, (inp, ref, core), aln in zip(cases, files, alns):
        row = _row(dataset, case, "torchmsa-gpu-batch", args.threads)
        try:
            _check(aln, inp)
            row["sp"], row["tc"] = _score(aln.names, aln.rows, ref, core)
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
            align(str(inp), device=device, mode=args.mode)
    rows, wall = [], 0.0
    for case, (inp, ref, core) in zip(cases, files):
        row = _row(dataset, case, tool, args.threads)
        try:
            with Timer(cuda=device == "cuda") as t:
                aln = align(str(inp), device=device, mode=args.mode)
            row["seconds"] = round(t.seconds, 4)
            wall += t.seconds
            _check(aln, inp)
            row["sp"], row["tc"] = _score(aln.names, aln.rows, ref, core)
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
                kern = _kernel_seconds(lambda p=str(inp): align(p, device=device, mode=args.mode))
                row["overhead_s"] = round(row["seconds"] - kern, 4)
    return rows, wall, warm.seconds


def run_peer_tool(dataset, cases, ddir, tool, args) -> tuple[list[dict], float]:
    rows, wall = [], 0.0
    for case in cases:
        inp, ref, core = case_files(ddir, case["case"])
        row = _row(dataset, case, tool, args.threads)
        try:
            names, aligned, seconds = run_peer(tool, inp, args.threads, args.timeout)
            row["seconds"] = round(seconds, 4)
            wall += seconds
            row["sp"], row["tc"] = _score(names, aligned, ref, core)
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
    return {
        "dataset": dataset,
        "tool": tool,
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
    ap.add_argument("--name", default="e2e_gpu")
    ap.add_argument("--out", default=str(RESULTS_DIR))
    add_settings_option(ap)
    args = ap.parse_args(argv)
    apply_settings(args.set)
    shard, n_shards = _shard(args.shard)
    numba.set_num_threads(min(args.threads, numba.config.NUMBA_NUM_THREADS))
    torch.set_num_threads(args.threads)
    meta = run_metadata("cuda" if torch.cuda.is_available() else "cpu")
    header = (
        f"torchmsa mode `{args.mode}`; peers and torchmsa-cpu with {args.threads} threads "
        f"on the same machine's CPU. Cases: {' '.join(args.cases) or 'all'}, shard "
        f"{args.shard}. wall_s: summed per-case wall time (one align_many "
        f"call for torchmsa-gpu-batch). Overhead: wall minus GPU kernel time per case, "
        f"measured after every case was timed; small cases: at most {SMALL_N} sequences of "
        f"at most {SMALL_LEN} residues. "
        f"warmup_s: torchmsa's untimed warm-up before timing (Triton and numba compile into "
        f"their on-disk caches on a fresh machine), "
        f"{'every case once (--warm)' if args.warm else 'one case'}.\n"
    )
    all_rows, sums = [], []
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
            all_rows += rows
            sums.append(summary(rows, dataset, tool, wall, warmup))
            print(f"== {dataset} {tool}: {sums[-1]} ({time.perf_counter() - t0:.0f} s)", flush=True)
            # after every tool, so a run cut short by a time limit keeps what it finished
            write_results(args.name, sums, header, out_dir=args.out, metadata=meta)
            write_results(
                f"{args.name}-cases", all_rows, out_dir=args.out, metadata=meta, markdown=False
            )
    for s in sums:
        print(s)
    return 0


if __name__ == "__main__":
    sys.exit(main())
