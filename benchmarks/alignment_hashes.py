"""A hash of every case's alignment, to show that a change leaves the alignments alone.

    python -m benchmarks.alignment_hashes [--dataset balibase3] [--mode default] [--device cpu]
        [--cases all|small|NAMES] [--against FILE.csv] [--name alignment_hashes] [--out DIR]

Aligns each case (``--cases``: every case, BAliBASE's small ones as in ``e2e_gpu``, or a comma
list of names, prefixes or reference sets) and records the SHA-1 of its alignment codes
(``uint8 [N, C]``, input order). ``--against`` an earlier run's CSV counts the cases whose hash
differs and exits non-zero if any does. Run it at two commits (a worktree each) on one
machine: equal hashes mean equal alignments, whatever the timing.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import sys
import time

from benchmarks.accuracy import case_files, load_cases
from benchmarks.common import DATA_DIR, run_metadata, write_results
from benchmarks.e2e_gpu import pick_cases


def alignment_digest(aln) -> str:
    """SHA-1 of an alignment's codes (``uint8 [N, C]``, input order): equal digests, equal
    alignments."""
    return hashlib.sha1(aln.codes.cpu().numpy().tobytes()).hexdigest()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default="balibase3")
    ap.add_argument("--mode", default="default")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--cases", default="all")
    ap.add_argument("--against", default=None, help="an earlier run's CSV to compare with")
    ap.add_argument("--name", default="alignment_hashes")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    import torchmsa

    data = DATA_DIR / args.dataset
    table = load_cases(data)
    picked = pick_cases(table, args.cases)
    if not picked:
        raise SystemExit(f"error: no {args.dataset} case matches --cases {args.cases}")
    rows, start = [], time.perf_counter()
    for case in picked:
        aln = torchmsa.align(
            str(case_files(data, case["case"])[0]), device=args.device, mode=args.mode
        )
        rows.append({"case": case["case"], "sha1": alignment_digest(aln)})
    seconds = time.perf_counter() - start
    differ = None
    if args.against:
        with open(args.against, newline="") as fh:
            before = {r["case"]: r["sha1"] for r in csv.DictReader(fh)}
        missing = [r["case"] for r in rows if r["case"] not in before]
        if missing:
            raise SystemExit(f"error: {args.against} lacks {len(missing)} cases, e.g. {missing[0]}")
        differ = [r["case"] for r in rows if before[r["case"]] != r["sha1"]]
    header = (
        f"{args.dataset} cases `{args.cases}` in `{args.mode}` mode on `{args.device}`; "
        "per-case hashes in the CSV."
    )
    summary = {"cases": len(rows), "seconds": round(seconds, 1)}
    if differ is not None:
        summary["against"] = args.against
        summary["differ"] = len(differ)
        summary["first_differing"] = " ".join(differ[:10])
    meta = run_metadata(args.device)
    write_results(args.name, rows, header, args.out, meta, md_rows=[summary])
    print(summary)
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
