"""Nanoseconds per cell of the numba column scores and of the profile DP, on the CPU, one thread.

    python -m benchmarks.colscores_cpu [--cols 300,550,1000] [--groups 1x10,5x6,30x40] [--reps 20]
        [--name colscores_cpu] [--out DIR]

Random profiles of two groups of k_a and k_b sequences (every column full, residues drawn from
20 letters, weight 256 per sequence) against the pipeline's protein matrix:
``cpu.merge._scores`` (the loops over the sparser profile's nonzero entries) and
``cpu.dp._profile_align`` on its scores, for each width in ``--cols`` (n x n + 10 columns).
Minimum of ``--reps`` timed calls after a warm call.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from benchmarks.common import run_metadata, write_results


def _profile(rng, cols, k, n_alpha):
    prof = np.zeros((cols, n_alpha), np.int64)
    for _ in range(k):
        prof[np.arange(cols), rng.integers(0, 20, cols)] += 256
    return prof


def _best(fn, args, reps):
    fn(*args)
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - t)
    return min(times)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cols", default="300,550,1000")
    ap.add_argument("--groups", default="1x10,5x6,30x40")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--name", default="colscores_cpu")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    from torchmsa.alphabet import get_alphabet
    from torchmsa.cpu.dp import GLOBAL, _profile_align
    from torchmsa.cpu.dp_rows import OCC_SHIFT
    from torchmsa.cpu.merge import _costs, _scores
    from torchmsa.pipeline import profile_scoring

    scoring = profile_scoring(get_alphabet("protein"))
    matrix = scoring.matrix.numpy().astype(np.int64)
    num, den = scoring.terminal
    rng = np.random.default_rng(0)
    rows = []
    for spec, cols in ((g, int(c)) for c in args.cols.split(",") for g in args.groups.split(",")):
        ka, kb = (int(x) for x in spec.split("x"))
        n, m = cols, cols + 10
        pa, pb = _profile(rng, n, ka, matrix.shape[0]), _profile(rng, m, kb, matrix.shape[0])
        wa, wb = 256 * ka, 256 * kb
        S = _scores(pa, pb, matrix, wa, wb, OCC_SHIFT)
        costs = [
            _costs(
                p,
                np.full(p.shape[0] + 1, w, np.int64),
                w,
                int(scoring.gap_open),
                num,
                den,
                OCC_SHIFT,
            )
            for p, w in ((pa, wa), (pb, wb))
        ]
        (oa, ca, ra), (ob, cb, rb) = costs
        ops = np.empty(n + m, np.uint8)
        ext = int(scoring.gap_extend)
        t_s = _best(_scores, (pa, pb, matrix, wa, wb, OCC_SHIFT), args.reps)
        dp_args = (S, oa, ca, ob, cb, ra, rb, ext, GLOBAL, ops)
        t_d = _best(_profile_align, dp_args, args.reps)
        rows.append(
            {
                "groups": spec,
                "columns": f"{n} x {m}",
                "scores_ns_per_cell": round(t_s / (n * m) * 1e9, 3),
                "dp_ns_per_cell": round(t_d / (n * m) * 1e9, 3),
            }
        )
        print(rows[-1], flush=True)
    header = (
        "Numba column scores and profile DP, one call at a time on one thread, groups k_a x k_b "
        f"sequences, best of {args.reps}.\n"
    )
    write_results(args.name, rows, header, out_dir=args.out, metadata=run_metadata("cpu"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
