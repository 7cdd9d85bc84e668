"""The strip fill of best-K local alignment (``triton_kernels/strip.py``) with its passes run one
after another in one program per segment, and piped (one program per pass, each a few steps
behind the pass above, ``--sync`` steps between synchronisations, and at the launcher's default
``sync``): time and equality, per launch shape of issue #38's work.

    python -m benchmarks.strip_pipe [--cases refill,first] [--sync 16,32,64] [--repeats 3]
        [--out DIR]

Cases (random protein-like pair, BLOSUM-like scores, gap open 11, extend 1, no forbidden pair):
``refill``: a 10,240-residue query over 3 segments of one 2,048-column strip each (a
recomputation after a hit in a 10^8 subject); ``first``: the same query over 528 segments of
24 strips each (a first pass's launch on an H100, 4 segments per SM). Each row is the median
of ``--repeats`` timed launches after an untimed one (wall clock around ``strip_fill`` with a
synchronisation: launcher, host copy and kernel); ``equal`` says whether checkpoints and best
cells equal the unpiped fill's. Appends rows to ``strip_pipe.csv`` in ``--out``.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import torch

from benchmarks.harness import append_rows, markdown_table, run_metadata

CASES = {"refill": (10_240, 2_048, 3, 1), "first": (10_240, 2_048, 528, 24)}  # n, W, C, strips


def inputs(n: int, W: int, C: int, per: int, dev: str):
    rng = np.random.default_rng(7)
    A = 20
    mat = rng.integers(-4, 3, size=(A, A)).astype(np.int32)
    mat[np.arange(A), np.arange(A)] = rng.integers(4, 12, size=A)
    S = C * per
    m = S * W
    s = rng.integers(0, A, size=m).astype(np.uint8)
    at = m // 3
    q = s[at : at + n].copy() if at + n <= m else rng.integers(0, A, size=n).astype(np.uint8)
    mut = rng.random(n) < 0.3
    q[mut] = rng.integers(0, A, size=int(mut.sum()))
    lo = np.arange(0, S, per, dtype=np.int32)
    col = torch.zeros((C, 4, n + 1), dtype=torch.int32)
    col[:, 1] = -(1 << 28)

    def t(x, dtype=None):
        return torch.as_tensor(x, dtype=dtype).to(dev)

    i32 = {"dtype": torch.int32, "device": dev}
    args = (
        t(q), t(s), t(mat), 11, 1, W, t(lo), t(lo + per), col.to(dev), t(lo, torch.int64),
        torch.zeros(n + 2, **i32), torch.zeros(0, **i32),
    )  # fmt: skip
    return args, S


def run_case(name: str, syncs: list[int], repeats: int, dev: str) -> list[dict]:
    from torchmsa._triton.strip import strip_fill

    n, W, C, per = CASES[name]
    args, S = inputs(n, W, C, per, dev)
    outs = {}
    rows = []
    for pipe, sync in [(False, 32)] + [(True, s) for s in syncs] + [(True, None)]:
        ckpt = torch.empty((S, 4, n + 1), dtype=torch.int32, device=dev)
        best = torch.empty((S, 4), dtype=torch.int32, device=dev)
        times = []
        for r in range(repeats + 1):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            strip_fill(*args, ckpt, best, pipe=pipe, sync=sync)
            torch.cuda.synchronize()
            if r:
                times.append(time.perf_counter() - t0)
        outs[(pipe, sync)] = (ckpt, best)
        base = outs[(False, 32)]
        equal = bool(torch.equal(ckpt, base[0]) and torch.equal(best, base[1]))
        sec = statistics.median(times)
        cells = n * S * W
        rows.append({
            "case": name, "n": n, "strip_width": W, "segments": C, "strips": S,
            "pipe": pipe, "sync": (sync or "default") if pipe else "", "seconds": sec,
            "gcups": cells / sec / 1e9, "equal": equal,
        })  # fmt: skip
        print(rows[-1], flush=True)
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", default="refill,first")
    ap.add_argument("--sync", default="16,32,64")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", default=None)
    a = ap.parse_args(argv)
    if not torch.cuda.is_available():
        print("strip_pipe: needs a CUDA GPU")
        return 2
    syncs = [int(x) for x in a.sync.split(",")]
    meta = run_metadata("cuda")
    rows = []
    for name in a.cases.split(","):
        rows += run_case(name, syncs, a.repeats, "cuda")
        append_rows("strip_pipe", rows[-2 - len(syncs) :], meta, a.out)
    print(markdown_table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
