"""Merge the shards of an ``e2e_gpu`` table (``--shard K/N`` runs) into one results file.

    python -m benchmarks.merge_results --name e2e_gpu-accurate-balibase3 \
        benchmarks/results/e2e_gpu-accurate-balibase3-s0 ... [--tools a,b] [--out DIR]

Each argument is a shard's stem: ``<stem>.csv`` (per tool: its wall time) and
``<stem>-cases.csv`` (per case: SP, TC, seconds, overhead). The merged table has, per dataset
and tool, the cases, failures, mean SP and TC (over all cases and per reference set), the summed
wall time and the median overhead; the shards' provenance (device, commit, versions, dates) is
listed above it. ``--tools`` keeps only those tools (a shard may hold others, run beside them).
A case that two shards both hold for one tool is an error. Writes ``<name>.md``/``.csv`` and
``<name>-cases.csv``.
"""

from __future__ import annotations

import argparse
import csv
import math
import statistics
import sys
from pathlib import Path

from benchmarks.common import RESULTS_DIR, write_results

PROVENANCE = ("device", "commit", "torch", "triton", "date")


def _read(path: Path) -> list[dict[str, str]]:
    if not path.exists():
        raise SystemExit(f"{path}: no such file; pass shard stems without .csv")
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def _num(value: str) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def merge(stems: list[Path], tools=None) -> tuple[list[dict], list[dict], list[str]]:
    """Per (dataset, tool) summaries, every case row, and one provenance line per shard;
    ``tools``: keep only these."""
    cases, walls, warm, prov, seen = [], {}, {}, [], {}
    for stem in stems:
        summary = _read(stem.with_name(stem.name + ".csv"))
        rows = _read(stem.with_name(stem.name + "-cases.csv"))
        if tools is not None:
            summary = [s for s in summary if s["tool"] in tools]
            rows = [r for r in rows if r["tool"] in tools]
        for r in rows:
            key = (r["dataset"], r["tool"], r["case"])
            if key in seen:
                raise SystemExit(f"{stem.name} and {seen[key]} both hold {' '.join(key)}")
            seen[key] = stem.name
        for s in summary:
            key = (s["dataset"], s["tool"])
            walls[key] = walls.get(key, 0.0) + _num(s["wall_s"])
            warm[key] = warm.get(key, 0.0) + _num(s.get("warmup_s", "nan"))
        cases += rows
        first = rows[0] if rows else (summary[0] if summary else {})
        prov.append(f"{stem.name}: " + ", ".join(f"{k} {first.get(k, '?')}" for k in PROVENANCE))
    ref_sets = sorted({r["ref_set"] for r in cases})
    out = []
    for key in walls:
        rows = [r for r in cases if (r["dataset"], r["tool"]) == key]
        ok = [r for r in rows if not r["error"]]
        over = [_num(r["overhead_s"]) for r in ok if not math.isnan(_num(r["overhead_s"]))]
        row = {"dataset": key[0], "tool": key[1], "cases": len(rows)}
        row["failures"] = len(rows) - len(ok)
        for rs in ref_sets:
            sel = [_num(r["sp"]) for r in ok if r["ref_set"] == rs]
            if sel:
                row[f"sp_{rs}"] = round(statistics.fmean(sel), 4)
        row["sp"] = round(statistics.fmean(_num(r["sp"]) for r in ok), 4) if ok else math.nan
        row["tc"] = round(statistics.fmean(_num(r["tc"]) for r in ok), 4) if ok else math.nan
        row["wall_s"] = round(walls[key], 2)
        row["median_overhead_ms"] = round(1000 * statistics.median(over), 2) if over else math.nan
        small = [
            _num(r["overhead_s"])
            for r in ok
            if r.get("small") == "True" and not math.isnan(_num(r["overhead_s"]))
        ]
        if any("small" in r for r in ok):
            row["small_cases"] = sum(r.get("small") == "True" for r in ok)
            row["median_small_overhead_ms"] = (
                round(1000 * statistics.median(small), 2) if small else math.nan
            )
        row["warmup_s"] = round(warm[key], 2)
        out.append(row)
    return out, cases, prov


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("stems", nargs="+", type=Path)
    ap.add_argument("--name", required=True)
    ap.add_argument("--tools", default=None, help="comma list: merge only these tools")
    ap.add_argument("--out", default=str(RESULTS_DIR))
    args = ap.parse_args(argv)
    tools = set(args.tools.split(",")) if args.tools else None
    summary, cases, prov = merge(args.stems, tools)
    header = "Merged from these shards (one device call each):\n\n" + "\n".join(
        f"- {p}" for p in prov
    )
    meta = {"merged_shards": str(len(args.stems))}
    write_results(args.name, summary, header, out_dir=args.out, metadata=meta)
    write_results(f"{args.name}-cases", cases, out_dir=args.out, metadata=meta, markdown=False)
    for s in summary:
        print(s)
    return 0


if __name__ == "__main__":
    sys.exit(main())
