"""GPU shared 6-mer counts (Triton): all pairs of 100,000 sequences, the 5,000 x 100,000 block.

    python -m benchmarks.kmer_gpu [--quick] [--n 100000] [--length 300] [--refs 5000]
        [--methods matrix,lists] [--compare-n 20000] [--repeats 3] [--real]
        [--out DIR] [--device cuda]

Data: ``--n`` synthetic proteins of ``--length`` +- 10% residues in clusters of 100 around
random ancestors (25% substitutions, background amino-acid frequencies), Dayhoff-6 6-mers.
Every row is the median of ``--repeats`` timed runs (wall clock, CUDA synchronised) after a
checked warm-up run, from id lists already on the GPU unless said otherwise:

* ``ids``: residue codes on the GPU -> sorted 6-mer id lists (``kmer_ids``).
* ``block``: the ``--refs`` x N int32 counts of the first ``--refs`` sequences against all,
  on the GPU (key columns, indicator strips, kernels, all included): PartTree's N x n block.
* ``all-pairs``: every tile on and above the diagonal of the N x N counts, each reduced on the
  GPU as it comes to per-row sums and maxima of the off-diagonal counts (what a nearest-
  neighbour consumer keeps); the N x N matrix (40 GB at N = 100,000) is never stored.
* ``block`` with method ``pairs``: the first 500 rows of the block as a list of pairs, a merge
  walk of two sorted id lists per pair (the kernel PartTree uses for scattered pairs).

Both methods (``matrix``: int8 tensor-core products of indicator matrices; ``lists``: each
sequence's key list looked up in the other set's indicator, seed 002) run the block and an
all-pairs pass over the first ``--compare-n`` sequences; the full all-pairs pass runs with the
first method of ``--methods``. Checks before timing, exit status 1 on any mismatch: ids
against the numba CPU path, sampled rows of the block and of the all-pairs pass, and the
all-pairs row sums and maxima of those rows, against the numba CPU counts.

``--device cpu`` runs the same code in Triton's interpreter, for a smoke test with tiny
``--n`` (the times mean nothing there). Appends one row per measurement to ``kmer_gpu.csv`` in
``--out`` (``benchmarks/results``).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys

import numpy as np
import torch

from benchmarks.harness import DATA_DIR, Timer, append_rows, markdown_table, run_metadata
from benchmarks.pairwise_cpu import AMINO, FREQ
from torchmsa.alphabet import PROTEIN
from torchmsa.io import read_sequences
from torchmsa.ops import kmer_stream
from torchmsa.ops.kmer import kmer_ids, pair_counts, reduced_map, shared_counts
from torchmsa.sequences import SequenceBatch

REAL_CASES = [("homfam", "zf-CCHH"), ("homfam", "rrm")]
DEVICE = torch.device("cuda")


class Mismatch(RuntimeError):
    """GPU counts differ from the CPU counts."""


def make_family(n: int, length: int, seed: int = 0) -> list[str]:
    """``n`` proteins in clusters of 100 around random ancestors (see the module docstring)."""
    rng = np.random.default_rng(seed)
    p = FREQ / FREQ.sum()
    top = int(length * 1.1) + 1
    anc = rng.choice(20, size=(-(-n // 100), top), p=p).astype(np.uint8)
    seqs = anc[np.arange(n) // 100]
    sub = rng.random(seqs.shape) < 0.25
    seqs[sub] = rng.choice(20, size=int(sub.sum()), p=p)
    lengths = rng.integers(int(length * 0.9), top + 1, n)
    letters = np.frombuffer(AMINO.encode(), np.uint8)[seqs]
    return [letters[i, : lengths[i]].tobytes().decode() for i in range(n)]


def _median(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        with Timer(cuda=DEVICE.type == "cuda") as t:
            fn()
        times.append(t.seconds)
    return statistics.median(times)


def _peak(fn) -> tuple[object, float]:
    if DEVICE.type != "cuda":
        return fn(), float("nan")
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    out = fn()
    torch.cuda.synchronize()
    return out, torch.cuda.max_memory_allocated() / 2**30


def _check(what: str, got: torch.Tensor, want: torch.Tensor) -> None:
    if not torch.equal(got.cpu(), want.cpu()):
        bad = (got.cpu() != want.cpu()).nonzero()[:5].tolist()
        raise Mismatch(f"{what}: GPU and CPU counts differ, e.g. at {bad}")


def all_pairs(ids, n, method, capture=None):
    """Row sums and maxima of the off-diagonal counts, tile by tile; rows in ``capture`` are
    also kept whole (``int32 [len(capture), N]``). Returns ``(sums, maxima, kept, tiles)``."""
    total = ids.shape[0]
    dev = ids.device
    sums = torch.zeros(total, dtype=torch.int64, device=dev)
    maxima = torch.full((total,), -1, dtype=torch.int32, device=dev)
    kept = None
    if capture is not None:
        kept = torch.full((len(capture), total), -1, dtype=torch.int32, device=dev)
        where = torch.full((total,), -1, dtype=torch.long, device=dev)
        where[capture] = torch.arange(len(capture), device=dev)
    tiles = 0
    for r0, c0, t in kmer_stream.count_tiles(ids, n, method=method):
        tiles += 1
        tm, tn = t.shape
        if c0 == r0:
            t.diagonal().fill_(-1)  # the tile is fresh; sums get the diagonal back below
        sides = [(r0, tm, c0, t)] + ([(c0, tn, r0, t.T)] if c0 != r0 else [])
        for start, size, other, view in sides:
            rows = slice(start, start + size)
            sums[rows] += view.sum(1, dtype=torch.int64)
            maxima[rows] = torch.maximum(maxima[rows], view.max(1).values)
            if kept is not None:
                pick = where[rows]
                hit = (pick >= 0).nonzero().flatten()
                kept[pick[hit], other : other + view.shape[1]] = view[hit]
    if total:
        # the diagonal was counted as -1 in each row's sum
        sums += 1
    return sums, maxima, kept, tiles


def _verify_all_pairs(ids, n, cpu_ids, cpu_n, method, rows):
    sums, maxima, kept, tiles = all_pairs(ids, n, method, torch.as_tensor(rows, device=ids.device))
    want = shared_counts(cpu_ids[rows], cpu_n[rows], cpu_ids, cpu_n, "cpu")
    want[torch.arange(len(rows)), torch.as_tensor(rows)] = -1
    _check(f"all-pairs rows ({method})", kept, want)
    _check(f"all-pairs row sums ({method})", sums[rows], want.sum(1) + 1)
    _check(f"all-pairs row maxima ({method})", maxima[rows], want.max(1).values)
    return tiles


def _block(ids, n, refs, method):
    out = torch.empty((refs, ids.shape[0]), dtype=torch.int32, device=ids.device)
    tiles = kmer_stream.count_tiles(ids[:refs], n[:refs], ids, n, method=method)
    for r0, c0, t in tiles:
        out[r0 : r0 + t.shape[0], c0 : c0 + t.shape[1]] = t
    return out


def _row(case, what, method, na, nb, seconds, peak=float("nan"), **extra):
    pairs = na * nb if what != "all-pairs" else na * (na - 1) // 2
    return {
        "case": case,
        "what": what,
        "method": method,
        "n_a": na,
        "n_b": nb,
        "pairs": pairs,
        "seconds": seconds,
        "gpairs_per_s": pairs / seconds / 1e9,
        "peak_gib": peak,
        **extra,
    }


def bench_set(case, seqs, args, methods, rows, full_all_pairs=True) -> None:
    batch = SequenceBatch.from_input(seqs, "protein")
    reduced = reduced_map(PROTEIN)
    codes, lengths = batch.codes.to(DEVICE), batch.lengths.to(DEVICE)
    ids, n = kmer_ids(codes, lengths, reduced, 6, "triton")
    cpu_ids, cpu_n = kmer_ids(batch.codes, batch.lengths, reduced, 6, "cpu")
    _check("k-mer ids", ids, cpu_ids)
    _check("k-mer counts", n, cpu_n)
    total = len(seqs)
    sec = _median(lambda: kmer_ids(codes, lengths, reduced, 6, "triton"), args.repeats)
    rows.append(_row(case, "ids", "", total, 1, sec))
    rng = np.random.default_rng(1)
    k = kmer_stream.key_columns(ids, n).k
    refs = min(args.refs, total)
    for m in methods if refs < total else []:
        block = _block(ids, n, refs, m)
        sample = np.sort(rng.choice(refs, min(64, refs), replace=False))
        want = shared_counts(cpu_ids[sample], cpu_n[sample], cpu_ids, cpu_n, "cpu")
        _check(f"block rows ({m})", block[sample], want)
        del block
        _, peak = _peak(lambda m=m: _block(ids, n, refs, m))
        sec = _median(lambda m=m: _block(ids, n, refs, m), args.repeats)
        rows.append(_row(case, "block", m, refs, total, sec, peak, k_cols=k))
        print(f"{case} block {refs} x {total} {m}: {sec:.3f} s, peak {peak:.1f} GiB", flush=True)
    if refs < total:
        _merge_row(case, ids, n, cpu_ids, cpu_n, min(500, refs), args, rows)
    small = min(args.compare_n, total)
    plan = [(small, m) for m in methods] if small < total else []
    plan += [(total, methods[0])] if full_all_pairs else []
    for size, m in plan:
        sub_ids, sub_n = ids[:size], n[:size]
        sample = np.sort(rng.choice(size, min(32, size), replace=False))
        tiles = _verify_all_pairs(sub_ids, sub_n, cpu_ids[:size], cpu_n[:size], m, sample)
        _, peak = _peak(lambda m=m, a=sub_ids, b=sub_n: all_pairs(a, b, m))
        sec = _median(lambda m=m, a=sub_ids, b=sub_n: all_pairs(a, b, m), args.repeats)
        rows.append(_row(case, "all-pairs", m, size, size, sec, peak, tiles=tiles))
        print(
            f"{case} all pairs of {size} {m}: {sec:.3f} s, {tiles} tiles, peak {peak:.1f} GiB",
            flush=True,
        )


def _merge_row(case, ids, n, cpu_ids, cpu_n, few, args, rows) -> None:
    """The block's first ``few`` rows as a list of pairs, one merge walk each (the
    ``pair_counts`` kernel that PartTree uses for scattered pairs)."""
    total = ids.shape[0]
    p = torch.arange(few, device=ids.device).repeat_interleave(total)
    q = torch.arange(total, device=ids.device).repeat(few)
    got = pair_counts(ids, n, ids, n, p, q, "triton").view(few, total)
    k = min(8, few)
    want = shared_counts(cpu_ids[:k], cpu_n[:k], cpu_ids, cpu_n, "cpu")
    _check("pair merge rows", got[:k], want)
    sec = _median(lambda: pair_counts(ids, n, ids, n, p, q, "triton"), args.repeats)
    rows.append(_row(case, "block", "pairs (merge walk per pair)", few, total, sec))
    print(f"{case} block {few} x {total} as pairs: {sec:.3f} s", flush=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--length", type=int, default=300)
    ap.add_argument("--refs", type=int, default=5000)
    ap.add_argument("--methods", default="matrix,lists")
    ap.add_argument("--compare-n", type=int, default=20_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--real", action="store_true", help="also all pairs of large HomFam cases")
    ap.add_argument("--quick", action="store_true", help="20,000 sequences, 1 repeat")
    ap.add_argument("--out", default=None, help="results folder (default benchmarks/results)")
    ap.add_argument("--device", default="cuda", help="cuda, or cpu for an interpreted smoke test")
    args = ap.parse_args(argv)
    global DEVICE
    DEVICE = torch.device(args.device)
    if DEVICE.type == "cpu":
        os.environ["TRITON_INTERPRET"] = "1"
    elif not torch.cuda.is_available():
        print("error: no CUDA GPU", file=sys.stderr)
        return 1
    if args.quick:
        args.n, args.refs, args.compare_n, args.repeats = 20_000, 1000, 5000, 1
    methods = args.methods.split(",")
    for m in methods:
        if m not in kmer_stream.METHODS:
            ap.error(f"unknown method {m!r}; use {kmer_stream.METHODS}")
    rows: list[dict] = []
    try:
        bench_set(
            f"synthetic {args.n} x {args.length}",
            make_family(args.n, args.length),
            args,
            methods,
            rows,
        )
        for dataset, case in REAL_CASES if args.real else []:
            path = DATA_DIR / dataset / f"{case}.in.fasta.gz"
            if path.exists():
                seqs = [r.seq for r in read_sequences(path)]
                bench_set(f"{dataset}/{case}", seqs, args, methods[:1], rows)
    except Mismatch as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    path = append_rows("kmer_gpu", rows, run_metadata(str(DEVICE)), args.out)
    cols = ["case", "what", "method", "n_a", "n_b", "seconds", "gpairs_per_s", "peak_gib"]
    print(markdown_table(rows, cols))
    print(f"appended {len(rows)} rows to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
