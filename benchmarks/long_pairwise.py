"""One long pair through ``torchmsa.pairwise_align`` with traceback, in a fresh process per
run: wall time of the call and peak RSS under a small host budget (``linear``: the
linear-space path when the full matrices exceed it) and under the default one (``full``);
``took`` says which path ran (issue #38, decision 0040).

The pair: ``b`` is ``m`` random residues, ``a`` a slice of ``n`` of them with 15% of the
positions substituted and 60 one-residue deletions and insertions.

    python -m benchmarks.long_pairwise --cases 5001x200000:local:linear,5001x200000:local:full
    python -m benchmarks.long_pairwise --cases 100000x100000:global:gpu --check

``gpu``: the call on ``cuda`` (a global pair of 2^28 cells or more goes through the strips,
decision 0060): ``cold_s`` is the first call in the process (compiles or loads the kernels),
``call_s`` the second; ``peak_gpu_mib`` is ``torch.cuda.max_memory_allocated`` of the second.
``--check`` also scores the pair on the CPU (score only, all cores) and records whether the
scores agree (``cpu_score_agrees``) and whether the rows spell the two sequences.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

import numpy as np

from benchmarks.harness import append_rows, markdown_table, run_metadata

LETTERS = b"ACDEFGHIKLMNPQRSTVWY"


def pair(n: int, m: int, seed: int = 2024) -> tuple[str, str]:
    rng = np.random.default_rng(seed)
    letters = np.frombuffer(LETTERS, np.uint8)
    b = rng.integers(0, 20, m).astype(np.uint8)
    start = (m - n) // 2
    a = b[start : start + n].copy()
    a[rng.random(a.size) < 0.15] = rng.integers(0, 20, 1)[0]
    a = np.delete(a, rng.choice(a.size, 60, replace=False))
    a = np.insert(a, rng.choice(a.size, 60, replace=False), 7)
    return letters[a].tobytes().decode(), letters[b].tobytes().decode()


def _rss(field: str) -> int:
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) * 1024 for line in fh if line.startswith(field))


def gpu_child(n: int, m: int, mode: str, check: bool) -> dict:
    import torch

    from torchmsa import pairwise_align
    from torchmsa.ops.global_strips import LONG_GLOBAL_CELLS

    a, b = pair(n, m)
    t = time.perf_counter()
    pairwise_align(a, b, mode=mode, device="cuda")
    torch.cuda.synchronize()
    cold = time.perf_counter() - t
    torch.cuda.reset_peak_memory_stats()
    t = time.perf_counter()
    r = pairwise_align(a, b, mode=mode, device="cuda")
    torch.cuda.synchronize()
    wall = time.perf_counter() - t
    peak = torch.cuda.max_memory_allocated() / 2**20
    out = {
        "took": "strips" if mode == "global" and n * m >= LONG_GLOBAL_CELLS else "batched",
        "score": r.score, "columns": len(r.aligned[0]), "cold_s": round(cold, 3),
        "call_s": round(wall, 4), "peak_gpu_mib": round(peak, 1),
        "peak_rss_mib": round(_rss("VmHWM:") / 2**20, 1), "gcups": round(n * m / wall / 1e9, 2),
        "rows_spell": r.aligned[0].replace("-", "") == a and r.aligned[1].replace("-", "") == b,
    }  # fmt: skip
    if check:
        t = time.perf_counter()
        cpu = pairwise_align(a, b, mode=mode, device="cpu", traceback=False)
        out.update(cpu_score=cpu.score, cpu_score_agrees=cpu.score == r.score)
        out["cpu_score_s"] = round(time.perf_counter() - t, 2)
    return out


def child(n: int, m: int, mode: str, path: str, budget_mib: int) -> dict:
    from torchmsa import pairwise_align
    from torchmsa.config import MemoryBudget
    from torchmsa.cpu.dp_linear import needs_linear

    a, b = pair(n, m)
    budget = MemoryBudget(host_bytes=budget_mib << 20) if path == "linear" else None
    pairwise_align(a[:20], b[:200], mode=mode, budget=12000, device="cpu")  # load compiled code
    pairwise_align(a[:30], b[:60], mode=mode, device="cpu")
    before = _rss("VmRSS:")
    t = time.perf_counter()
    r = pairwise_align(a, b, mode=mode, budget=budget, device="cpu")
    wall = time.perf_counter() - t
    limit = (budget or MemoryBudget()).limit("cpu")
    linear = bool(needs_linear(np.array([len(a)]), np.array([len(b)]), limit)[0])
    return {
        "took": "linear" if linear else "full",
        "score": r.score, "columns": len(r.aligned[0]), "call_s": round(wall, 3),
        "rss_before_mib": round(before / 2**20, 1),
        "peak_rss_mib": round(_rss("VmHWM:") / 2**20, 1),
        "gcups": round(n * m / wall / 1e9, 3),
    }  # fmt: skip


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default="5001x200000:local:linear,5001x200000:local:full")
    ap.add_argument("--budget-mib", type=int, default=500, help="host budget of 'linear' runs")
    ap.add_argument("--out", default=None, help="results folder (default benchmarks/results)")
    ap.add_argument("--check", action="store_true", help="gpu: score on the CPU too")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        size, mode, path = args.child.split(":")
        n, m = (int(x) for x in size.split("x"))
        if path == "gpu":
            print(json.dumps(gpu_child(n, m, mode, args.check)))
        else:
            print(json.dumps(child(n, m, mode, path, args.budget_mib)))
        return 0
    gpu = any(case.endswith(":gpu") for case in args.cases.split(","))
    rows = []
    for case in args.cases.split(","):
        size, mode, path = case.split(":")
        n, m = (int(x) for x in size.split("x"))
        argv_c = [sys.executable, "-m", "benchmarks.long_pairwise", "--child", case,
                  "--budget-mib", str(args.budget_mib)] + ["--check"] * args.check  # fmt: skip
        out = subprocess.run(argv_c, capture_output=True, text=True)
        if out.returncode:
            print(out.stderr[-2000:], file=sys.stderr)
            return 1
        rows.append({"n": n, "m": m, "mode": mode, "path": path,
                     "budget_mib": args.budget_mib if path == "linear" else None,
                     **json.loads(out.stdout.strip().splitlines()[-1])})  # fmt: skip
        print(markdown_table(rows[-1:]), flush=True)
    path = append_rows("long_pairwise", rows, run_metadata("cuda" if gpu else "cpu"), args.out)
    print(f"appended {len(rows)} rows to {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
