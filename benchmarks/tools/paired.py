"""Two tools (or two settings of one) case by case from a results file: the mean difference of
SP and TC per dataset, a paired bootstrap 95% interval of it, and wins / losses.

    python -m benchmarks.tools.paired --file benchmarks/results/large_families.csv
        --commit 31a0bef --a torchmsa-lcs --b torchmsa-fast [--min-seqs 501]
    python -m benchmarks.tools.paired --commit 3d89420 --a torchmsa-parttree:kmer=no
        --b torchmsa-parttree:kmer=yes

A side is ``TOOL`` or ``TOOL:TEXT=yes|no`` (rows whose ``config`` column holds TEXT, or not).
Only cases both sides aligned count. The interval resamples the cases 5,000 times with
Python's ``random`` seeded 1; a win or a loss is a difference beyond 0.005.
"""

from __future__ import annotations

import argparse
import csv
import random
from collections import defaultdict

from benchmarks.harness import RESULTS_DIR


def _side(spec: str):
    tool, _, cond = spec.partition(":")
    text, _, want = cond.partition("=")
    return tool, text, want != "no"


def _matches(row: dict, side) -> bool:
    tool, text, want = side
    return row["tool"] == tool and (not text or (text in row.get("config", "")) == want)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--file", default=str(RESULTS_DIR / "large_families.csv"))
    ap.add_argument("--commit", required=True)
    ap.add_argument("--a", required=True)
    ap.add_argument("--b", required=True)
    ap.add_argument("--min-seqs", type=int, default=0, help="cases with at least this many")
    args = ap.parse_args(argv)
    a, b = _side(args.a), _side(args.b)
    cases: dict = defaultdict(dict)
    for row in csv.DictReader(open(args.file)):
        if row["commit"] != args.commit or row.get("scope", "case") not in ("case", ""):
            continue
        if not row.get("tc") or int(row.get("n_seqs") or 0) < args.min_seqs:
            continue
        for name, side in (("a", a), ("b", b)):
            if _matches(row, side):
                cases[(row["dataset"], row["case"])][name] = row
    for ds in sorted({d for d, _ in cases}):
        keys = sorted(k for k in cases if k[0] == ds and len(cases[k]) == 2)
        for m in ("sp", "tc"):
            d = [float(cases[k]["a"][m]) - float(cases[k]["b"][m]) for k in keys]
            if not d:
                continue
            rng = random.Random(1)
            means = sorted(sum(rng.choice(d) for _ in d) / len(d) for _ in range(5000))
            print(
                f"{ds} {m} cases {len(d)}: {sum(d) / len(d):+.4f} "
                f"[{means[125]:+.4f}, {means[4875]:+.4f}] "
                f"wins {sum(x > 0.005 for x in d)} losses {sum(x < -0.005 for x in d)}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
