"""A hash of every case's alignment, to show that a change leaves the alignments alone.

    python -m benchmarks.tools.alignment_hashes [--dataset balibase3] [--mode default]
        [--device cpu] [--cases all|small|NAMES] [--config NAME=VALUE] [--policy NAME=VALUE]
        [--against FILE.csv] [--out DIR]

Aligns each case (``--cases``: every case, BAliBASE's small ones as in ``e2e_gpu``, or a comma
list of names, prefixes or reference sets) and records the SHA-1 of its alignment codes
(``uint8 [N, C]``, input order). ``--against`` an earlier run's CSV (any CSV with ``case`` and
``sha1`` columns: an old per-run file, or a tidy ``alignment_hashes.csv``, of which the last
row of each case of this dataset and mode counts) lists the cases whose hash differs and exits
1 if any does. Run it at two commits on one machine: equal hashes mean equal alignments,
whatever the timing. Appends one row per case to ``alignment_hashes.csv`` in ``--out``
(``benchmarks/results``).
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import sys
import time
from pathlib import Path

from benchmarks.harness import (
    DATA_DIR,
    add_settings_options,
    align_kwargs,
    append_rows,
    case_files,
    load_cases,
    parsed_settings,
    pick_cases,
    run_metadata,
    settings_columns,
)


def alignment_digest(aln) -> str:
    """SHA-1 of an alignment's codes (``uint8 [N, C]``, input order): equal digests, equal
    alignments."""
    return hashlib.sha1(aln.codes.cpu().numpy().tobytes()).hexdigest()


def read_hashes(path: str | Path, dataset: str = "", mode: str = "") -> dict[str, str]:
    """Case -> SHA-1 of a hashes CSV; where the file has ``dataset`` / ``mode`` columns, only
    the rows of ``dataset`` and ``mode`` count, the last row of a case winning."""
    out = {}
    with open(path, newline="") as fh:
        for row in csv.DictReader(fh):
            if dataset and row.get("dataset", dataset) not in (dataset, ""):
                continue
            if mode and row.get("mode", mode) not in (mode, ""):
                continue
            out[row["case"]] = row["sha1"]
    return out


def compare(rows: list[dict], before: dict[str, str], source: str) -> list[str]:
    """The cases of ``rows`` whose ``sha1`` differs from ``before``'s; a case that ``before``
    lacks is an error."""
    missing = [r["case"] for r in rows if r["case"] not in before]
    if missing:
        raise SystemExit(f"error: {source} lacks {len(missing)} cases, e.g. {missing[0]}")
    return [r["case"] for r in rows if before[r["case"]] != r["sha1"]]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default="balibase3")
    ap.add_argument("--mode", default="default")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--cases", default="all")
    ap.add_argument("--against", default=None, help="an earlier run's CSV to compare with")
    ap.add_argument("--data", type=Path, default=None, help=f"data root (default {DATA_DIR})")
    ap.add_argument("--out", default=None, help="results folder (default benchmarks/results)")
    add_settings_options(ap)
    args = ap.parse_args(argv)
    settings = parsed_settings(ap, args)
    import torchmsa

    data = (args.data or DATA_DIR) / args.dataset
    picked = pick_cases(load_cases(data), args.cases)
    if not picked:
        raise SystemExit(f"error: no {args.dataset} case matches --cases {args.cases}")
    before = read_hashes(args.against, args.dataset, args.mode) if args.against else None
    kwargs, columns = align_kwargs(*settings), settings_columns(*settings)
    rows, start = [], time.perf_counter()
    for case in picked:
        path = str(case_files(data, case["case"])[0])
        aln = torchmsa.align(path, device=args.device, mode=args.mode, **kwargs)
        rows.append(
            {
                "dataset": args.dataset,
                "case": case["case"],
                "mode": args.mode,
                **columns,
                "sha1": alignment_digest(aln),
            }
        )
    seconds = time.perf_counter() - start
    out = append_rows("alignment_hashes", rows, run_metadata(args.device), args.out)
    print(f"{len(rows)} cases in {seconds:.1f} s; appended to {out}")
    if before is None:
        return 0
    differ = compare(rows, before, args.against)
    print(f"against {args.against}: {len(differ)} of {len(rows)} differ")
    if differ:
        print("differing: " + " ".join(differ[:20]))
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
