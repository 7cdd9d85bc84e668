"""Where a best-K hit's time goes (issue #38, decision 0064's "the hits do not scale"): one
process's ``local_topk_codes`` on the benchmark's pair, the first call untimed, then one
call with the hit loop's pieces timed (each wrapped, the GPU synchronised around it): the
first pass, finding the best cell, the traceback, forbidding the pairs and the refills, with
the strip-fill launches and host copies they made.

    python -m benchmarks.probes.hit_phases [--n 10240] [--m 1e8] [--k 100] [--cprofile 30]
        [--configs fused:16,two:16] [--out DIR]

``--configs``: one timed call per entry, ``fused`` or ``two`` (a refill's warm-ups in its
launch or in one before, ``local_strips.FUSED_CHUNKS``) and the Triton kernel's steps
between a pass's synchronisations in launches of few segments (``SYNC_FEW``); each call's
hits must equal the first call's. ``--out``: one row per configuration and phase appended to
``DIR/hit_phases.csv`` (with the run's metadata).
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import time
from collections import defaultdict

import numpy as np
import torch

from benchmarks.harness import append_rows, run_metadata
from benchmarks.ssca import make_pair


class Clock:
    """Seconds and calls per wrapped name, the GPU synchronised at both ends of a call."""

    def __init__(self, device):
        self.device = device
        self.seconds: dict[str, float] = defaultdict(float)
        self.calls: dict[str, int] = defaultdict(int)
        self.depth = 0

    def wrap(self, owner, name: str, label: str) -> None:
        inner = getattr(owner, name)
        clock = self

        def timed(*args, **kwargs):
            if self.device.type == "cuda":
                torch.cuda.synchronize(self.device)
            t0 = time.perf_counter()
            try:
                return inner(*args, **kwargs)
            finally:
                if self.device.type == "cuda":
                    torch.cuda.synchronize(self.device)
                clock.seconds[label] += time.perf_counter() - t0
                clock.calls[label] += 1

        setattr(owner, name, timed)


def rows(out: dict) -> list[dict]:
    """One tidy row per phase of a configuration's printed result."""
    head = {k: v for k, v in out.items() if k != "phases"}
    return [{**head, "phase": k, "seconds": v["s"], "calls": v["calls"]} for k, v in
            out["phases"].items()]  # fmt: skip


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=10240)
    ap.add_argument("--m", type=float, default=1e8)
    ap.add_argument("--k", type=int, default=100)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--cprofile", type=int, default=0, help="print the top N of a last call")
    ap.add_argument("--configs", default="fused:16", help="fused|two:SYNC_FEW, comma list")
    ap.add_argument("--out", default=None, help="append rows to DIR/hit_phases.csv")
    args = ap.parse_args(argv)
    from torchmsa.alphabet import PROTEIN, encode
    from torchmsa.cpu import strip as cpu_strip
    from torchmsa.ops import local_hits, local_strips
    from torchmsa.ops.local import local_topk_codes
    from torchmsa.scoring import get_scoring

    dev = torch.device(args.device)
    mat = get_scoring("protein").matrix
    p = make_pair(args.n, int(args.m), planted=50, seed=0)
    q = torch.from_numpy(encode(p.query, PROTEIN)[0]).to(dev)
    s = torch.from_numpy(encode(p.subject, PROTEIN)[0]).to(dev)
    t0 = time.perf_counter()
    want = local_topk_codes(q, s, mat, 10, 1, k=args.k)
    first = time.perf_counter() - t0
    clock = Clock(dev)
    dp_cls, tracer = local_strips.StripDP, local_hits.Tracer
    for owner, name, label in [
        (dp_cls, "first_pass", "first_pass"),
        (dp_cls, "top", "top"),
        (tracer, "trace", "trace"),
        (dp_cls, "forbid", "forbid_pairs"),
        (dp_cls, "recompute", "recompute"),
        (dp_cls, "_segments", "segments"),
        (dp_cls, "_refill", "refill_jobs"),
        (dp_cls, "_fill", "fill_launch"),
        (local_strips, "strip_fill", "strip_fill"),
        (cpu_strip, "rect_traceback", "rect_traceback"),
        (cpu_strip, "rect_first_row", "rect_first_row"),
    ]:
        clock.wrap(owner, name, label)
    for config in args.configs.split(","):
        how, sync = config.split(":")
        local_strips.FUSED_CHUNKS = 1 if how == "fused" else 0
        if dev.type == "cuda":
            from torchmsa._triton import strip as triton_strip

            triton_strip.SYNC_FEW = int(sync)
            torch.cuda.synchronize(dev)
        clock.seconds.clear()
        clock.calls.clear()
        t0 = time.perf_counter()
        hits = local_topk_codes(q, s, mat, 10, 1, k=args.k)
        whole = time.perf_counter() - t0
        same = all(torch.equal(x, y) for x, y in zip(hits[:7], want[:7]))
        lengths = (hits.query_end - hits.query_start).numpy()
        out = {
            "config": config,
            "n": args.n,
            "m": int(args.m),
            "k": args.k,
            "first_call_s": round(first, 3),
            "timed_call_s": round(whole, 3),
            "same_hits": same,
            "hits": int(hits.score.numel()),
            "refilled": int(hits.refilled),
            "hit_query_len_median": float(np.median(lengths)) if lengths.size else 0.0,
            "phases": {
                k: {"s": round(v, 4), "calls": clock.calls[k]} for k, v in clock.seconds.items()
            },
        }
        print(json.dumps(out), flush=True)
        if args.out:
            append_rows("hit_phases", rows(out), run_metadata(args.device, argv), args.out)
    if args.cprofile:
        prof = cProfile.Profile()
        prof.enable()
        local_topk_codes(q, s, mat, 10, 1, k=args.k)
        prof.disable()
        pstats.Stats(prof).sort_stats("tottime").print_stats(args.cprofile)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
