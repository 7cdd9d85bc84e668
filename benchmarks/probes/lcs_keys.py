"""Decision 0065's cost: nanoseconds per pair of ``cpu.slink.lcs_key_rows`` (the LCS distance
with its tie term) against the distance before it (``plain``), on one block of rows of the
streamed LCS tree, one thread. Prints the best of ``--repeat`` runs; writes no CSV.

    python -m benchmarks.probes.lcs_keys [--n 20000] [--rows 1000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=20000, help="sequences (the block's last row)")
    ap.add_argument("--rows", type=int, default=1000, help="rows in the block")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args(argv)

    import numba

    from benchmarks.probes.lcs_distance import _plain_key_rows
    from torchmsa.cpu.slink import lcs_key_rows

    numba.set_num_threads(1)
    n, rows = args.n, min(args.rows, args.n)
    r0 = n - rows
    rng = np.random.default_rng(0)
    lens = rng.integers(100, 400, n).astype(np.int64)
    lcs = rng.integers(50, 100, (rows, n)).astype(np.int32)
    out = np.empty((rows, n))
    pairs = rows * r0 + rows * (rows - 1) // 2
    for name, keys in (("shipped", lcs_key_rows), ("plain", _plain_key_rows)):
        keys(lcs[:2], lens, r0, out[:2])  # compile
        best = min(_timed(keys, lcs, lens, r0, out) for _ in range(args.repeat))
        per = best / pairs * 1e9
        print(f"{name:8s} {best * 1e3:7.1f} ms for {pairs:,} pairs: {per:.2f} ns a pair")
    return 0


def _timed(keys, lcs, lens, r0, out) -> float:
    t0 = time.perf_counter()
    keys(lcs, lens, r0, out)
    return time.perf_counter() - t0


if __name__ == "__main__":
    raise SystemExit(main())
