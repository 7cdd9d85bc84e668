"""Where a waiting job runs: the GPU's batch or a CPU worker process, from a cost model.

GMSA's pre-computation (seed 004, its Algorithm 2) times a few small alignments on each
device before it splits work between them. :meth:`CostModel.measure` does the same: two
synthetic families (16 x 120 and 128 x 400 residues, default mode) aligned on the host (with
the threads one CPU worker process gets) and on the GPU, each once untimed first (Triton
compiles and numba loads for both shapes stay out of the fit), each device's time fitted as
``a + b * cells`` with
``cells = mode factor x N x L^2`` (accurate mode: pairs x L^2, its all-pairs local
alignments). :meth:`CostModel.rule` is the fitted fallback (no measurement, or a CPU-only
machine). :func:`split` then assigns jobs, largest first, to the side that would finish them
soonest: the GPU's one batch (its cost is one launch overhead plus the jobs' cells) or the
least loaded of the CPU worker processes; each job's reason is recorded.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

__all__ = ["CostModel", "Placement", "cells", "split"]

MODE_FACTOR = {"fast": 1.0, "default": 2.5}


def cells(n: int, longest: int, mode: str) -> float:
    """A job's work in DP cells (see the module docstring)."""
    if mode == "accurate":
        return 4.0 * n * (n - 1) / 2 * longest * longest
    return MODE_FACTOR.get(mode, 2.5) * n * longest * longest


@dataclass(frozen=True)
class CostModel:
    """Seconds of a job of ``c`` cells: ``a + b * c`` per device kind."""

    cpu: tuple[float, float]
    gpu: tuple[float, float] | None
    source: str

    @classmethod
    def rule(cls, gpu: bool = False) -> CostModel:
        """The fitted rule: ~4.4e-8 s a cell on one host core pair (300 x 498 in default mode:
        ~8 s on the CPU here), a GPU ~20x that per cell after ~0.3 s of launches."""
        return cls((0.05, 4.4e-8), (0.3, 2.2e-9) if gpu else None, "fitted N*L^2 rule")

    @classmethod
    def measure(cls, device: str, cpu_threads: int | None = None) -> CostModel:
        """Time two small families on the host (``cpu_threads`` threads: one CPU worker
        process's share) and on ``device`` (a CUDA device), and fit."""
        from torchmsa.config import ExecutionPolicy
        from torchmsa.ops.backend import synchronize
        from torchmsa.pipeline import align
        from torchmsa.synthetic import family

        fams = [family(16, 120, 1), family(128, 400, 2)]
        sizes = [cells(len(f), max(len(s) for s in f), "default") for f in fams]
        fits = {}
        for kind, dev in (("cpu", "cpu"), ("gpu", device)):
            if dev == "cpu" and kind == "gpu":
                continue
            policy = ExecutionPolicy(threads=cpu_threads if kind == "cpu" else None)
            backend = "cpu" if dev == "cpu" else "auto"
            for fam in fams:  # compiles and loads, untimed
                align(fam, device=dev, mode="default", backend=backend, policy=policy)
            times = []
            for fam in fams:
                synchronize(dev)
                t0 = time.perf_counter()
                align(fam, device=dev, mode="default", backend=backend, policy=policy)
                synchronize(dev)
                times.append(time.perf_counter() - t0)
            b = max(1e-12, (times[1] - times[0]) / (sizes[1] - sizes[0]))
            fits[kind] = (max(0.0, times[0] - b * sizes[0]), b)
        return cls(fits["cpu"], fits.get("gpu"), "measured at start-up")

    def seconds(self, kind: str, c: float) -> float:
        a, b = self.cpu if kind == "cpu" else self.gpu
        return a + b * c


@dataclass(frozen=True)
class Placement:
    """Where one job goes and why."""

    where: str  # "gpu-batch" | "cpu-worker"
    reason: str
    predicted: float


def split(jobs: list[tuple[str, float]], model: CostModel, cpu_lanes: int) -> dict[str, Placement]:
    """Assign ``(job id, cells)`` items to the GPU batch or a CPU lane (see the module
    docstring); without a GPU model every job goes to the CPU."""
    out: dict[str, Placement] = {}
    lanes = [0.0] * max(1, cpu_lanes)
    gpu_load = 0.0
    for job_id, c in sorted(jobs, key=lambda item: -item[1]):
        k = min(range(len(lanes)), key=lanes.__getitem__)
        t_cpu = lanes[k] + model.seconds("cpu", c)
        if model.gpu is None:
            lanes[k] = t_cpu
            out[job_id] = Placement("cpu-worker", "no GPU on this worker", t_cpu)
            continue
        a, b = model.gpu
        t_gpu = (gpu_load or a) + b * c
        why = (
            f"{c:.3g} cells: predicted to finish at {t_gpu:.2f} s in the GPU batch, "
            f"{t_cpu:.2f} s on a CPU worker ({model.source})"
        )
        if t_gpu <= t_cpu:
            gpu_load = t_gpu
            out[job_id] = Placement("gpu-batch", why, t_gpu)
        else:
            lanes[k] = t_cpu
            out[job_id] = Placement("cpu-worker", why, t_cpu)
    return out
