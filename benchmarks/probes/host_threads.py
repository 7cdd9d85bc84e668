"""Decision 0062: where a small family's time goes on a machine with a GPU. Small families run
wholly on the host (``pipeline.placement.host_job``), so their time is numba's; this aligns
the cases of ``--cases`` in one process per mode and thread count, and with the host
functions' serial / parallel choice (``torchmsa.cpu.twins``) forced either way, then sums
each pipeline stage over the cases. A one-off look (issue #36), not a benchmark: it prints.

    python -m benchmarks.probes.host_threads --cases DIR [--device cuda] [--threads 16,4,1]

Each setting aligns every case once untimed, then twice timed; a case's time is the better of
the two. One line per setting: median, total and max over the cases. ``--profile ROWS``: then
the first setting's median case once more under cProfile (its functions by own and by
cumulative time) and, with CUDA, under ``torch.profiler`` (launches, waits for the device).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections import defaultdict
from pathlib import Path

FORCED = {"serial": 1 << 40, "parallel": -1}  # SERIAL_CELLS: always the twin / never


def _times(cases, mode, device, policy) -> list[float]:
    import torchmsa

    for seqs in cases:
        torchmsa.align(seqs, mode=mode, device=device, policy=policy)
    best = [float("inf")] * len(cases)
    for _ in range(2):
        for k, seqs in enumerate(cases):
            start = time.perf_counter()
            torchmsa.align(seqs, mode=mode, device=device, policy=policy)
            best[k] = min(best[k], time.perf_counter() - start)
    return best


def _stages(cases, mode, device) -> dict[str, float]:
    import torchmsa
    from torchmsa import stages

    total: dict[str, float] = defaultdict(float)

    def listener(name, start, seconds):
        total[name] += seconds

    stages.listen(listener)
    try:
        for seqs in cases:
            torchmsa.align(seqs, mode=mode, device=device)
    finally:
        stages.unlisten(listener)
    return dict(total)


def _profile(seqs, mode, device, policy, rows: int) -> None:
    """One align of ``seqs`` under cProfile, then under ``torch.profiler`` where CUDA is."""
    import torch

    import torchmsa
    from benchmarks.probes import cprofiled

    def sync():
        if torch.cuda.is_available():
            torch.cuda.synchronize()

    cprofiled(lambda: torchmsa.align(seqs, mode=mode, device=device, policy=policy), rows, sync)
    if not torch.cuda.is_available():
        return
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as tp:
        torchmsa.align(seqs, mode=mode, device=device, policy=policy)
        sync()
    ops = tp.key_averages()
    gpu_ms = sum(e.self_device_time_total for e in ops) / 1e3
    launches = sum(e.count for e in ops if e.key in ("cudaLaunchKernel", "cuLaunchKernel"))
    waits = {e.key: e.count for e in ops if e.key in ("cudaStreamSynchronize", "cudaMemcpyAsync")}
    print(f"{launches} launches, {gpu_ms:.1f} ms on the GPU, host waits {waits}")
    print(ops.table(sort_by="self_cpu_time_total", row_limit=20))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", type=Path, required=True, help="a folder of *.in.fasta")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--threads", default="16,4,1", help="comma list")
    ap.add_argument("--modes", default="default,accurate", help="comma list")
    ap.add_argument("--profile", type=int, default=0, help="profile the median case: rows")
    args = ap.parse_args(argv)

    import torchmsa.cpu.twins as twins
    from torchmsa import ExecutionPolicy
    from torchmsa.io import read_sequences

    files = sorted(args.cases.glob("*.in.fasta"))
    cases = [[r.seq for r in read_sequences(str(f))] for f in files]
    threads = [int(t) for t in args.threads.split(",")]
    auto = twins.SERIAL_CELLS
    for mode in args.modes.split(","):
        settings = [(t, "auto") for t in threads] + [(threads[0], name) for name in FORCED]
        for k, (t, choice) in enumerate(settings):
            twins.SERIAL_CELLS = FORCED.get(choice, auto)
            try:
                ts = _times(cases, mode, args.device, ExecutionPolicy(threads=t))
            finally:
                twins.SERIAL_CELLS = auto
            if k == 0:
                median_case = cases[ts.index(sorted(ts)[len(ts) // 2])]
            print(
                f"{mode:8s} threads {t:2d} {choice:8s}: median {statistics.median(ts):.3f} s, "
                f"total {sum(ts):.3f} s, max {max(ts):.3f} s over {len(ts)} cases"
            )
        total = _stages(cases, mode, args.device)
        ranked = sorted(total.items(), key=lambda kv: -kv[1])
        print(f"{mode:8s} stages, summed: " + ", ".join(f"{k} {v:.3f}" for k, v in ranked))
        if args.profile:
            policy = ExecutionPolicy(threads=threads[0])
            _profile(median_case, mode, args.device, policy, args.profile)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
