"""Refinement's edge evaluations timed on the GPU and on the host, one by one, for its placement.

    python -m benchmarks.refine_placement [--cases BB] [--mode accurate] [--limit N]
        [--warm 12] [--name refine_placement] [--out DIR]

Every evaluation that ``refine`` makes while aligning the cases on the GPU (with
``refine.HOST_CELLS`` and ``refine.HOST_EDGE_CELLS`` at -1, so that each one runs there) is also
made on the host, in numba, on the same alignment: a batch with its edges over the threads, a
lone edge twice, on one thread and with its column scores and tile over the threads
(``refine.THREADED_EDGE_CELLS``). All are timed (the GPU one synchronised) and their results
compared. The host's copies of the edges and library
(``refine._Host``, made once per refinement in the library) are not timed. A case's evaluations
all follow the GPU's results, which equal the host's (the ``same`` column; a difference is an
error). The summary gives the total time of the evaluations under placement rules: lone edges
(a round's follow-ups) on the host up to a number of columns², of them on one thread up to
another; batches on the host up to a number of (edges per host thread) x columns²; each on the
GPU above; and the least possible (each evaluation where it was fastest). ``--warm`` cases are
aligned first, untimed, to compile.
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
    default_threaded = refine_module.THREADED_EDGE_CELLS

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
        row = {
            "case": record["case"],
            "edges": sides.shape[0],
            "width": codes.shape[1],
            "n": codes.shape[0],
            "gpu_ms": round(gpu_s * 1000, 3),
        }
        # a lone edge on one thread and spread over them; a batch as it is
        lone = sides.shape[0] == 1
        for label, threaded in (("host_ms", 2**62), ("threaded_ms", -1))[: 1 + lone]:
            refine_module.THREADED_EDGE_CELLS = threaded
            t = time.perf_counter()
            want = host.evaluate(codes, torch.arange(sides.shape[0]))
            row[label] = round((time.perf_counter() - t) * 1000, 3)
            same = want[:3] == got[:3] and all(
                torch.equal(a.cpu(), b.cpu()) for a, b in zip(want[3], got[3])
            )
            if not same:
                raise RuntimeError(f"{record['case']}: host and GPU evaluations differ")
        refine_module.THREADED_EDGE_CELLS = default_threaded
        record["rows"].append(row)
        return got

    return both


def _summary(rows, threads):
    """Total evaluation time under placement rules (lone edges and batches on the host up to
    their thresholds; a lone edge on one thread up to ``one``, over all threads above)."""

    def time_of(r, one, edge, batch):
        cells = -(-r["edges"] // threads) * r["width"] ** 2
        if r["edges"] > 1:
            return r["host_ms"] if cells <= batch else r["gpu_ms"]
        if cells > edge:
            return r["gpu_ms"]
        return r["host_ms"] if cells <= one else r["threaded_ms"]

    out = []
    rules = [(20, 20, 20)] + [(one, edge, 20) for edge in SWEEP[1:] for one in (20, 21, 22, 24)]
    rules += [(21, 22, 21), (21, 22, 22)]
    # one thread for every lone edge on the host: one >= edge, listed once
    rules = list(dict.fromkeys((min(one, edge), edge, batch) for one, edge, batch in rules))
    for one, edge, batch in rules:
        total = sum(time_of(r, 1 << one, 1 << edge, 1 << batch) for r in rows)
        one_text = "all" if one >= edge else f"2^{one}"
        out.append(
            {
                "lone_edges_on_host": f"2^{edge}",
                "of_them_on_one_thread": one_text,
                "batches_on_host": f"2^{batch}",
                "total_s": round(total / 1000, 3),
            }
        )
    best = sum(min(v for k, v in r.items() if k.endswith("_ms")) for r in rows)
    out.append({"lone_edges_on_host": "each where fastest", "total_s": round(best / 1000, 3)})
    lone = [r for r in rows if r["edges"] == 1]
    batch = [r for r in rows if r["edges"] > 1]
    for label, sel, key in (
        (f"all {len(lone)} lone edges on the GPU", lone, "gpu_ms"),
        ("all lone edges on the host, one thread", lone, "host_ms"),
        ("all lone edges on the host, all threads", lone, "threaded_ms"),
        (f"all {len(batch)} batches on the GPU", batch, "gpu_ms"),
        ("all batches on the host", batch, "host_ms"),
    ):
        total = sum(r[key] for r in sel) / 1000
        out.append({"lone_edges_on_host": label, "total_s": round(total, 3)})
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
        print("==", *row.values())
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
