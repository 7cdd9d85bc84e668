"""MSA features: sequence weights / Neff (and the identity matrix) of a 10^4 x 1,000 MSA.

    python -m benchmarks.features [--quick] [--n 10000] [--width 1000]
        [--theta 0.62,0.8,0.9] [--definition aligned] [--identity] [--repeats 3]
        [--device auto] [--compute-dtype auto] [--threads N] [--out DIR]

Data: ``--n`` synthetic protein rows of ``--width`` columns in families of 100 around random
ancestors (each row mutated at a rate drawn from 0..60%, 10% gaps), so identities spread over
the thresholds. Every row is the median of ``--repeats`` timed runs (wall clock, CUDA
synchronised) after one warm-up run, from codes already on the device:

* ``weights``: :func:`torchmsa.features.sequence_weights` at one threshold (each of
  ``--theta``), and at all of them in one pass;
* ``neff``: :func:`torchmsa.features.neff` at 0.8 (weights and their sum);
* ``identity`` (with ``--identity``): the N x N float32 identity matrix.

Checks before timing, exit status 1 on a mismatch: the weights of 64 sampled rows against a
count of their identities computed one row at a time (:func:`identity_to_rows`). ``--quick``:
2,000 x 200. Targets (issue #40): <= 0.5 s on an H100, <= 30 s on 2 CPU cores for 10^4 x
1,000. Appends one row per measurement to ``features.csv`` in ``--out``
(``benchmarks/results``).
"""

from __future__ import annotations

import argparse
import statistics
import sys

import numpy as np
import torch

from benchmarks.harness import Timer, append_rows, markdown_table, run_metadata, set_threads
from torchmsa import features
from torchmsa.alphabet import PROTEIN
from torchmsa.ops.backend import resolve_device

GAP = PROTEIN.gap_code
DTYPES = {"auto": None, "float16": torch.float16, "bfloat16": torch.bfloat16,
          "float32": torch.float32}  # fmt: skip


class Mismatch(RuntimeError):
    """Weights differ from the row-by-row count."""


def make_msa(n: int, width: int, seed: int = 0) -> torch.Tensor:
    """``uint8 [n, width]`` codes (module docstring)."""
    rng = np.random.default_rng(seed)
    anc = rng.integers(0, 20, size=(-(-n // 100), width), dtype=np.uint8)
    codes = anc[np.arange(n) // 100].copy()
    rate = rng.random(n)[:, None] * 0.6
    mut = rng.random((n, width)) < rate
    codes[mut] = rng.integers(0, 20, size=int(mut.sum()), dtype=np.uint8)
    codes[rng.random((n, width)) < 0.1] = GAP
    return torch.from_numpy(codes)


def _median(fn, repeats: int, cuda: bool) -> float:
    fn()
    times = []
    for _ in range(repeats):
        with Timer(cuda=cuda) as t:
            fn()
        times.append(t.seconds)
    return statistics.median(times)


def check(codes, thetas, definition, dtype) -> None:
    """Weights of sampled rows against their identities counted one row at a time."""
    n = codes.shape[0]
    got = features.sequence_weights(codes, GAP, thetas, definition=definition, compute_dtype=dtype)
    rows = torch.from_numpy(np.random.default_rng(1).choice(n, min(64, n), replace=False))
    ident = features.identity_to_rows(
        codes, GAP, rows.to(codes.device), definition=definition, compute_dtype=dtype
    )
    ident[torch.arange(rows.numel()), rows.to(codes.device)] = 2.0  # the row itself
    for k, theta in enumerate(thetas):
        want = 1.0 / (ident >= theta).sum(1).double()
        if not torch.equal(got[k][rows.to(codes.device)], want):
            raise Mismatch(f"weights at theta={theta} differ from the row-by-row count")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--width", type=int, default=1000)
    ap.add_argument("--theta", default="0.62,0.8,0.9")
    ap.add_argument("--definition", default="aligned", choices=features.DEFINITIONS)
    ap.add_argument("--identity", action="store_true", help="also time the N x N matrix")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--device", default="auto")
    ap.add_argument("--compute-dtype", default="auto", choices=sorted(DTYPES))
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--quick", action="store_true", help="2,000 x 200, one repeat")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    if args.quick:
        args.n, args.width, args.repeats = 2000, 200, 1
    if args.threads:
        set_threads(args.threads)
    device = resolve_device(args.device)
    cuda = device.type == "cuda"
    dtype = DTYPES[args.compute_dtype]
    thetas = [float(t) for t in args.theta.split(",")]
    codes = make_msa(args.n, args.width).to(device)
    case = f"synthetic {args.n} x {args.width}"
    try:
        check(codes, thetas, args.definition, dtype)
    except Mismatch as exc:
        print(f"MISMATCH: {exc}", file=sys.stderr)
        return 1
    product = str(features.identity.product_dtype(device, dtype)).replace("torch.", "")
    rows = []

    def record(what: str, theta: str, sec: float, value: float | None = None) -> None:
        rows.append(
            {
                "scope": "case", "case": case, "tool": "torchmsa", "what": what,
                "theta": theta, "definition": args.definition, "n": args.n,
                "width": args.width, "compute_dtype": product, "seconds": sec,
                "neff": value, "threads": torch.get_num_threads(),
            }
        )  # fmt: skip
        print(f"{case} {what} theta={theta}: {sec:.3f} s", flush=True)

    def weights_at(ts):
        return features.sequence_weights(
            codes, GAP, ts, definition=args.definition, compute_dtype=dtype
        )

    for theta in thetas:
        sec = _median(lambda t=theta: weights_at(t), args.repeats, cuda)
        record("weights", f"{theta:g}", sec, float(weights_at(theta).sum()))
    if len(thetas) > 1:
        sec = _median(lambda: weights_at(thetas), args.repeats, cuda)
        record("weights", ",".join(f"{t:g}" for t in thetas), sec)
    neff = features.neff(codes, GAP, 0.8, definition=args.definition, compute_dtype=dtype)
    sec = _median(
        lambda: float(
            features.neff(codes, GAP, 0.8, definition=args.definition, compute_dtype=dtype)
        ),
        args.repeats,
        cuda,
    )
    record("neff", "0.8", sec, float(neff))
    if args.identity:
        sec = _median(
            lambda: features.identity_matrix(
                codes, GAP, definition=args.definition, compute_dtype=dtype
            ),
            args.repeats,
            cuda,
        )
        record("identity", "", sec)
    path = append_rows("features", rows, run_metadata(str(device)), args.out)
    cols = ["case", "what", "theta", "compute_dtype", "seconds", "neff"]
    print(markdown_table(rows, cols))
    print(f"appended {len(rows)} rows to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
