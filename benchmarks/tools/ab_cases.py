"""Per-case wall time of torchmsa under settings A, B, ... interleaved in one process.

    python -m benchmarks.tools.ab_cases [--dataset balibase3] [--cases small] [--device cpu]
        [--limit N] [--mode default] [--variant base]
        [--variant nocap:policy.cpu_pair_cells=2**40] [--reps 3] [--threads N] [--out DIR]

A variant is ``label`` or ``label:KIND.NAME=VALUE,...`` with ``KIND`` one of ``config``,
``policy``, ``budget`` (``torchmsa.config``'s objects; an integer value may be written
``2**40`` or ``1 << 22``). Each repetition aligns every case once under every variant in turn,
so a variant never gains from running on a quieter stretch of a shared machine, and the order
of the variants turns from case to case, so none always runs first; a case's time is its best
repetition. ``--cases small`` takes BAliBASE's small cases, ``all`` every case, else a comma
list of names, prefixes or reference sets; ``--limit`` keeps that many, evenly spaced. Variants
that differ only in ``policy`` and ``budget`` must give the same alignments (those settings
only move work); a difference is an error. Appends one row per variant and case (``ms``: the
best repetition) to ``ab_cases.csv`` in ``--out`` (``benchmarks/results``).
"""

from __future__ import annotations

import argparse
import statistics
import time

from benchmarks.harness import (
    DATA_DIR,
    append_rows,
    case_files,
    load_cases,
    markdown_table,
    parse_variant,
    pick_cases,
    run_metadata,
    select_cases,
    set_threads,
)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default="balibase3")
    ap.add_argument("--cases", default="small")
    ap.add_argument("--limit", type=int, default=None, help="at most this many, evenly spaced")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--mode", default="default")
    ap.add_argument("--variant", action="append", default=None, metavar="LABEL[:KIND.NAME=V,..]")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--threads", type=int, default=0, help="numba/torch threads (0: as is)")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    import torch

    import torchmsa
    from torchmsa.errors import ArgumentError
    from torchmsa.io import read_sequences

    if args.threads:
        set_threads(args.threads)
    try:
        variants = [parse_variant(v) for v in (args.variant or ["base"])]
    except ArgumentError as exc:
        ap.error(str(exc))
    if len({v.label for v in variants}) != len(variants):
        ap.error("give each --variant its own label")
    data = DATA_DIR / args.dataset
    picked = select_cases(pick_cases(load_cases(data), args.cases), [], args.limit)
    if not picked:
        raise SystemExit(f"error: no {args.dataset} case matches --cases {args.cases}")
    inputs = {c["case"]: read_sequences(str(case_files(data, c["case"])[0])) for c in picked}

    def run(case, variant):
        t = time.perf_counter()
        aln = torchmsa.align(inputs[case], device=args.device, mode=args.mode, **variant.kwargs())
        if aln.codes.is_cuda:
            torch.cuda.synchronize()
        return time.perf_counter() - t, aln.codes.cpu()

    for case in inputs:  # compiles and caches, untimed
        run(case, variants[0])
    best: dict[tuple[str, str], float] = {}
    first: dict[tuple[str, object], torch.Tensor] = {}
    for rep in range(args.reps):
        for k, case in enumerate(inputs):
            # the variants' order turns from case to case and repetition to repetition: with a
            # fixed order, the first and last slots ran slower
            turn = (k + rep) % len(variants)
            for variant in variants[turn:] + variants[:turn]:
                seconds, codes = run(case, variant)
                key = (variant.label, case)
                best[key] = min(best.get(key, seconds), seconds)
                same = first.setdefault((case, variant.config), codes)
                if same is not codes and not torch.equal(same, codes):
                    raise RuntimeError(f"{case}: variant {variant.label} changed the alignment")
    rows = [
        {
            "dataset": args.dataset,
            "case": case,
            "mode": args.mode,
            **v.columns(),
            "reps": args.reps,
            "ms": round(1000 * best[v.label, case], 3),
        }
        for v in variants
        for case in inputs
    ]
    summary = []
    for v in variants:
        ms = [best[v.label, c] * 1000 for c in inputs]
        summary.append(
            {
                "variant": v.label,
                "cases": len(ms),
                "median_ms": round(statistics.median(ms), 2),
                "total_s": round(sum(ms) / 1000, 3),
            }
        )
        print(
            f"== {v.label}: median {summary[-1]['median_ms']} ms, total {summary[-1]['total_s']} s"
        )
    path = append_rows("ab_cases", rows, run_metadata(args.device), args.out)
    print(markdown_table(summary))
    print(f"appended {len(rows)} rows to {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
