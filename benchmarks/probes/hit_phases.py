"""Where a best-K hit's time goes (issue #38, decision 0064's "the hits do not scale"): one
process's ``local_topk_codes`` on the benchmark's pair, the first call untimed, then one
call with the hit loop's pieces timed (each wrapped, the GPU synchronised around it): the
first pass, finding the best cell, the traceback, forbidding the pairs and the refills, with
the strip-fill launches and host copies they made.

    python -m benchmarks.probes.hit_phases [--qlen 10240] [--slen 1e8] [--topk 100] [--cprofile 30]
        [--configs fused:16,two:16] [--out DIR]
    torchrun --standalone --nproc-per-node 2 -m benchmarks.probes.hit_phases --ranks ...

``--configs``: one timed call per entry, ``fused`` or ``two`` (a refill's warm-ups in its
launch or in one before, ``local_strips.FUSED_CHUNKS``) and the Triton kernel's steps
between a pass's synchronisations in launches of few segments (``SYNC_FEW``); each call's
hits must equal the first call's. ``--out``: one row per configuration and phase appended to
``DIR/hit_phases.csv`` (with the run's metadata). ``--strings``: the call is the public
``local_topk`` on the texts (as ``benchmarks.long_local`` times it), with its own pieces timed
too (the alphabet, the encoding, the rank's share of the subject, the codes' call, the rows).
``--ranks`` (under torchrun): every rank
shares the strips (``ranks=`` a session on its own GPU) and prints its own phases, with the
time spent in the ranks' meetings (``meetings``: ``Session.all_gather``, waiting for the
slower rank included); rank 0 writes the rows.
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
    ap.add_argument("--qlen", type=int, default=10240, help="query residues")
    ap.add_argument("--slen", type=float, default=1e8, help="subject residues")
    ap.add_argument("--topk", type=int, default=100, help="hits")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--cprofile", type=int, default=0, help="print the top N of a last call")
    ap.add_argument("--configs", default="fused:16", help="fused|two:SYNC_FEW, comma list")
    ap.add_argument("--out", default=None, help="append rows to DIR/hit_phases.csv")
    ap.add_argument("--ranks", action="store_true", help="this process is a torchrun rank")
    ap.add_argument("--strings", action="store_true", help="time local_topk on the texts")
    args = ap.parse_args(argv)
    from torchmsa.alphabet import PROTEIN, encode
    from torchmsa.cpu import strip as cpu_strip
    from torchmsa.ops import local as ops_local
    from torchmsa.ops import local_hits, local_strips
    from torchmsa.ops.local import local_topk_codes
    from torchmsa.scoring import get_scoring

    dev, ranks = torch.device(args.device), None
    if args.ranks:
        from torchmsa.distributed import World, session

        ranks = session(World.from_env(), args.device).__enter__()
        dev = ranks.device
    mat = get_scoring("protein").matrix
    p = make_pair(args.qlen, int(args.slen), planted=50, seed=0)
    q = torch.from_numpy(encode(p.query, PROTEIN)[0]).to(dev)
    s = torch.from_numpy(encode(p.subject, PROTEIN)[0]).to(dev)
    if args.strings:  # the public call on the texts, as benchmarks.long_local times it
        from torchmsa import local_topk

        def call():
            return local_topk(p.query, p.subject, k=args.topk, matrix="BLOSUM62", gap_open=10,
                              gap_extend=1, seqtype="protein", device=dev, ranks=ranks)  # fmt: skip
    else:

        def call():
            return local_topk_codes(q, s, mat, 10, 1, k=args.topk, ranks=ranks)

    t0 = time.perf_counter()
    want = call()
    first = time.perf_counter() - t0
    clock = Clock(dev)
    if ranks is not None:
        clock.wrap(type(ranks), "all_gather", "meetings")
    if args.strings:
        for name in ("resolve_alphabet", "encode", "_subject_share", "_topk_codes"):
            clock.wrap(ops_local, name, name.lstrip("_"))
        clock.wrap(ops_local, "rows_from_ops", "rows")
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
    meta, printed = run_metadata(str(dev), argv), []
    for config in args.configs.split(","):
        how, sync = config.split(":")
        local_strips.FUSED_CHUNKS = 1 if how == "fused" else 0
        if dev.type == "cuda":
            from torchmsa._triton import strip as triton_strip

            triton_strip.SYNC_FEW = int(sync)
            torch.cuda.synchronize(dev)
        if ranks is not None:
            ranks.all_gather(None)
        clock.seconds.clear()
        clock.calls.clear()
        t0 = time.perf_counter()
        hits = call()
        whole = time.perf_counter() - t0
        if args.strings:
            same, count, refilled = hits == want, len(hits), ""
            lengths = np.array([h.query[1] - h.query[0] for h in hits])
        else:
            same = all(torch.equal(x, y) for x, y in zip(hits[:7], want[:7]))
            count, refilled = int(hits.score.numel()), int(hits.refilled)
            lengths = (hits.query_end - hits.query_start).numpy()
        out = {
            "config": config,
            "api": "strings" if args.strings else "codes",
            "rank": 0 if ranks is None else ranks.rank,
            "world_size": 1 if ranks is None else ranks.size,
            "n": args.qlen,
            "m": int(args.slen),
            "k": args.topk,
            "first_call_s": round(first, 3),
            "timed_call_s": round(whole, 3),
            "same_hits": same,
            "hits": count,
            "refilled": refilled,
            "hit_query_len_median": float(np.median(lengths)) if lengths.size else 0.0,
            "phases": {
                k: {"s": round(v, 4), "calls": clock.calls[k]} for k, v in clock.seconds.items()
            },
        }
        print(json.dumps(out), flush=True)
        printed.append(out)
        if args.out and (ranks is None or ranks.leader):
            append_rows("hit_phases", rows(out), meta, args.out)
    if ranks is not None:  # every rank's rows on rank 0 (the CSV's), then done
        every = ranks.all_gather(printed)
        if args.out and ranks.leader:
            for other in every[1:]:
                for out in other:
                    append_rows("hit_phases", rows(out), meta, args.out)
        return 0
    if args.cprofile:
        prof = cProfile.Profile()
        prof.enable()
        local_topk_codes(q, s, mat, 10, 1, k=args.topk)
        prof.disable()
        pstats.Stats(prof).sort_stats("tottime").print_stats(args.cprofile)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
