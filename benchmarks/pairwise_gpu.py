"""GPU pairwise DP throughput (Triton kernels) against the numba CPU path of the same machine.

10,000 local pairs of 300-residue proteins (BLOSUM62, open 10, extend 1) by default, the pairs
of ``benchmarks.pairwise_cpu``; GCUPS = DP cells (n * m summed over pairs) per second / 1e9.
Each GPU row is the median of ``--repeats`` timed runs after a warm-up run: "call" times the
public launcher on tensors already on the GPU (planning, query profile, kernels), "kernels" the
kernel launches alone (CUDA events). Results are checked equal to the CPU path before timing.
One pair of 10,000 residues shows what a single pair gets (lanes of one pair only).
``--sweep`` also times other launch shapes (lanes per pair q, rows per lane r, register cap)
and both best-cell trackings; ``--long-only`` runs the long pair alone.

    python -m benchmarks.pairwise_gpu [--pairs 10000] [--length 300] [--repeats 10] [--sweep]
        [--long-only]
"""

from __future__ import annotations

import argparse
import statistics
import sys

import numba
import numpy as np
import torch

from benchmarks.common import Timer, run_metadata, write_results
from benchmarks.pairwise_cpu import make_pairs
from torchmsa._triton import dp as tdp
from torchmsa._triton import dp_plan
from torchmsa.alphabet import PROTEIN, encode
from torchmsa.cpu import dp as cdp
from torchmsa.scoring import get_scoring

# (lanes per pair, rows per lane, register cap) for --sweep
SWEEP = [(16, 20, None), (16, 20, 128), (8, 20, 128), (32, 12, None)]
SWEEP_TRACE = [(16, 12, None), (32, 12, None)]
LONG = 10_000  # residues of the single long pair
# (lanes per pair, rows per lane) for the long pair in --sweep: more than 32 lanes span warps
SWEEP_LONG = [(32, 24), (64, 24), (128, 24), (128, 12)]


def _inputs(n_pairs: int, length: int):
    pairs = make_pairs(n_pairs, length)
    enc = [(encode(a, PROTEIN)[0], encode(b, PROTEIN)[0]) for a, b in pairs]
    ca = torch.from_numpy(np.stack([np.pad(x, (0, length - len(x))) for x, _ in enc]))
    cb = torch.from_numpy(np.stack([np.pad(y, (0, length - len(y))) for _, y in enc]))
    la = torch.tensor([len(x) for x, _ in enc], dtype=torch.int32)
    lb = torch.tensor([len(y) for _, y in enc], dtype=torch.int32)
    mat = torch.from_numpy(get_scoring("protein", "BLOSUM62", 10, 1).matrix.copy())
    return (ca, la, cb, lb, mat), float((la.long() * lb.long()).sum())


def _median_call(fn, repeats: int, cuda: bool) -> float:
    fn()
    times = []
    for _ in range(repeats):
        with Timer(cuda=cuda) as t:
            fn()
        times.append(t.seconds)
    return statistics.median(times)


def _median_kernels(calls, repeats: int) -> float:
    for c in calls:
        c()
    times = []
    for _ in range(repeats):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for c in calls:
            c()
        stop.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(stop) / 1e3)
    return statistics.median(times)


def _kernel_row(provider, args, trace, repeats, cells):
    """Kernels alone: all launches, and the fill kernel alone (``fill_gcups``)."""
    _, _, calls = tdp._prepare(args, trace)
    kernels = [c() for c in calls]
    seconds = _median_kernels(calls, repeats)
    fill = _median_kernels(calls[0::2] if trace else calls, repeats)
    plan = dp_plan.plan(args, trace)
    cfg = plan.chunks[0].config
    return {
        "provider": provider,
        "seconds": seconds,
        "gcups": cells / seconds / 1e9,
        "fill_gcups": cells / fill / 1e9,
        "q": cfg.q,
        "r": cfg.r,
        "maxnreg": cfg.maxnreg or "",
        "packed": plan.packed,
        "regs": "/".join(str(getattr(k, "n_regs", "")) for k in kernels),
        "spills": "/".join(str(getattr(k, "n_spills", "")) for k in kernels),
    }


def _batch_rows(args, rows, go, ge, mode) -> bool:
    """The 10,000-pair rows (and their sweep); ``False`` when results differ from the CPU."""
    cpu_in, cells = _inputs(args.pairs, args.length)
    gpu_in = [t.cuda() for t in cpu_in]
    ref_score = cdp.pairwise_score(*cpu_in, go, ge, mode)
    ref_info, ref_ops = cdp.pairwise_align(*cpu_in, go, ge, mode)
    if not torch.equal(tdp.pairwise_score(*gpu_in, go, ge, mode).cpu(), ref_score):
        print("error: Triton and CPU scores differ", file=sys.stderr)
        return False
    info, ops = tdp.pairwise_align(*gpu_in, go, ge, mode)
    if not (torch.equal(info.cpu(), ref_info) and torch.equal(ops.cpu(), ref_ops)):
        print("error: Triton and CPU alignments differ", file=sys.stderr)
        return False

    def call_row(provider, fn, cuda, repeats):
        seconds = _median_call(fn, repeats, cuda)
        rows.append({"provider": provider, "seconds": seconds, "gcups": cells / seconds / 1e9})

    pair_args = dp_plan.pair_args(*gpu_in, go, ge, mode)
    rows.append(_kernel_row("triton score-only (kernels)", pair_args, False, args.repeats, cells))
    call_row("triton score-only (call)", lambda: tdp.pairwise_score(*gpu_in, go, ge, mode),
             True, args.repeats)  # fmt: skip
    align_args = dp_plan.pair_args(*gpu_in, go, ge, mode)
    width = gpu_in[0].shape[1] + gpu_in[2].shape[1]
    align_args.ops = torch.zeros((args.pairs, width), dtype=torch.uint8, device="cuda")
    align_args.ops_off = torch.arange(args.pairs, device="cuda") * width
    rows.append(_kernel_row("triton traceback (kernels)", align_args, True, args.repeats, cells))
    call_row("triton traceback (call)", lambda: tdp.pairwise_align(*gpu_in, go, ge, mode),
             True, args.repeats)  # fmt: skip
    threads = numba.get_num_threads()
    cpu_score = lambda: cdp.pairwise_score(*cpu_in, go, ge, mode)  # noqa: E731
    cpu_align = lambda: cdp.pairwise_align(*cpu_in, go, ge, mode)  # noqa: E731
    call_row(f"numba CPU score-only ({threads} threads)", cpu_score, False, args.cpu_repeats)
    call_row(f"numba CPU traceback ({threads} threads)", cpu_align, False, args.cpu_repeats)
    if not args.sweep:
        return True
    shapes = [(None, False, False)] + [(s, True, False) for s in SWEEP]
    shapes += [(s, True, True) for s in SWEEP_TRACE]
    for shape, packed, trace in shapes:
        dp_plan.PACKED_TRACKING = packed
        if shape is not None:
            q, r, cap = shape
            dp_plan.FORCE_CONFIG = dp_plan.Config(q=q, r=r, pb=max(1, 32 // q), maxnreg=cap)
        what = "traceback" if trace else "score-only"
        label = f"sweep {what} {shape or 'auto'} {'packed' if packed else 'unpacked'}"
        row = _kernel_row(label, align_args if trace else pair_args, trace, args.repeats, cells)
        rows.append(row)
        print(f"{label:<52} {row['gcups']:9.1f} GCUPS  fill {row['fill_gcups']:9.1f}", flush=True)
    dp_plan.FORCE_CONFIG, dp_plan.PACKED_TRACKING = None, True
    return True


def _long_rows(args, rows, go, ge, mode) -> bool:
    """One pair of ``LONG`` residues (intra-pair parallelism only), auto and swept shapes."""
    long_cpu, cells = _inputs(1, LONG)
    long_gpu = [t.cuda() for t in long_cpu]
    ref = cdp.pairwise_score(*long_cpu, go, ge, mode)
    long_args = dp_plan.pair_args(*long_gpu, go, ge, mode)
    shapes = [None] + (SWEEP_LONG if args.sweep else [])
    for shape in shapes:
        if shape is not None:
            q, r = shape
            dp_plan.FORCE_CONFIG = dp_plan.Config(q=q, r=r, pb=1, num_warps=max(1, q // 32))
        if not torch.equal(tdp.pairwise_score(*long_gpu, go, ge, mode).cpu(), ref):
            print(
                f"error: Triton and CPU scores of the long pair differ ({shape})", file=sys.stderr
            )
            return False
        label = f"triton score-only, 1 pair {LONG}x{LONG}, {'auto' if shape is None else shape}"
        rows.append(_kernel_row(label + " (kernels)", long_args, False, 3, cells))
        print(f"{label:<52} {rows[-1]['gcups']:9.2f} GCUPS", flush=True)
    dp_plan.FORCE_CONFIG = None
    return True


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=10_000)
    ap.add_argument("--length", type=int, default=300)
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--cpu-repeats", type=int, default=2)
    ap.add_argument("--sweep", action="store_true", help="also time other launch shapes")
    ap.add_argument("--long-only", action="store_true", help="only the single long pair")
    ap.add_argument("--out", default=None, help="results folder (default benchmarks/results)")
    args = ap.parse_args(argv)
    if not torch.cuda.is_available():
        print("error: no CUDA GPU", file=sys.stderr)
        return 1
    mode, go, ge = cdp.LOCAL, 10, 1
    rows = []
    if not args.long_only and not _batch_rows(args, rows, go, ge, mode):
        return 1
    if not _long_rows(args, rows, go, ge, mode):
        return 1
    header = (
        f"Local affine DP, BLOSUM62, open {go}, extend {ge}: {args.pairs} pairs of "
        f"{args.length}-residue proteins, and one pair of {LONG} residues. Triton results "
        f"checked equal to the numba CPU path (scores, end cells, traceback ops). GPU rows: "
        f"median of {args.repeats} runs (3 for the long pair); CPU rows: median of "
        f"{args.cpu_repeats} runs on this machine's CPU.\n"
    )
    name = "pairwise_gpu_long" if args.long_only else "pairwise_gpu"
    write_results(name, rows, header, out_dir=args.out, metadata=run_metadata("cuda"))
    for r in rows:
        print(f"{r['provider']:<60} {r['gcups']:9.2f} GCUPS  {r['seconds'] * 1e3:10.3f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
