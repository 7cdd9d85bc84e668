"""Single linkage of a 10,000-sequence family's LCS distances: the GPU against the host.

    python -m benchmarks.linkage_gpu [--cases PF00037,PF00202] [--shapes 1024x4,2048x8]
        [--repeats 3] [--name linkage_gpu] [--out DIR]

For each balifam10000 case: LCS distances on the GPU (as default mode computes them), then

* ``host``: the matrix's copy to the host and ``torchmsa.cpu.tree.single_linkage`` (numba,
  Prim's spanning tree);
* ``gpu BLOCKxWARPS``: ``triton_kernels/linkage.py`` (Borůvka's rounds) with that row-program
  block and warp count.

Each time is the median of ``--repeats`` runs after an untimed one (CUDA synchronised). Every GPU
tree is checked against the host's joins and heights; a mismatch exits with status 1. The
``gb_per_s`` column is the matrix's bytes times the rounds over the time.
"""

from __future__ import annotations

import argparse
import statistics
import sys

import numpy as np
import torch

from benchmarks.common import DATA_DIR, Timer, run_metadata, write_results
from torchmsa._triton.linkage import BLOCK, single_linkage
from torchmsa.cpu import tree as cpu_tree
from torchmsa.ops.lcs import lcs_distances, lcs_lengths
from torchmsa.sequences import SequenceBatch


def _timed(repeats: int, f, *args, **kwargs):
    out = f(*args, **kwargs)
    times = []
    for _ in range(repeats):
        with Timer(cuda=True) as t:
            out = f(*args, **kwargs)
        times.append(t.seconds)
    return out, statistics.median(times)


def _host(dist: torch.Tensor):
    d = dist.to("cpu", copy=True).numpy()
    return cpu_tree.single_linkage(d)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default="PF00037,PF00202")
    ap.add_argument("--shapes", default=f"{BLOCK}x4,2048x8,512x4")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--name", default="linkage_gpu")
    ap.add_argument("--out", default=None, help="results folder (default benchmarks/results)")
    args = ap.parse_args(argv)
    dev = torch.device("cuda")
    rows, bad = [], 0
    for case in args.cases.split(","):
        path = DATA_DIR / "balifam10000" / f"{case}.in.fasta.gz"
        batch = SequenceBatch.from_input(str(path), "auto", dev)
        lengths = batch.lengths.to(dev)
        dist = lcs_distances(lcs_lengths(batch.codes, lengths), lengths)
        n = dist.shape[0]

        want, t = _timed(args.repeats, _host, dist)
        rows.append({"case": case, "n": n, "method": "host", "seconds": t})
        for shape in args.shapes.split(","):
            block, warps = (int(x) for x in shape.split("x"))
            rounds = []
            got, t = _timed(
                args.repeats, single_linkage, dist, block=block, num_warps=warps, rounds=rounds
            )
            same = np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
            bad += not same
            rows.append(
                {
                    "case": case,
                    "n": n,
                    "method": f"gpu {shape}",
                    "seconds": t,
                    "rounds": rounds[-1],
                    "gb_per_s": rounds[-1] * 8 * n * n / t / 1e9,
                    "same_tree": same,
                }
            )
            print(rows[-1], flush=True)
    header = (
        "Single linkage of LCS distances (float64, n x n on the GPU). `host`: copy to the "
        "host and numba Prim; `gpu BLOCKxWARPS`: Borůvka's rounds of the Triton kernel. Median "
        "of runs after an untimed one; `gb_per_s`: the matrix read once per round; "
        "`same_tree`: identical joins and heights to the host's.\n"
    )
    meta = run_metadata("cuda")
    write_results(args.name, rows, header, out_dir=args.out, metadata=meta)
    for r in rows:
        print(r)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
