"""Refinement's round cap and follow-ups against accuracy and serial evaluations (CPU).

    python -m benchmarks.refine_rounds [--dataset balibase3] [--cases BB] [--limit 24]
        [--mode accurate] [--settings 16x8,16x0,8x8,4x8,0x0] [--threads 2]
        [--name refine_rounds] [--out DIR]

A setting ``RxF`` caps refinement at R rounds, each one batch over every tree edge, the best
gain applied, then up to F of the next candidates re-evaluated one by one
(``torchmsa.refine.FOLLOW_UPS``). For every case and setting: SP / TC, wall time, the edges
applied and the evaluations (``evaluations``: calls, each a serial step whatever its number of
edges; on a GPU each is a launch sequence or a host call, so this is what small cases pay).
The first setting is the reference for ``changed`` in the summary.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict

from benchmarks.accuracy import case_files, load_cases, select_cases
from benchmarks.common import DATA_DIR, run_metadata, write_results
from torchmsa.metrics import restrict_to_reference, score_alignment


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default="balibase3")
    ap.add_argument("--cases", nargs="*", default=["BB"])
    ap.add_argument("--limit", type=int, default=24)
    ap.add_argument("--mode", default="accurate")
    ap.add_argument("--settings", default="16x8,16x0,8x8,4x8,0x0")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--name", default="refine_rounds")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    import numba
    import torch

    import torchmsa
    from torchmsa import pipeline, refine

    torch.set_num_threads(args.threads)
    numba.set_num_threads(args.threads)
    settings = [tuple(int(x) for x in s.split("x")) for s in args.settings.split(",")]
    data = DATA_DIR / args.dataset
    cases = select_cases(load_cases(data), args.cases, args.limit)
    rounds0, follow0 = dict(pipeline.REFINE_ROUNDS), refine.FOLLOW_UPS
    calls = {"n": 0}
    real_host, real_batch = refine._Host.evaluate, refine.evaluate_partitions

    def on_host(*a, **k):
        calls["n"] += 1
        return real_host(*a, **k)

    def batched(*a, **k):
        calls["n"] += 1
        return real_batch(*a, **k)

    refine._Host.evaluate, refine.evaluate_partitions = on_host, batched
    rows = []
    try:
        for case in cases:
            path, ref, core = case_files(data, case["case"])
            for r, f in settings:
                pipeline.REFINE_ROUNDS[args.mode] = r
                refine.FOLLOW_UPS = f
                calls["n"] = 0
                t = time.perf_counter()
                aln = torchmsa.align(str(path), device="cpu", mode=args.mode)
                seconds = time.perf_counter() - t
                s = score_alignment(
                    restrict_to_reference(list(zip(aln.names, aln.rows)), ref), ref, core
                )
                rows.append(
                    {
                        "case": case["case"],
                        "ref_set": case["ref_set"],
                        "setting": f"{r}x{f}",
                        "sp": round(s.sp, 6),
                        "tc": round(s.tc, 6),
                        "seconds": round(seconds, 3),
                        "applied": aln.metadata.get("refined_edges", 0),
                        "evaluations": calls["n"],
                    }
                )
                print(rows[-1], flush=True)
    finally:
        pipeline.REFINE_ROUNDS.clear()
        pipeline.REFINE_ROUNDS.update(rounds0)
        refine.FOLLOW_UPS = follow0
        refine._Host.evaluate, refine.evaluate_partitions = real_host, real_batch
    header = (
        f"Mode `{args.mode}` on the CPU ({args.threads} threads), dataset `{args.dataset}`, "
        f"{len(cases)} cases, under each refinement setting RxF (at most R rounds, F follow-ups "
        "a round). SP / TC in percent on the reference rows and core columns; `seconds` summed "
        "wall time; `evaluations` summed serial evaluation steps; `applied` summed edges "
        "applied; `changed`, `better_tc`, `worse_tc`: cases whose SP or TC differs from the "
        "first setting's, and of those TC up / down.\n"
    )
    meta = run_metadata("cpu")
    write_results(args.name, _summary(rows, settings), header, args.out, meta)
    write_results(f"{args.name}-cases", rows, header, args.out, meta, markdown=False)
    return 0


def _summary(rows, settings):
    by = defaultdict(dict)
    for r in rows:
        by[r["case"]][r["setting"]] = r
    first = f"{settings[0][0]}x{settings[0][1]}"
    out = []
    for r, f in settings:
        name = f"{r}x{f}"
        got = [by[c][name] for c in by]
        ref = [by[c][first] for c in by]
        diff = [(g, h) for g, h in zip(got, ref) if (g["sp"], g["tc"]) != (h["sp"], h["tc"])]
        out.append(
            {
                "setting": name,
                "cases": len(got),
                "sp": round(100 * sum(g["sp"] for g in got) / len(got), 2),
                "tc": round(100 * sum(g["tc"] for g in got) / len(got), 2),
                "seconds": round(sum(g["seconds"] for g in got), 1),
                "evaluations": sum(g["evaluations"] for g in got),
                "applied": sum(g["applied"] for g in got),
                "changed": len(diff),
                "better_tc": sum(g["tc"] > h["tc"] for g, h in diff),
                "worse_tc": sum(g["tc"] < h["tc"] for g, h in diff),
            }
        )
    return out


if __name__ == "__main__":
    sys.exit(main())
