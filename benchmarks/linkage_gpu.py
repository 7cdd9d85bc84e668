"""Single linkage of a 10,000-sequence family's LCS distances: the GPU kernel against the host.

    python -m benchmarks.linkage_gpu [--cases PF00037,PF00202] [--shapes 4096x32,2048x16]
        [--repeats 3] [--name linkage_gpu] [--out DIR]

For each balifam10000 case: LCS distances on the GPU (as default mode computes them), then

* ``host``: the matrix's copy to the host and ``torchmsa.cpu.tree.linkage`` (numba), what
  ``tree_from_tensor`` did before the kernel;
* ``gpu BLOCKxWARPS``: ``triton_kernels/linkage.py`` with that block and warp count.

Each time is the median of ``--repeats`` runs after an untimed one (CUDA synchronised). Every GPU
tree is checked against the host's joins and heights; a mismatch exits with status 1. The
``steps_per_ms`` column is joins per millisecond.
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
    return cpu_tree.linkage(d, cpu_tree.SINGLE, overwrite=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default="PF00037,PF00202")
    ap.add_argument("--shapes", default=f"{BLOCK}x16,4096x32,1024x8")
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
            got, t = _timed(args.repeats, single_linkage, dist, block=block, num_warps=warps)
            same = np.array_equal(got[0].cpu().numpy(), want[0]) and np.array_equal(
                got[1].cpu().numpy(), want[1]
            )
            bad += not same
            rows.append(
                {
                    "case": case,
                    "n": n,
                    "method": f"gpu {shape}",
                    "seconds": t,
                    "steps_per_ms": (n - 1) / t / 1e3,
                    "same_tree": same,
                }
            )
            print(rows[-1], flush=True)
    header = (
        "Single linkage of LCS distances (float64, n x n on the GPU). `host`: copy to the "
        "host and numba linkage; `gpu BLOCKxWARPS`: the Triton kernel. Median of runs after "
        "an untimed one; `same_tree`: identical joins and heights to the host's.\n"
    )
    meta = run_metadata("cuda")
    write_results(args.name, rows, header, out_dir=args.out, metadata=meta)
    for r in rows:
        print(r)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
