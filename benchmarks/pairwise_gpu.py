"""GPU pairwise DP throughput (Triton kernels) against the numba CPU path of the same machine.

    python -m benchmarks.pairwise_gpu [--pairs 10000] [--length 300] [--repeats 10]
        [--cpu-repeats 2] [--long-only] [--out DIR]

10,000 local pairs of 300-residue proteins (BLOSUM62, open 10, extend 1) by default, the pairs
of ``benchmarks.pairwise_cpu``; GCUPS = DP cells (n * m summed over pairs) per second / 1e9.
Each row is the median of ``--repeats`` timed calls of the public dispatchers
(``torchmsa.ops.pairwise.pairwise_score_codes`` / ``pairwise_align_codes``) on tensors already
on the device, after a warm-up call (planning, query profile and kernels included; CUDA
synchronised). Results are checked equal to the CPU path before timing. Beside them, the
public API on the same pairs: ``torchmsa.pairwise_align`` on two lists of strings (encoding,
copies and gapped rows included) and ``torchmsa.pairwise_scores`` / ``pairwise_traceback`` on
tensors already on the device (argument checks included), each timed in turn with the
dispatcher on the same pairs in every round (``kernel_seconds``, and ``vs_kernel``: the
dispatcher's seconds over the API's). One pair of 10,000 residues shows
what a single pair gets (lanes of one pair only); ``--long-only`` runs it alone.
Appends one row per tool to ``pairwise_gpu.csv`` in ``--out`` (``benchmarks/results``).
"""

from __future__ import annotations

import argparse
import statistics
import sys

import numba
import numpy as np
import torch

from benchmarks.harness import Timer, append_rows, markdown_table, run_metadata
from benchmarks.pairwise_cpu import make_pairs
from torchmsa import encode_sequences, pairwise_align, pairwise_scores, pairwise_traceback
from torchmsa.alphabet import PROTEIN, encode
from torchmsa.constants import LOCAL
from torchmsa.ops.pairwise import pairwise_align_codes, pairwise_score_codes
from torchmsa.scoring import get_scoring

LONG = 10_000  # residues of the single long pair
GO, GE = 10, 1


def _inputs(n_pairs: int, length: int):
    pairs = make_pairs(n_pairs, length)
    enc = [(encode(a, PROTEIN)[0], encode(b, PROTEIN)[0]) for a, b in pairs]
    ca = torch.from_numpy(np.stack([np.pad(x, (0, length - len(x))) for x, _ in enc]))
    cb = torch.from_numpy(np.stack([np.pad(y, (0, length - len(y))) for _, y in enc]))
    la = torch.tensor([len(x) for x, _ in enc], dtype=torch.int32)
    lb = torch.tensor([len(y) for _, y in enc], dtype=torch.int32)
    mat = torch.from_numpy(get_scoring("protein", "BLOSUM62", GO, GE).matrix.copy())
    return (ca, la, cb, lb, mat), float((la.long() * lb.long()).sum()), pairs


def _median(fn, repeats: int, cuda: bool) -> float:
    fn()
    times = []
    for _ in range(repeats):
        with Timer(cuda=cuda) as t:
            fn()
        times.append(t.seconds)
    return statistics.median(times)


def _same(a, b) -> bool:
    if isinstance(a, tuple):
        return all(_same(x, y) for x, y in zip(a, b))
    return torch.equal(a.cpu(), b.cpu())


def _rows(case: str, cpu_in, cells: float, args, with_cpu: bool) -> list[dict] | None:
    gpu_in = [t.cuda() for t in cpu_in]
    kinds = [("score-only", pairwise_score_codes), ("traceback", pairwise_align_codes)]
    if case != "batch":
        kinds = kinds[:1]
    rows = []
    for what, fn in kinds:
        want = fn(*cpu_in, GO, GE, LOCAL, backend="cpu")
        if not _same(fn(*gpu_in, GO, GE, LOCAL, backend="triton"), want):
            print(f"error: Triton and CPU {what} results differ ({case})", file=sys.stderr)
            return None
        plans = [("triton", gpu_in, True, args.repeats)]
        if with_cpu:
            plans.append(("numba", cpu_in, False, args.cpu_repeats))
        for backend, tensors, cuda, repeats in plans:
            backend_arg = "cpu" if backend == "numba" else backend

            def call(f=fn, t=tensors, b=backend_arg):
                return f(*t, GO, GE, LOCAL, backend=b)

            seconds = _median(call, repeats, cuda)
            threads = numba.get_num_threads() if backend == "numba" else ""
            rows.append(
                {
                    "case": case,
                    "tool": f"{backend} {what}",
                    "threads": threads,
                    "repeats": repeats,
                    "seconds": seconds,
                    "gcups": cells / seconds / 1e9,
                }
            )
            print(f"{case} {backend} {what}: {rows[-1]['gcups']:.2f} GCUPS", flush=True)
    return rows


def _api_rows(pairs, cpu_in, cells: float, args) -> list[dict] | None:
    """The public API on the batch: lists of strings in, and tensors on the GPU in."""
    a, b = [x for x, _ in pairs], [y for _, y in pairs]
    ea = encode_sequences(a, seqtype="protein", device="cuda")
    eb = encode_sequences(b, seqtype="protein", device="cuda")
    tensors = (ea.codes, ea.lengths, eb.codes, eb.lengths)
    kw = dict(mode="local", matrix="BLOSUM62", gap_open=GO, gap_extend=GE, seqtype="protein")
    cuda = {"device": "cuda"}
    calls = [
        ("pairwise_align(list) score-only", pairwise_align, (a, b), {"traceback": False, **cuda}),
        ("pairwise_align(list) traceback", pairwise_align, (a, b), cuda),
        ("pairwise_scores(tensors) score-only", pairwise_scores, tensors, {}),
        ("pairwise_traceback(tensors) traceback", pairwise_traceback, tensors, {}),
    ]
    want = pairwise_score_codes(*cpu_in, GO, GE, LOCAL, backend="cpu")[:, 0].tolist()
    gpu_in = [t.cuda() for t in cpu_in]
    kernels = {
        "score-only": lambda: pairwise_score_codes(*gpu_in, GO, GE, LOCAL, backend="triton"),
        "traceback": lambda: pairwise_align_codes(*gpu_in, GO, GE, LOCAL, backend="triton"),
    }
    rows = []
    for tool, fn, inputs, extra in calls:

        def call(fn=fn, inputs=inputs, extra=extra):
            return fn(*inputs, **kw, **extra)

        out = call()
        got = [r.score for r in out] if isinstance(out, list) else out.score.tolist()
        if got != want:
            print(f"error: {tool} scores differ from the CPU path", file=sys.stderr)
            return None
        kernel = kernels[tool.rsplit(" ", 1)[1]]
        seconds, kernel_s = _paired_medians(call, kernel, args.repeats)
        row = {"case": "batch", "tool": tool, "threads": "", "repeats": args.repeats}
        row.update(kernel_seconds=kernel_s, vs_kernel=kernel_s / seconds)
        rows.append(dict(row, seconds=seconds, gcups=cells / seconds / 1e9))
        same = f"{kernel_s / seconds:.0%} of the dispatcher's {cells / kernel_s / 1e9:.2f}"
        print(f"batch {tool}: {rows[-1]['gcups']:.2f} GCUPS, {same} in the same loop", flush=True)
    return rows


def _paired_medians(call, kernel, repeats: int) -> tuple[float, float]:
    """Median seconds of ``call`` and of ``kernel`` (the dispatcher on the same pairs), timed
    one after the other in each of ``repeats`` rounds, so that both meet the same state of
    the machine."""
    call(), kernel()
    ours, theirs = [], []
    for _ in range(repeats):
        for fn, times in ((call, ours), (kernel, theirs)):
            with Timer(cuda=True) as t:
                fn()
            times.append(t.seconds)
    return statistics.median(ours), statistics.median(theirs)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=10_000)
    ap.add_argument("--length", type=int, default=300)
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--cpu-repeats", type=int, default=2)
    ap.add_argument("--long-only", action="store_true", help="only the single long pair")
    ap.add_argument("--out", default=None, help="results folder (default benchmarks/results)")
    args = ap.parse_args(argv)
    if not torch.cuda.is_available():
        print("error: no CUDA GPU", file=sys.stderr)
        return 1
    rows: list[dict] = []
    if not args.long_only:
        cpu_in, cells, pairs = _inputs(args.pairs, args.length)
        got = _rows("batch", cpu_in, cells, args, with_cpu=True)
        api = _api_rows(pairs, cpu_in, cells, args) if got is not None else None
        if api is None:
            return 1
        got += api
        for r in got:
            r.update(pairs=args.pairs, length=args.length)
        rows += got
    cpu_in, cells, _ = _inputs(1, LONG)
    got = _rows("long", cpu_in, cells, args, with_cpu=False)
    if got is None:
        return 1
    for r in got:
        r.update(pairs=1, length=LONG)
    rows += got
    path = append_rows("pairwise_gpu", rows, run_metadata("cuda"), args.out)
    print(markdown_table(rows, ["case", "tool", "pairs", "length", "seconds", "gcups"]))
    print(f"appended {len(rows)} rows to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
