"""One long pair through ``torchmsa.pairwise_align`` with traceback, in a fresh process per
run: wall time of the call and peak RSS under a small host budget (``linear``: the
linear-space path when the full matrices exceed it) and under the default one (``full``);
``took`` says which path ran (issue #38, decision 0040).

The pair: ``b`` is ``m`` random residues, ``a`` a slice of ``n`` of them with 15% of the
positions substituted and 60 one-residue deletions and insertions.

    python -m benchmarks.long_pairwise --cases 5001x200000:local:linear,5001x200000:local:full
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
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        size, mode, path = args.child.split(":")
        n, m = (int(x) for x in size.split("x"))
        print(json.dumps(child(n, m, mode, path, args.budget_mib)))
        return 0
    rows = []
    for case in args.cases.split(","):
        size, mode, path = case.split(":")
        n, m = (int(x) for x in size.split("x"))
        argv_c = [sys.executable, "-m", "benchmarks.long_pairwise", "--child", case,
                  "--budget-mib", str(args.budget_mib)]  # fmt: skip
        out = subprocess.run(argv_c, capture_output=True, text=True)
        if out.returncode:
            print(out.stderr[-2000:], file=sys.stderr)
            return 1
        rows.append({"n": n, "m": m, "mode": mode, "path": path,
                     "budget_mib": args.budget_mib if path == "linear" else None,
                     **json.loads(out.stdout.strip().splitlines()[-1])})  # fmt: skip
        print(markdown_table(rows[-1:]), flush=True)
    path = append_rows("long_pairwise", rows, run_metadata("cpu"), args.out)
    print(f"appended {len(rows)} rows to {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
