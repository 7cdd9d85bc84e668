"""Per-case wall time of torchmsa under settings A, B, ... interleaved in one process.

    python -m benchmarks.ab_cases [--dataset balibase3] [--cases small] [--device cpu]
        [--limit N] [--mode default] [--variant base]
        [--variant nocap:progressive.CPU_PAIR_CELLS=2**40] [--reps 3] [--threads N]
        [--name ab_cases] [--out DIR]

A variant is ``label`` or ``label:module.NAME=expr,...`` (modules of ``torchmsa``; ``expr`` is
a Python integer expression). Each repetition aligns every case once under every variant in
turn, so a variant never gains from running on a quieter stretch of a shared machine, and the
order of the variants turns from case to case, so none always runs first; a case's time is its
best repetition. ``--cases small`` takes BAliBASE's small cases (``e2e_gpu.small_case``),
``all`` every case, else a comma list of names, prefixes or reference sets; ``--limit`` keeps
that many of them, evenly spaced. Every variant must give the same alignments (the settings
under test only move work); a difference is an error.
"""

from __future__ import annotations

import argparse
import statistics
import time

from benchmarks.accuracy import case_files, load_cases, select_cases
from benchmarks.common import DATA_DIR, parse_variant, run_metadata, write_results
from benchmarks.e2e_gpu import pick_cases


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default="balibase3")
    ap.add_argument("--cases", default="small")
    ap.add_argument("--limit", type=int, default=None, help="at most this many, evenly spaced")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--mode", default="default")
    ap.add_argument("--variant", action="append", default=None)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--threads", type=int, default=0, help="numba/torch threads (0: as is)")
    ap.add_argument("--name", default="ab_cases")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    import numba
    import torch

    import torchmsa
    from torchmsa.io import read_sequences

    if args.threads:
        torch.set_num_threads(args.threads)
        numba.set_num_threads(args.threads)
    variants = [parse_variant(v) for v in (args.variant or ["base"])]
    data = DATA_DIR / args.dataset
    table = load_cases(data)
    picked = pick_cases(table, args.cases)
    picked = select_cases(picked, [], args.limit)
    if not picked:
        raise SystemExit(f"error: no {args.dataset} case matches --cases {args.cases}")
    inputs = {c["case"]: read_sequences(str(case_files(data, c["case"])[0])) for c in picked}
    defaults = {(m, n): getattr(m, n) for _, sets in variants for m, n, _ in sets}

    def run(case, sets):
        for (m, n), v in defaults.items():
            setattr(m, n, v)
        for m, n, v in sets:
            setattr(m, n, v)
        t = time.perf_counter()
        aln = torchmsa.align(inputs[case], device=args.device, mode=args.mode)
        if aln.codes.is_cuda:
            torch.cuda.synchronize()
        return time.perf_counter() - t, aln.codes.cpu()

    for case in inputs:  # compiles and caches, untimed
        run(case, variants[0][1])
    best: dict[tuple[str, str], float] = {}
    first: dict[str, torch.Tensor] = {}
    for rep in range(args.reps):
        for k, case in enumerate(inputs):
            # the variants' order turns from case to case and repetition to repetition: with a
            # fixed order, the first and last slots ran slower (ab_cases-h100-jobs.md)
            turn = (k + rep) % len(variants)
            for label, sets in variants[turn:] + variants[:turn]:
                seconds, codes = run(case, sets)
                key = (label, case)
                best[key] = min(best.get(key, seconds), seconds)
                if first.setdefault(case, codes) is not codes and not torch.equal(
                    first[case], codes
                ):
                    raise RuntimeError(f"{case}: variant {label} changed the alignment")
    for (m, n), v in defaults.items():
        setattr(m, n, v)
    rows = [
        {"variant": label, "case": case, "ms": round(1000 * best[label, case], 2)}
        for label, _ in variants
        for case in inputs
    ]
    summary = []
    for label, _ in variants:
        ms = [best[label, c] * 1000 for c in inputs]
        summary.append(
            {
                "variant": label,
                "cases": len(ms),
                "median_ms": round(statistics.median(ms), 2),
                "total_s": round(sum(ms) / 1000, 3),
            }
        )
        print(f"== {label}: median {summary[-1]['median_ms']} ms, total {summary[-1]['total_s']} s")
    settings = "; ".join(
        f"`{label}`: " + (", ".join(f"{m.__name__}.{n}={v}" for m, n, v in sets) or "defaults")
        for label, sets in variants
    )
    header = (
        f"{args.dataset} cases `{args.cases}` on `{args.device}`, mode `{args.mode}`: best of "
        f"{args.reps} interleaved repetitions per case, the variants' order turning; every "
        f"variant gave the same alignments. Variants: {settings}.\n"
    )
    meta = run_metadata(args.device)
    write_results(args.name, summary, header, args.out, meta)
    write_results(f"{args.name}-cases", rows, "", args.out, meta, markdown=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
