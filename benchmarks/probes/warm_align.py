"""Where a warm ``torchmsa.align`` of a small family spends its time (issue #36's in-process
figure, 0.1 s for 50 sequences in default mode): the cases aligned once untimed, then each
timed (CUDA synchronised), then one case under cProfile (functions by own and by cumulative
time) and under ``torch.profiler`` (kernel launches, host waits, GPU time). A one-off look,
not a benchmark: it prints, writes no CSV.

    python -m benchmarks.probes.warm_align CASE.fasta ... [--mode default] [--device cuda]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import statistics
import time

import torch


def _sync() -> float:
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    return time.perf_counter()


def main(argv=None) -> int:
    import torchmsa
    from torchmsa import stages as stages_mod
    from torchmsa.io import read_sequences

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cases", nargs="+")
    ap.add_argument("--mode", default="default")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--rows", type=int, default=30)
    args = ap.parse_args(argv)
    seqs = [read_sequences(p) for p in args.cases]
    kw = dict(mode=args.mode, device=args.device)
    for s in seqs:
        torchmsa.align(s, **kw)
    times = []
    for s in seqs:
        start = _sync()
        torchmsa.align(s, **kw)
        times.append(_sync() - start)
    print(f"warm: median {statistics.median(times) * 1e3:.1f} ms over {len(times)} cases;",
          " ".join(f"{t * 1e3:.0f}" for t in times))  # fmt: skip
    pick = seqs[times.index(sorted(times)[len(times) // 2])]
    stages: dict[str, float] = {}

    def listen(name: str, _start: float, seconds: float) -> None:
        stages[name] = stages.get(name, 0.0) + seconds

    stages_mod.listen(listen)
    start = _sync()
    torchmsa.align(pick, **kw)
    wall = _sync() - start
    stages_mod.unlisten(listen)
    print(f"median case: {wall * 1e3:.1f} ms; stages (ms):",
          {k: round(v * 1e3, 1) for k, v in stages.items()})  # fmt: skip
    prof = cProfile.Profile()
    prof.enable()
    torchmsa.align(pick, **kw)
    _sync()
    prof.disable()
    for key in ("tottime", "cumtime"):
        out = io.StringIO()
        pstats.Stats(prof, stream=out).sort_stats(key).print_stats(args.rows)
        print(out.getvalue())
    if torch.cuda.is_available():
        from torch.profiler import ProfilerActivity, profile

        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as tp:
            torchmsa.align(pick, **kw)
            _sync()
        ops = tp.key_averages()
        gpu_ms = sum(e.self_device_time_total for e in ops) / 1e3
        launches = sum(e.count for e in ops if e.key in ("cudaLaunchKernel", "cuLaunchKernel"))
        waits = {
            e.key: e.count
            for e in ops
            if e.key in ("cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaMemcpyAsync")
        }
        print(f"{launches} launches, {gpu_ms:.1f} ms on the GPU, host waits {waits}")
        print(ops.table(sort_by="self_cpu_time_total", row_limit=20))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
