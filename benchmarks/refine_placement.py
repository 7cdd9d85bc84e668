"""Refinement's edge evaluations timed on the GPU and on the host, one by one, for its placement.

    python -m benchmarks.refine_placement [--cases BB] [--mode accurate] [--limit N]
        [--warm 12] [--name refine_placement] [--out DIR]

Every evaluation that ``refine`` makes while aligning the cases on the GPU (with
``refine.HOST_CELLS`` and ``refine.HOST_EDGE_CELLS`` at -1, so that each one runs there) is also
made on the host, in numba over all its threads, on the same alignment; both are timed (the GPU
one synchronised) and their results compared. The host's copies of the edges and library
(``refine._Host``, made once per refinement in the library) are not timed. A case's evaluations
all follow the GPU's results, which equal the host's (the ``same`` column; a difference is an
error). The summary gives the total time of the evaluations under a placement rule: lone edges
(a round's follow-ups) on the host up to ``edge_cells`` columns², batches up to ``batch_cells``
(edges per host thread) x columns², each on the GPU above; and the least possible (each
evaluation where it was faster). ``--warm`` cases are aligned first, untimed, to compile.
"""

from __future__ import annotations

import argparse
import time

from benchmarks.accuracy import case_files, load_cases, select_cases
from benchmarks.common import DATA_DIR, run_metadata, write_results
from benchmarks.e2e_gpu import pick_cases

SWEEP = (20, 21, 22, 23, 24)  # log2 of the thresholds in the summary


def _timed_evaluations(refine_module, record):
    """Replaces ``evaluate_partitions`` with one that also evaluates on the host."""
    import torch

    real = refine_module.evaluate_partitions

    def both(st, sides, scoring, backend, cw=0):
        torch.cuda.synchronize()
        t = time.perf_counter()
        got = real(st, sides, scoring, backend, cw)
        torch.cuda.synchronize()
        gpu_s = time.perf_counter() - t
        if record is None:
            return got
        host = refine_module._Host(sides.cpu(), st.w, scoring, st.gap, st.lib, cw)
        codes = st.codes.cpu()
        t = time.perf_counter()
        want = host.evaluate(codes, torch.arange(sides.shape[0]))
        host_s = time.perf_counter() - t
        same = want[:3] == got[:3] and all(
            torch.equal(a.cpu(), b.cpu()) for a, b in zip(want[3], got[3])
        )
        if not same:
            raise RuntimeError(f"{record['case']}: host and GPU evaluations differ")
        record["rows"].append(
            {
                "case": record["case"],
                "edges": sides.shape[0],
                "width": codes.shape[1],
                "n": codes.shape[0],
                "gpu_ms": round(gpu_s * 1000, 3),
                "host_ms": round(host_s * 1000, 3),
            }
        )
        return got

    return both


def _summary(rows, threads):
    out = []

    def on_host(r, edge_cells, batch_cells):
        cells = -(-r["edges"] // threads) * r["width"] ** 2
        return cells <= (edge_cells if r["edges"] == 1 else batch_cells)

    for edge_log in SWEEP:
        for batch_log in SWEEP[:3]:
            total = sum(
                r["host_ms"] if on_host(r, 1 << edge_log, 1 << batch_log) else r["gpu_ms"]
                for r in rows
            )
            out.append(
                {
                    "rule": f"edge 2^{edge_log}, batch 2^{batch_log}",
                    "lone_on_host": sum(
                        on_host(r, 1 << edge_log, 1 << batch_log) for r in rows if r["edges"] == 1
                    ),
                    "total_s": round(total / 1000, 3),
                }
            )
    best = sum(min(r["host_ms"], r["gpu_ms"]) for r in rows)
    out.append({"rule": "each where faster", "lone_on_host": "", "total_s": round(best / 1000, 3)})
    for lone in (True, False):
        sel = [r for r in rows if (r["edges"] == 1) == lone]
        out.append(
            {
                "rule": f"all on the GPU ({'lone edges' if lone else 'batches'}: {len(sel)})",
                "lone_on_host": "",
                "total_s": round(sum(r["gpu_ms"] for r in sel) / 1000, 3),
            }
        )
        out.append(
            {
                "rule": f"all on the host ({'lone edges' if lone else 'batches'})",
                "lone_on_host": "",
                "total_s": round(sum(r["host_ms"] for r in sel) / 1000, 3),
            }
        )
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default="balibase3")
    ap.add_argument("--cases", default="BB")
    ap.add_argument("--mode", default="accurate")
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--warm", type=int, default=12, help="cases aligned untimed first")
    ap.add_argument("--name", default="refine_placement")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    import numba
    import torch

    import torchmsa
    from torchmsa import refine as refine_module

    if not torch.cuda.is_available():
        raise SystemExit("error: refine_placement needs a CUDA device")
    data = DATA_DIR / args.dataset
    picked = select_cases(pick_cases(load_cases(data), args.cases), [], args.limit)
    if not picked:
        raise SystemExit(f"error: no {args.dataset} case matches --cases {args.cases}")
    paths = {c["case"]: str(case_files(data, c["case"])[0]) for c in picked}
    refine_module.HOST_CELLS = refine_module.HOST_EDGE_CELLS = -1
    record = {"case": None, "rows": []}
    refine_module.evaluate_partitions = _timed_evaluations(refine_module, None)
    for case in list(paths)[:: max(1, len(paths) // max(1, args.warm))]:
        torchmsa.align(paths[case], device="cuda", mode=args.mode)
    refine_module.evaluate_partitions = _timed_evaluations(refine_module, record)
    for case, path in paths.items():
        record["case"] = case
        torchmsa.align(path, device="cuda", mode=args.mode)
    threads = numba.get_num_threads()
    summary = _summary(record["rows"], threads)
    for row in summary:
        print(f"== {row['rule']}: {row['total_s']} s")
    header = (
        f"{len(paths)} {args.dataset} cases (`{args.cases}`), mode `{args.mode}`: every "
        f"refinement evaluation timed on the GPU and on the host ({threads} numba threads), "
        "same results each time. Total evaluation time under each placement rule (module "
        "docstring).\n"
    )
    meta = run_metadata("cuda")
    write_results(args.name, summary, header, args.out, meta)
    write_results(f"{args.name}-evaluations", record["rows"], "", args.out, meta, markdown=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
