"""Long local alignment (issue #38, seed 003): one query against one long subject, score-only on
one CPU core against parasail, and best-K (``torchmsa.local_topk``) on the seed's grid.

    python -m benchmarks.long_local --cpu [--n 128,1000] [--m 1e5,1e6] [--repeats 3]
        [--k 1,100] [--topk-max-cells 1.2e9] [--core C] [--quick] [--out DIR]
    python -m benchmarks.long_local --gpu [--n ...] [--m ...] [--k 1,100] [--max-cells X]
        [--timeout S] [--deadline S] [--cold-all] [--keep-cache] [--quick] [--out DIR]
        [--ranks 1,2,4]

Pairs come from :func:`benchmarks.ssca.make_pair` (protein by default: BLOSUM62, gap open 10,
extend 1; ``--seqtype dna``: NUC.4.4, 10, 1), ``--planted`` segments each; GCUPS = n * m / s / 1e9.

``--cpu``: one core (``NUMBA_NUM_THREADS=1``, ``torch.set_num_threads(1)``, the process pinned to
``--core``, default the last one allowed). Score-only: ``torchmsa.pairwise_align(q, s,
mode="local", traceback=False, device="cpu")`` against parasail's ``sw_striped_profile_sat``
(profile built inside the timing) and ``sw_striped_32``, interleaved, median of ``--repeats``
after a compile warm-up; the scores must agree (parasail's ``open`` is a gap's first residue, as
torchmsa's ``gap_open``: a gap of k costs ``open + (k - 1) * extend`` in both), and the end cells
are compared. Then ``local_topk`` for each ``--k`` where ``n * m <= --topk-max-cells``.
Memory: the growth of the process's peak resident set during the call (``VmHWM`` reset through
``/proc/self/clear_refs``).

``--gpu``: the seed's Table V grid (n = 128, 1024, 10240 against m = 10^5..10^8; n = 100352
against m = 2 * 10^5, 10^6, 10^7), ``local_topk`` for each ``--k``, each case a fresh process
(``--case n,m,k``): ``cold`` is the first call (Triton compile or cache load included, the CUDA
context already up: ``context_s``), ``warm`` the second; peak memory is
``torch.cuda.max_memory_allocated`` of each call. The children share one Triton/numba cache
folder, empty when the run starts (``cache_state``: what each child found there;
``--cold-all``: an empty one for every case; ``--keep-cache``: the caller's). Cases are run
smallest first and rows appended after each, so a run cut short keeps what it measured.

``--ranks 1,2,4``: each case once per world size, the child started by ``torchrun
--standalone --nproc-per-node R`` (1 included, so every size pays the same launcher) and
``local_topk(..., ranks=session)`` sharing the strips (decision 0059); ``seconds`` is the slowest
rank's call (each call starts after a barrier), ``process_s`` the whole ``torchrun`` command
(start, the pair's generation on every rank, both calls), ``speedup`` the 1-rank row's seconds
(same call) over this row's, and ``ranks_agree`` whether every rank returned the same hits.

Every ``local_topk`` call is checked: ``recall`` is the share of planted segments (at most K)
that a hit overlaps in both query and subject, ``top_planted`` whether hit 1 does, and
``bad_hits`` counts hits whose rows do not spell the sequences' slices or do not score the hit's
score. Appends rows to ``long_local.csv`` in ``--out`` (``benchmarks/results``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence

from benchmarks.harness import Timer, append_rows, markdown_table, run_metadata
from benchmarks.ssca import Planted, make_pair

GO, GE = 10, 1
MATRIX = {"protein": "BLOSUM62", "dna": "NUC.4.4"}
PARASAIL_MATRIX = {"protein": "blosum62", "dna": "nuc44"}
SEED_GRID = [(n, m) for n in (128, 1024, 10240) for m in (10**5, 10**6, 10**7, 10**8)] + [
    (100352, m) for m in (2 * 10**5, 10**6, 10**7)
]
QUICK_CPU, QUICK_GPU = [(64, 20_000)], [(128, 10**5), (1024, 10**5)]
QUICK_PLANTED = 10
TABLE = ["case", "tool", "variant", "ranks", "call", "seconds", "speedup", "gcups", "peak_mem_mb"]
TABLE += ["recall", "note"]


# ---- pure helpers ---------------------------------------------------------------------------


def parse_sizes(text: str) -> list[int]:
    """``"128,1e5"`` -> ``[128, 100000]``."""
    return [int(float(x)) for x in text.split(",") if x.strip()]


def gcups(n: int, m: int, seconds: float) -> float:
    return n * m / seconds / 1e9 if seconds and seconds > 0 else float("nan")


def _overlap(a: Sequence[int], b: Sequence[int]) -> bool:
    return a[0] < b[1] and b[0] < a[1]


def recall(hits: Sequence, planted: Sequence[Planted], k: int) -> dict:
    """How well ``hits`` (``LocalHit``: ``.query``, ``.subject`` 0-based half-open) find the
    planted segments.

    Returns:
        ``recall``: planted segments a hit overlaps (query and subject), over ``min(len(planted),
        k)``, at most 1 (one hit may span two segments); ``top_planted``: hit 1 overlaps one;
        ``hits_on_planted``: hits that overlap one.
    """
    on = [
        [
            _overlap(h.query, (p.q_start, p.q_end)) and _overlap(h.subject, (p.s_start, p.s_end))
            for p in planted
        ]
        for h in hits
    ]  # [hits][planted]
    found = sum(any(col) for col in zip(*on)) if on else 0
    want = min(len(planted), k)
    return {
        "recall": min(found, want) / want if want else float("nan"),
        "top_planted": bool(on) and any(on[0]),
        "hits_on_planted": sum(any(row) for row in on),
    }


def rescore(qrow: str, srow: str, matrix, go: int, ge: int) -> int:
    """The score of two gapped rows: ``matrix[a, b]`` per aligned pair, ``go + (L - 1) * ge``
    per gap run of length ``L`` (a run in either row)."""
    total, run = 0, None  # run: which row is in a gap ("q"/"s") or None
    for a, b in zip(qrow, srow):
        gap = "q" if a == "-" else "s" if b == "-" else None
        if gap is None:
            total += int(matrix[a.upper(), b.upper()])
        else:
            total -= ge if gap == run else go
        run = gap
    return total


def bad_hits(hits: Sequence, query: str, subject: str, matrix, go: int, ge: int) -> int:
    """Hits whose rows do not spell ``query[q0:q1]`` / ``subject[s0:s1]`` or do not score
    ``hit.score``."""
    bad = 0
    for h in hits:
        qrow, srow = h.aligned
        ok = (
            len(qrow) == len(srow)
            and qrow.replace("-", "") == query[h.query[0] : h.query[1]]
            and srow.replace("-", "") == subject[h.subject[0] : h.subject[1]]
            and rescore(qrow, srow, matrix, go, ge) == h.score
        )
        bad += not ok
    return bad


# ---- measuring ------------------------------------------------------------------------------


class PeakRSS:
    """The growth of the process's peak resident set over a ``with`` block, in MB (``nan`` where
    ``/proc/self/clear_refs`` cannot reset the peak)."""

    @staticmethod
    def _status(key: str) -> float:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) / 1024
        return float("nan")

    def __enter__(self) -> PeakRSS:
        self.extra_mb = self.peak_mb = float("nan")
        try:
            with open("/proc/self/clear_refs", "w") as fh:
                fh.write("5")
            self._before = self._status("VmRSS")
        except OSError:
            self._before = None
        return self

    def __exit__(self, *exc) -> None:
        if self._before is not None:
            self.peak_mb = self._status("VmHWM")
            self.extra_mb = self.peak_mb - self._before


class PeakCUDA:
    """``torch.cuda.max_memory_allocated`` over a ``with`` block (MB), and its growth."""

    def __enter__(self) -> PeakCUDA:
        import torch

        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        self._before = torch.cuda.memory_allocated()
        return self

    def __exit__(self, *exc) -> None:
        import torch

        torch.cuda.synchronize()
        peak = torch.cuda.max_memory_allocated()
        self.peak_mb, self.extra_mb = peak / 2**20, (peak - self._before) / 2**20


def _parasail():
    try:
        import parasail
    except ImportError:
        return None
    return parasail


def _single_core(core: int | None) -> int:
    """Run on one core: numba and torch one thread each, the process pinned to ``core``."""
    os.environ["NUMBA_NUM_THREADS"] = "1"  # read when numba is imported
    os.environ["OMP_NUM_THREADS"] = "1"
    allowed = sorted(os.sched_getaffinity(0))
    core = allowed[-1] if core is None else core
    os.sched_setaffinity(0, {core})
    import numba
    import torch

    numba.set_num_threads(1)
    torch.set_num_threads(1)
    return core


def _case(n: int, m: int) -> str:
    """``n10240-m1e8``: trailing zeros (three or more) as an exponent."""

    def short(x: int) -> str:
        zeros = len(str(x)) - len(str(x).rstrip("0"))
        return f"{x // 10**zeros}e{zeros}" if zeros >= 3 else str(x)

    return f"n{short(n)}-m{short(m)}"


def _topk_summary(hits, pair, k: int, bio_matrix) -> dict:
    out = {"hits": len(hits), "top_score": hits[0].score if hits else 0}
    out.update(recall(hits, pair.planted, k))
    out["bad_hits"] = bad_hits(hits, pair.query, pair.subject, bio_matrix, GO, GE)
    return out


def _bio_matrix(seqtype: str):
    from Bio.Align import substitution_matrices

    return substitution_matrices.load(MATRIX[seqtype])


# ---- --cpu ----------------------------------------------------------------------------------


def _score_calls(pair, seqtype: str, ps) -> list[tuple[str, str, object]]:
    """``(tool, short name, call)`` for each score-only provider; a call returns
    ``(score, end_query, end_subject)`` (ends exclusive; score ``None`` when saturated)."""
    import torchmsa

    q, s = pair.query, pair.subject
    kw = dict(mode="local", matrix=MATRIX[seqtype], gap_open=GO, gap_extend=GE, seqtype=seqtype)

    def ours():
        r = torchmsa.pairwise_align(q, s, traceback=False, device="cpu", **kw)
        return r.score, r.a_range[1], r.b_range[1]

    calls = [("torchmsa pairwise_align", "torchmsa", ours)]
    if ps is None:
        return calls
    mat = getattr(ps, PARASAIL_MATRIX[seqtype])

    def sat():
        r = ps.sw_striped_profile_sat(ps.profile_create_sat(q, mat), s, GO, GE)
        return (None if r.saturated else r.score), r.end_query + 1, r.end_ref + 1

    def s32():
        r = ps.sw_striped_32(q, s, GO, GE, mat)
        return (None if r.saturated else r.score), r.end_query + 1, r.end_ref + 1

    return calls + [
        ("parasail sw_striped_profile_sat", "sat", sat),
        ("parasail sw_striped_32", "32", s32),
    ]


def _timed_rows(base: dict, times: list[float], n: int, m: int) -> dict:
    sec = statistics.median(times)
    return dict(
        base,
        call=f"median of {len(times)}",
        repeats=len(times),
        seconds=sec,
        times=";".join(f"{x:.4f}" for x in times),
        gcups=gcups(n, m, sec),
        mem_kind="VmHWM growth",
    )


def cpu_case(n: int, m: int, args, ps, topk) -> tuple[list[dict], bool]:
    """Rows of one CPU case, and whether every check passed."""
    pair = make_pair(n, m, seqtype=args.seqtype, planted=args.planted, seed=args.seed)
    base = {"case": _case(n, m), "n": n, "m": m, "cells": n * m, "spacing": pair.spacing}
    base.update(threads=1, core=args.core)
    calls = _score_calls(pair, args.seqtype, ps)
    times = {tool: [] for tool, _, _ in calls}
    mem, got = {tool: 0.0 for tool, _, _ in calls}, {}
    for _ in range(args.repeats):  # interleaved, so drift on a shared machine hits all alike
        for tool, _, call in calls:
            with PeakRSS() as peak, Timer() as t:
                got[tool] = call()
            times[tool].append(t.seconds)
            mem[tool] = max(mem[tool], peak.extra_mb)
    want = got[calls[0][0]]
    rows, ok = [], True
    for tool, short, _ in calls:
        agree = got[tool][0] == want[0]
        ok &= agree
        backend = "numba" if short == "torchmsa" else "parasail"
        row = dict(base, tool=tool, backend=backend, variant="score-only", score=got[tool][0])
        row.update(score_agrees=agree, ends_agree=got[tool] == want, extra_mem_mb=mem[tool])
        rows.append(_timed_rows(row, times[tool], n, m))
    for (_, short, _), row in zip(calls[1:], rows[1:]):
        rows[0][f"vs_parasail_{short}"] = rows[0]["gcups"] / row["gcups"]
    if n * m > args.topk_max_cells:
        note = "above --topk-max-cells"
        return rows + [dict(base, tool="torchmsa local_topk", backend="numba", note=note)], ok
    bio = _bio_matrix(args.seqtype)
    kw = dict(matrix=MATRIX[args.seqtype], gap_open=GO, gap_extend=GE, seqtype=args.seqtype)
    for k in args.k:
        secs, extra = [], 0.0
        for _ in range(args.repeats):
            with PeakRSS() as peak, Timer() as t:
                hits = topk(pair.query, pair.subject, k=k, device="cpu", **kw)
            secs.append(t.seconds)
            extra = max(extra, peak.extra_mb)
        summary = _topk_summary(hits, pair, k, bio)
        hit1 = bool(hits) and hits[0].score == want[0]
        ok &= hit1 and summary["bad_hits"] == 0
        row = dict(base, tool="torchmsa local_topk", backend="numba", variant=f"best-{k}", k=k)
        row.update(hit1_agrees=hit1, extra_mem_mb=extra, **summary)
        rows.append(_timed_rows(row, secs, n, m))
    return rows, ok


def run_cpu(args) -> int:
    args.core = _single_core(args.core)
    import torchmsa

    ps, topk = _parasail(), torchmsa.local_topk
    if ps is None:
        print(
            "note: parasail is not installed (pip install parasail, or pip install -e "
            "'.[bench]'): its rows are skipped",
            file=sys.stderr,
        )
    warm = make_pair(64, 4000, planted=2, seqtype=args.seqtype, seed=1)  # compile / cache load
    kw = dict(matrix=MATRIX[args.seqtype], gap_open=GO, gap_extend=GE, seqtype=args.seqtype)
    q, s = warm.query, warm.subject
    torchmsa.pairwise_align(q, s, mode="local", traceback=False, device="cpu", **kw)
    topk(q, s, k=2, device="cpu", **kw)
    meta = run_metadata("cpu")
    all_ok, table = True, []
    for n, m in args.grid:
        rows, ok = cpu_case(n, m, args, ps, topk)
        all_ok &= ok
        if ps is None:
            case = {key: rows[0][key] for key in ("case", "n", "m", "cells", "threads", "core")}
            rows.append(dict(case, tool="parasail", backend="parasail", note="not installed"))
        _save(rows, args, meta)
        table += rows
        for r in rows:
            speed = f"{r['gcups']:.3f} GCUPS" if "gcups" in r else r["note"]
            print(f"{r['case']} {r['tool']} {r.get('variant', '')}: {speed}", flush=True)
    cols = ["case", "tool", "variant", "seconds", "gcups", "score_agrees", "vs_parasail_sat"]
    print(markdown_table(table, cols + ["vs_parasail_32", "extra_mem_mb", "recall", "note"]))
    if not all_ok:
        print("error: a check failed (score_agrees, hit1_agrees or bad_hits)", file=sys.stderr)
    return 0 if all_ok else 1


# ---- --gpu ----------------------------------------------------------------------------------


def run_case(args) -> dict:
    """One ``--case n,m,k`` in this (fresh) process: a cold and a warm ``local_topk`` call
    (``--distributed``: this process is one rank of several)."""
    with contextlib.ExitStack() as stack:
        return _run_case(args, stack)


def _run_case(args, stack: contextlib.ExitStack) -> dict:
    n, m, k = parse_sizes(args.case)
    t0 = time.perf_counter()
    pair = make_pair(n, m, seqtype=args.seqtype, planted=args.planted, seed=args.seed)
    out = {"n": n, "m": m, "k": k, "gen_s": time.perf_counter() - t0, "spacing": pair.spacing}
    out["calls"] = []
    states = []
    for name in ("triton", "numba"):  # what this process found in the compile caches
        folder = os.environ.get(f"{name.upper()}_CACHE_DIR", "")
        empty = bool(folder) and os.path.isdir(folder) and not os.listdir(folder)
        states.append(f"{name} {'empty' if empty else 'filled'}")
    out["cache_state"] = ", ".join(states)
    import torch

    from torchmsa import local_topk as topk

    device, ranks, log = args.device, None, []
    if args.distributed:
        from torchmsa.distributed import World, session

        ranks = stack.enter_context(session(World.from_env(), device, say=log.append))
        device = ranks.device
        ranks.all_gather(None)  # every rank has its pair
    cuda = torch.device(device).type == "cuda"
    if cuda:
        with Timer(cuda=True) as t:
            torch.zeros(1, device=device)
        out["context_s"] = t.seconds
    bio, first = _bio_matrix(args.seqtype), None
    kw = dict(matrix=MATRIX[args.seqtype], gap_open=GO, gap_extend=GE, seqtype=args.seqtype)
    for call in ("cold", "warm"):
        if ranks is not None:
            ranks.all_gather(None)
        try:
            with PeakCUDA() if cuda else PeakRSS() as peak, Timer(cuda=cuda) as t:
                hits = topk(pair.query, pair.subject, k=k, device=device, ranks=ranks, **kw)
        except Exception as exc:  # recorded (out of memory, a kernel error); the run goes on
            out["calls"].append({"call": call, "error": f"{type(exc).__name__}: {exc}"[:300]})
            break
        key = [(h.score, tuple(h.query), tuple(h.subject), h.aligned) for h in hits]
        call_out = dict(call=call, seconds=t.seconds, peak_mem_mb=peak.peak_mb)
        call_out["extra_mem_mb"] = peak.extra_mb
        if ranks is not None:
            every = ranks.all_gather((call_out, key))
            call_out["seconds"] = max(c["seconds"] for c, _ in every)
            call_out["peak_mem_mb"] = max(c["peak_mem_mb"] for c, _ in every)
            call_out["extra_mem_mb"] = max(c["extra_mem_mb"] for c, _ in every)
            call_out["ranks_agree"] = all(other == key for _, other in every)
        if ranks is None or ranks.leader:
            call_out.update(_topk_summary(hits, pair, k, bio))
        first = key if first is None else first
        out["calls"].append(dict(call_out, same_as_cold=key == first))
    out["leader"] = ranks is None or ranks.leader
    if ranks is not None:  # what each rank says it did (decision 0059's log line)
        out["rank_log"] = " | ".join(line for lines in ranks.all_gather(log) for line in lines)
    return out


def _children(args) -> list[tuple[int, int, int]]:
    """``(n, m, k)`` cases of the run, smallest first."""
    cases = [(n, m, k) for n, m in args.grid for k in args.k if n * m <= args.max_cells]
    return sorted(cases, key=lambda c: (c[0] * c[1], c[2]))


def _child(args, n: int, m: int, k: int, env: dict, timeout: float, ranks=None) -> dict:
    cmd = [sys.executable, "-m", "benchmarks.long_local", "--case", f"{n},{m},{k}"]
    if ranks is not None:
        launcher = [sys.executable, "-m", "torch.distributed.run", "--standalone"]
        cmd = [*launcher, "--nproc-per-node", str(ranks), *cmd[1:], "--distributed"]
    cmd += ["--device", args.device, "--seqtype", args.seqtype, "--seed", str(args.seed)]
    cmd += ["--planted", str(args.planted)]
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timeout after {timeout:.0f} s"}
    wall = time.perf_counter() - t0
    found = [
        json.loads(x[len("RESULT ") :]) for x in proc.stdout.splitlines() if x.startswith("RESULT ")
    ]
    found = [r for r in found if r.pop("leader", True)]
    if not found or proc.returncode:
        # the first traceback's last line (a rank's error), else the end of what was printed
        err = proc.stderr.strip()
        lines = [x for x in err.splitlines() if "Error" in x and not x.startswith(" ")]
        return {"error": f"exit {proc.returncode}: {(lines[0] if lines else err[-300:])[:300]}"}
    return dict(found[-1], process_s=wall)


def run_gpu(args, env: dict[str, str]) -> int:
    import torch

    if args.device != "cpu" and not torch.cuda.is_available():
        print(f"error: no CUDA GPU for --device {args.device}", file=sys.stderr)
        return 1
    root = None if args.keep_cache else tempfile.mkdtemp(prefix="long_local_cache_")
    meta = run_metadata(args.device)
    start, failed = time.perf_counter(), False
    backend = "numba" if args.device == "cpu" else "triton"
    mem_kind = "VmHWM growth" if args.device == "cpu" else "cuda max_memory_allocated"
    cases = [(c, r) for c in _children(args) for r in args.ranks or [None]]
    single: dict = {}  # (case, call) -> seconds of the 1-rank row
    for idx, ((n, m, k), world) in enumerate(cases):
        child_env = dict(env)
        if root is not None:
            folder = os.path.join(root, str(idx) if args.cold_all else "shared")
            for sub in ("triton", "numba"):
                child_env[f"{sub.upper()}_CACHE_DIR"] = os.path.join(folder, sub)
                os.makedirs(os.path.join(folder, sub), exist_ok=True)
        base = dict(case=_case(n, m), n=n, m=m, k=k, cells=n * m, tool="torchmsa local_topk")
        base.update(backend=backend, variant=f"best-{k}", mem_kind=mem_kind, ranks=world or "")
        left = args.deadline - (time.perf_counter() - start)
        if left < 30:
            _save([dict(base, note="skipped: --deadline reached")], args, meta)
            continue
        res = _child(args, n, m, k, child_env, min(args.timeout, left), world)
        calls = res.pop("calls", None) or [{"call": "", "error": res.pop("error", "no result")}]
        rows = []
        for c in calls:
            row = {**base, **{key: v for key, v in res.items() if key != "error"}, **c}
            row["note"] = row.pop("error", "")
            row["gcups"] = gcups(n, m, row.get("seconds"))
            if world is not None and row.get("seconds"):
                one = single.setdefault(
                    (n, m, k, row["call"]), row["seconds"] if world == 1 else None
                )
                row["speedup"] = one / row["seconds"] if one else ""
            failed |= bool(row["note"]) or row.get("bad_hits", 0) > 0
            rows.append(row)
        _save(rows, args, meta)
        for r in rows:
            print(markdown_table([r], TABLE).splitlines()[-1], flush=True)
    return 1 if failed else 0


# ---- main -----------------------------------------------------------------------------------


def _save(rows: list[dict], args, meta) -> None:
    for r in rows:
        r.update(scope="case", dataset=f"ssca-{args.seqtype}", mode="cpu" if args.cpu else "gpu")
        r.update(grid=args.grid_name, planted=args.planted, seed=args.seed)
        r.setdefault("note", "")
    append_rows("long_local", rows, meta, args.out)


def _grid(args) -> tuple[list[tuple[int, int]], str]:
    """The ``(n, m)`` cases: ``--n`` x ``--m`` when both are given, else the default grid
    (``--quick``'s, the CPU's or the seed's) filtered by the one given."""
    if args.n and args.m:
        return [(n, m) for n in parse_sizes(args.n) for m in parse_sizes(args.m)], "custom"
    if args.quick:
        grid, name = (QUICK_CPU if args.cpu else QUICK_GPU), "quick"
    elif args.cpu:
        grid, name = [(n, m) for n in (128, 1000) for m in (10**5, 10**6)], "default"
    else:
        grid, name = SEED_GRID, "seed"
    if args.n:
        grid, name = [c for c in grid if c[0] in parse_sizes(args.n)], f"{name} n={args.n}"
    if args.m:
        grid, name = [c for c in grid if c[1] in parse_sizes(args.m)], f"{name} m={args.m}"
    return grid, name


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cpu", action="store_true", help="one core: torchmsa vs parasail")
    ap.add_argument("--gpu", action="store_true", help="the seed's grid, a process per case")
    ap.add_argument("--quick", action="store_true", help="tiny sizes (smoke)")
    ap.add_argument("--n", default=None, help="query lengths, e.g. 128,1000")
    ap.add_argument("--m", default=None, help="subject lengths, e.g. 1e5,1e6")
    ap.add_argument("--k", default="1,100", help="best-K values for local_topk")
    ap.add_argument("--seqtype", default="protein", choices=sorted(MATRIX))
    ap.add_argument("--planted", type=int, default=None, help="planted segments (default 50)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeats", type=int, default=3, help="--cpu: timed calls per tool")
    ap.add_argument("--core", type=int, default=None, help="--cpu: the core to pin to")
    ap.add_argument("--topk-max-cells", type=float, default=1.2e9, help="--cpu local_topk cap")
    ap.add_argument("--device", default="cuda", help="--gpu: device of the cases")
    ap.add_argument("--max-cells", type=float, default=2e12, help="--gpu: skip larger cases")
    ap.add_argument("--timeout", type=float, default=300, help="--gpu: seconds per case")
    ap.add_argument("--deadline", type=float, default=math.inf, help="--gpu: seconds in all")
    ap.add_argument("--cold-all", action="store_true", help="--gpu: empty caches for each case")
    ap.add_argument("--keep-cache", action="store_true", help="--gpu: the caller's caches")
    ap.add_argument("--ranks", default=None, help="--gpu: world sizes under torchrun, e.g. 1,2,4")
    ap.add_argument("--case", default=None, help=argparse.SUPPRESS)  # n,m,k: one child case
    ap.add_argument("--distributed", action="store_true", help=argparse.SUPPRESS)  # a rank
    ap.add_argument("--out", default=None, help="results folder (default benchmarks/results)")
    args = ap.parse_args(argv)
    if args.planted is None:
        args.planted = QUICK_PLANTED if args.quick else 50
    if args.case:
        res = run_case(args)
        if res.get("leader", True):  # under torchrun, rank 0 speaks for the ranks
            print("RESULT " + json.dumps(res), flush=True)
        return 0
    if args.cpu == args.gpu:
        ap.error("choose one of --cpu or --gpu")
    args.k = parse_sizes(args.k)
    args.ranks = sorted(parse_sizes(args.ranks)) if args.ranks else None
    args.grid, args.grid_name = _grid(args)
    if args.cpu:
        return run_cpu(args)
    return run_gpu(args, dict(os.environ))


if __name__ == "__main__":
    sys.exit(main())
