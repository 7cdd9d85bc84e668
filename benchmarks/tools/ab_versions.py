"""Wall time of two or more installed versions of torchmsa on the same cases, in turns.

    python -m benchmarks.tools.ab_versions --version 3cce2ab=/tmp/sitebase --version new=/tmp/site
        [--dataset balifam10000] [--cases all] [--device cuda] [--mode default]
        [--rounds 2] [--reps 2] [--out DIR]

``ab_cases`` compares settings of one version in one process; this compares code. A version
is ``label=DIR``, ``DIR`` a folder that holds an installed ``torchmsa`` (``pip install
--target DIR``); each runs in a process of its own with ``DIR`` first on ``PYTHONPATH``. A
round runs every version once, the versions' order turning from round to round, so none
always runs first or on a quieter stretch of the machine. Each process aligns every case once
untimed (compiles, warms caches), then ``--reps`` times, timing each case; a repetition's
time is the sum over the cases. Every version must give the same alignments (a difference is
an error); the printed summary gives each version's median repetition and its ratio to the
first's. Appends one row per version, round, repetition and case to ``ab_versions.csv`` in
``--out`` (``benchmarks/results``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.harness import (
    DATA_DIR,
    REPO,
    append_rows,
    case_files,
    load_cases,
    markdown_table,
    pick_cases,
    run_metadata,
)
from benchmarks.tools.alignment_hashes import alignment_digest


def _worker(args) -> None:
    """One version's process: warm-up, then one JSON line per repetition."""
    import torch

    import torchmsa

    data = DATA_DIR / args.dataset
    cases = [c["case"] for c in pick_cases(load_cases(data), args.cases)]
    inputs = [str(case_files(data, c)[0]) for c in cases]
    cuda = args.device.startswith("cuda")

    def run(path):
        t = time.perf_counter()
        aln = torchmsa.align(path, device=args.device, mode=args.mode)
        if cuda:
            torch.cuda.synchronize()
        return time.perf_counter() - t, aln

    digests = {}
    for case, path in zip(cases, inputs):
        aln = run(path)[1]
        digests[case] = alignment_digest(aln)
    print(json.dumps({"file": torchmsa.__file__, "digests": digests}), flush=True)
    for _ in range(args.reps):
        print(json.dumps({case: run(path)[0] for case, path in zip(cases, inputs)}), flush=True)


def _spawn(label: str, site: str, argv: list[str]) -> tuple[dict, list[dict]]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (site, env.get("PYTHONPATH", ""), str(REPO)) if p
    )
    cmd = [sys.executable, "-P", "-m", "benchmarks.tools.ab_versions", "--worker", *argv]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    lines = [json.loads(x) for x in out.stdout.splitlines() if x.startswith("{")]
    if out.returncode or not lines:
        raise RuntimeError(f"version {label} ({site}) failed:\n{out.stderr[-3000:]}")
    return lines[0], lines[1:]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--version", action="append", default=[], help="label=DIR (repeatable)")
    ap.add_argument("--dataset", default="balifam10000")
    ap.add_argument("--cases", default="all")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--mode", default="default")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--out", default=None)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        _worker(args)
        return 0
    versions = [v.split("=", 1) for v in args.version]
    if len(versions) < 2 or any(len(v) != 2 for v in versions):
        raise SystemExit("error: give two or more --version label=DIR")
    common = ["--dataset", args.dataset, "--cases", args.cases, "--device", args.device]
    common += ["--mode", args.mode, "--reps", str(args.reps)]
    rows, digests = [], {}
    for rnd in range(args.rounds):
        turn = rnd % len(versions)
        for label, site in versions[turn:] + versions[:turn]:
            head, reps = _spawn(label, site, common)
            if not Path(head["file"]).resolve().is_relative_to(Path(site).resolve()):
                raise RuntimeError(f"version {label} imported {head['file']}, not from {site}")
            digests.setdefault(label, head["digests"])
            for rep, times in enumerate(reps):
                for case, seconds in times.items():
                    row = {"dataset": args.dataset, "case": case, "mode": args.mode}
                    row.update(variant=label, version=site, round=rnd, rep=rep)
                    rows.append({**row, "seconds": round(seconds, 4)})
                print(f"== {label} round {rnd} rep {rep}: {sum(times.values()):.3f} s", flush=True)
    first = versions[0][0]
    for label, _ in versions[1:]:
        if digests[label] != digests[first]:
            changed = [c for c in digests[first] if digests[label].get(c) != digests[first][c]]
            raise RuntimeError(f"version {label} changed the alignments of {changed}")
    summary = []
    for label, _ in versions:
        totals = {}
        for r in rows:
            if r["variant"] == label:
                key = (r["round"], r["rep"])
                totals[key] = totals.get(key, 0.0) + r["seconds"]
        t = list(totals.values())
        summary.append(
            {
                "version": label,
                "repetitions": len(t),
                "median_s": round(statistics.median(t), 3),
                "min_s": round(min(t), 3),
                "max_s": round(max(t), 3),
            }
        )
    for s in summary:
        s[f"median / {first}"] = round(s["median_s"] / summary[0]["median_s"], 3)
    path = append_rows("ab_versions", rows, run_metadata(args.device), args.out)
    print(markdown_table(summary))
    print(f"appended {len(rows)} rows to {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
