"""The occupancy floor of profile scores (``torchmsa/ops/colscores.py``) on and off, on the CPU.

    python -m benchmarks.occupancy_floor [--sets homfam:rhv,balifam10000,balifam1000,balibase3]
        [--shifts 40,5] [--mode default] [--threads 2] [--name occupancy_floor] [--out DIR]

For every case of each set (``dataset`` or ``dataset:case``), default mode on the CPU under each
``OCC_SHIFT`` of ``--shifts`` (a column with under ``2^-shift`` of its profile's weight scores
as if it had that much; 40 switches the floor off for any real weight). The first guide tree of
a case is built once and reused for every shift, so only the progressive pass and what follows
it differ. Writes per-case rows (``<name>-cases.csv``) and per set and shift the mean SP and TC
over the cases and how many cases each shift changed against the first (``<name>.md``).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict

from benchmarks.accuracy import case_files, load_cases
from benchmarks.common import DATA_DIR, run_metadata, write_results
from torchmsa.metrics import restrict_to_reference, score_alignment


def _set_shift(shift: int) -> None:
    """Every module that reads ``OCC_SHIFT`` (cpu/merge.py takes it as an argument)."""
    from torchmsa import progressive
    from torchmsa.cpu import dp_rows
    from torchmsa.ops import colscores

    dp_rows.OCC_SHIFT = colscores.OCC_SHIFT = progressive.OCC_SHIFT = shift


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", default="homfam:rhv,balifam10000,balifam1000,balibase3")
    ap.add_argument("--shifts", default="40,5")
    ap.add_argument("--mode", default="default")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--name", default="occupancy_floor")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    import torch

    import torchmsa
    import torchmsa.pipeline as pipeline
    from torchmsa.cpu import dp_rows

    torch.set_num_threads(args.threads)
    shifts = [int(s) for s in args.shifts.split(",")]
    default_shift = dp_rows.OCC_SHIFT
    own_tree = pipeline._first_tree
    rows = []
    for spec in args.sets.split(","):
        dataset, _, only = spec.partition(":")
        cases = [only] if only else [r["case"] for r in load_cases(DATA_DIR / dataset)]
        for case in cases:
            path, ref, core = case_files(DATA_DIR / dataset, case)
            memo = {}

            def first_tree(batch, method, backend, memo=memo):
                if method not in memo:
                    memo[method] = own_tree(batch, method, backend)
                return memo[method]

            pipeline._first_tree = first_tree
            try:
                for shift in shifts:
                    _set_shift(shift)
                    t = time.perf_counter()
                    aln = torchmsa.align(str(path), device="cpu", mode=args.mode)
                    seconds = time.perf_counter() - t
                    test = restrict_to_reference(list(zip(aln.names, aln.rows)), ref)
                    s = score_alignment(test, ref, core)
                    rows.append(
                        {
                            "dataset": dataset,
                            "case": case,
                            "occ_shift": shift,
                            "sp": round(s.sp, 6),
                            "tc": round(s.tc, 6),
                            "seconds": round(seconds, 3),
                        }
                    )
                    print(rows[-1], flush=True)
            finally:
                pipeline._first_tree = own_tree
                _set_shift(default_shift)
    summary = _summary(rows, shifts)
    header = (
        f"Mode `{args.mode}` on the CPU ({args.threads} threads) under each OCC_SHIFT (40: no "
        "floor); each case's first guide tree is built once and shared by the shifts (so "
        "`seconds` of the first shift include it). SP / TC on the reference rows and core "
        "columns; `changed`: cases whose SP or TC differs from the first shift's, `better_tc` / "
        "`worse_tc`: of those, TC up / down.\n"
    )
    meta = run_metadata("cpu")
    write_results(args.name, summary, header, out_dir=args.out, metadata=meta)
    write_results(
        f"{args.name}-cases", rows, header, out_dir=args.out, metadata=meta, markdown=False
    )
    return 0


def _summary(rows, shifts):
    by = defaultdict(dict)
    for r in rows:
        by[(r["dataset"], r["case"])][r["occ_shift"]] = r
    out = []
    for dataset in dict.fromkeys(r["dataset"] for r in rows):
        keys = [k for k in by if k[0] == dataset]
        for shift in shifts:
            got = [by[k][shift] for k in keys]
            first = [by[k][shifts[0]] for k in keys]
            diff = [(g, f) for g, f in zip(got, first) if (g["sp"], g["tc"]) != (f["sp"], f["tc"])]
            out.append(
                {
                    "dataset": dataset,
                    "occ_shift": shift,
                    "cases": len(got),
                    "sp": round(sum(g["sp"] for g in got) / len(got), 4),
                    "tc": round(sum(g["tc"] for g in got) / len(got), 4),
                    "changed": len(diff),
                    "better_tc": sum(g["tc"] > f["tc"] for g, f in diff),
                    "worse_tc": sum(g["tc"] < f["tc"] for g, f in diff),
                }
            )
    return out


if __name__ == "__main__":
    sys.exit(main())
