"""Compile ahead: :func:`warmup` (``torchmsa.warmup``) fills numba's and Triton's on-disk
caches so that the first ``align`` of a later process compiles nothing.

A cold first call pays for compiling: about a minute of numba functions on any machine, and on
a GPU one Triton variant per launch shape it meets (seconds each). ``warmup`` runs
small, fixed tasks that reach every numba function the pipeline calls and every Triton
variant of the kinds of call the pipeline makes (:mod:`torchmsa._triton.warm`: the DP launch
shapes come from a short fixed menu), each task in its own process so that the compiling runs
on every core. The caches are numba's (``NUMBA_CACHE_DIR``, else ``__pycache__`` beside the
package, else the user's cache folder when the package folder is read-only) and Triton's
(``TRITON_CACHE_DIR``, else ``~/.triton/cache``); ``TORCHMSA_CACHE_DIR`` puts both under one
folder (see :mod:`torchmsa.runtime`).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from torchmsa.runtime import usable_cores

__all__ = [
    "TaskReport", "WarmupReport", "warmup", "TASKS", "triton_build_counter", "numba_compiled",
]  # fmt: skip


@dataclass(frozen=True)
class TaskReport:
    """One task: its name, wall seconds in its process, and what it compiled there (numba
    overloads and Triton kernels built, not loaded from a cache)."""

    name: str
    seconds: float
    numba_compiled: int
    triton_compiled: int


@dataclass(frozen=True)
class WarmupReport:
    """What :func:`warmup` did: the device, wall seconds, each task, and the cache folders."""

    device: str
    seconds: float
    jobs: int
    tasks: list[TaskReport] = field(default_factory=list)
    numba_cache: str = ""
    triton_cache: str = ""

    def summary(self) -> str:
        built = (
            sum(t.numba_compiled for t in self.tasks),
            sum(t.triton_compiled for t in self.tasks),
        )
        return (
            f"warm-up on {self.device}: {len(self.tasks)} tasks in {self.seconds:.1f} s on "
            f"{self.jobs} processes; compiled {built[0]} numba overloads and {built[1]} Triton "
            f"kernels (numba cache: {self.numba_cache}; Triton cache: {self.triton_cache})"
        )


# ---- the tasks: each runs in a process of its own ----------------------------------------


def _family(n: int, length: int, seed: int, letters: str | None = None) -> dict[str, str]:
    """A small named family with substitutions and a deletion each (:mod:`torchmsa.synthetic`;
    ``letters``: its amino acids unless given)."""
    from torchmsa.synthetic import AMINO, family

    seqs = family(n, length, seed, letters=letters or AMINO, indels=True)
    return {f"w{k}": s for k, s in enumerate(seqs)}


def _align_modes(device: str, modes: tuple[str, ...], **kw) -> None:
    from torchmsa.pipeline import align

    fam = _family(24, 90, 1)
    for mode in modes:
        align(fam, mode=mode, device=device, **kw).fasta_bytes()  # and the command's output


def _trees(device: str) -> None:
    from torchmsa.pipeline import align

    fam = _family(24, 90, 2)
    for tree in ("upgma", "nj", "single", "lcs", "parttree"):
        align(fam, mode="fast", tree=tree, device=device)
    align(_family(16, 150, 3, "ACGT"), device=device)
    _large_tree_code()


def _large_tree_code() -> None:
    """What only large trees run (thousands of leaves and more): the compiled node walks and
    PartTree's flat distances, on arrays of the types they take there."""
    import numpy as np

    from torchmsa.cpu import tree_walks as walks
    from torchmsa.cpu.kmer import pair_distances_flat

    children = np.array([[0, 1]], np.int64)
    children.setflags(write=False)  # as a Tree holds them
    size = walks.subtree_sizes(children, 2)
    size.setflags(write=False)
    walks.node_groups(children, 2)
    walks.leaf_starts(children, 2, size)
    walks.sum_down(children, 2, np.zeros(3))
    one = np.ones(1, np.int64)
    pair_distances_flat(one, one, one)


def _pairwise(device: str) -> None:
    """Pairwise alignment (the full-matrix and the linear-space paths) and best-K local
    alignment's host code."""
    from torchmsa.ops.local import local_topk
    from torchmsa.ops.pairwise import pairwise_align

    fam = list(_family(6, 60, 4).values())
    for mode in ("global", "local", "semiglobal"):
        for traceback in (False, True):
            pairwise_align(fam[:3], fam[3:], mode=mode, traceback=traceback, device=device)
        long = "".join(fam)[:200]  # full matrices over 12 kB: the linear-space path
        pairwise_align(fam[0][:20], long, mode=mode, device="cpu", budget=12000)
    local_topk(fam[0], "".join(fam[1:]), k=3, device="cpu")


def _add_merge(device: str) -> None:
    from torchmsa.addmerge import add, merge
    from torchmsa.pipeline import align

    fam = _family(20, 80, 5)
    names = list(fam)
    ref = align({k: fam[k] for k in names[:12]}, device=device)
    add(ref, {k: fam[k] for k in names[12:]}, device=device)
    other = align({k: fam[k] for k in names[12:]}, device=device)
    merge(ref, other, device=device)


def _parallel(device: str) -> None:
    """The parallel functions that calls of few cells, and every call while they are not
    compiled, leave to their one-thread twins (:mod:`torchmsa.cpu.twins`): the default and
    accurate aligns again, every call taking the parallel function."""
    from torchmsa.cpu import twins

    saved = twins.SERIAL_CELLS
    twins.SERIAL_CELLS = -1
    try:
        _align_modes(device, ("default", "accurate"))
    finally:
        twins.SERIAL_CELLS = saved


def _long(device: str) -> None:
    """The linear-space profile DP of long proteins (``cpu/dp_profile_linear.py``): in the
    progressive pass and the refinement, default and accurate mode, every pair taken as too
    wide for full matrices."""
    from torchmsa.config import ExecutionPolicy
    from torchmsa.cpu import twins

    policy = ExecutionPolicy(linear_pair_cells=0)
    _align_modes(device, ("default", "accurate"), policy=policy)
    saved = twins.SERIAL_CELLS
    twins.SERIAL_CELLS = -1  # the parallel variants too
    try:
        _align_modes(device, ("default", "accurate"), policy=policy)
    finally:
        twins.SERIAL_CELLS = saved


def _refine_stage(device: str) -> None:
    """Refinement's numba functions alone, on a gapless alignment of a small family under a
    tree given as Newick (nothing else compiles): its edges one at a time (few cells), and
    in a batch on the one-thread twin (the path a first call of a larger family takes).
    A first ``torchmsa align`` compiles refinement with the rest of its plan
    (:mod:`torchmsa.compile_plan`)."""
    from torchmsa.alphabet import get_alphabet
    from torchmsa.cpu import twins
    from torchmsa.ops.pairwise import encode_sequences
    from torchmsa.pipeline.jobs import tree_weights
    from torchmsa.pipeline.scoring import profile_scoring
    from torchmsa.refine import refine
    from torchmsa.synthetic import AMINO, family
    from torchmsa.tree import from_newick

    seqs = family(8, 60, 6, letters=AMINO, indels=False)
    names = [f"w{k}" for k in range(len(seqs))]
    newick = names[0]
    for name in names[1:]:
        newick = f"({newick},{name})"
    tree = from_newick(newick + ";", names)
    alphabet = get_alphabet("protein")
    codes = encode_sequences(seqs, seqtype="protein").codes
    args = (codes, tree, tree_weights([tree]), profile_scoring(alphabet), alphabet.gap_code, 1)
    refine(*args)
    saved = twins.SERIAL_CELLS
    twins.SERIAL_CELLS = 0  # every batch above the threshold: the twin, while cold
    try:
        refine(*args)
    finally:
        twins.SERIAL_CELLS = saved


def _on_gpu(modes: tuple[str, ...]) -> Callable[[str], None]:
    """Pipeline runs on the GPU (no job kept on the host): k-mer, LCS, linkage and profile
    kernels as real jobs launch them."""

    def run(device: str) -> None:
        from torchmsa.config import ExecutionPolicy

        policy = ExecutionPolicy(host_job_max_n=0)
        _align_modes(device, modes, policy=policy)

    return run


def _dp_kind(kind: str, shard: int) -> Callable[[str], None]:
    """Every other launch shape (from ``shard``) of the pipeline's DP calls of one kind: two
    tasks per kind, as a profile kind alone compiles for about a minute."""

    def run(device: str) -> None:
        import torch

        from torchmsa._triton import warm
        from torchmsa.alphabet import get_alphabet
        from torchmsa.constants import LOCAL, SEMIGLOBAL
        from torchmsa.pipeline.accurate import local_scoring

        dev = torch.device(device)
        if kind == "profile":
            warm.profile_variants(dev, shard, DP_SHARDS)
            return
        done = set()
        for name in ("protein", "dna"):
            sc = local_scoring(get_alphabet(name))
            mat = sc.matrix.numpy()
            key = warm.element_bits(mat, sc.gap_open)
            if key in done:
                continue
            done.add(key)
            mode, trace = {"local-score": (LOCAL, False), "local-trace": (LOCAL, True)}.get(
                kind, (SEMIGLOBAL, True)
            )
            warm.pair_variants(
                dev, mode, trace, mat, sc.gap_open, sc.gap_extend, shard=(shard, DP_SHARDS)
            )

    return run


def _local_strips(device: str) -> None:
    """Best-K local alignment's strip kernel for the default protein and DNA matrices."""
    import torch

    from torchmsa._triton import warm
    from torchmsa.alphabet import get_alphabet
    from torchmsa.scoring import get_scoring

    for name in ("protein", "dna"):
        warm.strip_variants(torch.device(device), get_scoring(get_alphabet(name)).matrix)


CPU_TASKS: dict[str, Callable[[str], None]] = {
    "align-default": lambda d: _align_modes(d, ("default",)),
    "align-accurate": lambda d: _align_modes(d, ("accurate",)),
    "align-fast": lambda d: _align_modes(d, ("fast",)),
    "trees": _trees,
    "pairwise": _pairwise,
    "add-merge": _add_merge,
    "parallel": _parallel,
    "long": _long,
    "refine": _refine_stage,
}
DP_SHARDS = 2
GPU_TASKS: dict[str, Callable[[str], None]] = {
    **{
        f"dp-{kind}-{shard}": _dp_kind(kind, shard)
        for kind in ("local-score", "local-trace", "semiglobal-trace", "profile")
        for shard in range(DP_SHARDS)
    },
    "local-strips": _local_strips,
    "gpu-default": _on_gpu(("default",)),
    "gpu-accurate": _on_gpu(("accurate",)),
    "gpu-fast": _on_gpu(("fast",)),
}
TASKS = {**CPU_TASKS, **GPU_TASKS}
CORE = "align-default"  # the numba functions every other task calls


def _run_task(name: str, device: str) -> TaskReport:
    """Run one task in this process, counting what had to be compiled."""
    start = time.perf_counter()
    triton_built = triton_build_counter()
    before = numba_compiled()
    # CPU tasks run on the CPU wherever the warm-up runs: a GPU job of their size is a host job
    TASKS[name]("cpu" if name in CPU_TASKS else device)
    if name in GPU_TASKS:
        from torchmsa.ops.backend import synchronize

        synchronize(device)
    return TaskReport(name, time.perf_counter() - start, numba_compiled() - before, triton_built())


def triton_build_counter() -> Callable[[], int]:
    """A counter of Triton kernels compiled (not loaded from the cache) from now on."""
    try:
        from triton import knobs
    except ImportError:  # Triton without compilation hooks: nothing counted
        return lambda: 0
    built = [0]
    previous = knobs.compilation.listener

    def listener(*, src, metadata, metadata_group, times, cache_hit):
        built[0] += not cache_hit
        if previous is not None:
            previous(
                src=src, metadata=metadata, metadata_group=metadata_group, times=times,
                cache_hit=cache_hit,
            )  # fmt: skip

    knobs.compilation.listener = listener
    return lambda: built[0]


def numba_compiled() -> int:
    """numba overloads compiled in this process so far (cache misses of torchmsa's jitted
    functions)."""
    import sys

    from numba.core.registry import CPUDispatcher

    seen, total = set(), 0
    for mod_name, mod in list(sys.modules.items()):
        if not mod_name.startswith("torchmsa") or mod is None:
            continue
        for value in vars(mod).values():
            if isinstance(value, CPUDispatcher) and id(value) not in seen:
                seen.add(id(value))
                total += sum(value.stats.cache_misses.values())
    return total


# ---- the entry point ------------------------------------------------------------------------


def warmup(
    device="auto", *, jobs: int | None = None, tasks: list[str] | None = None
) -> WarmupReport:
    """Compile every numba function and Triton kernel variant the pipeline uses into the
    on-disk caches, so that later processes start without compiling.

    Arguments:
        device: ``"auto"``, ``"cpu"``, ``"cuda"`` or ``"cuda:N"``: which kernels to build (the
            numba functions are built in every case; a GPU adds the Triton variants).
        jobs: processes compiling at once (``None``: one per CPU core this process may use,
            at most one per task; ``1``: every task in this process). Processes are spawned,
            so a script that calls this with ``jobs != 1`` needs the
            ``if __name__ == "__main__":`` guard.
        tasks: names from :data:`TASKS` (``None``: every task for the device).

    Returns:
        A :class:`WarmupReport`; its ``summary()`` is one line.
    """
    from torchmsa.errors import ArgumentError
    from torchmsa.ops.backend import resolve_device

    dev = resolve_device(device)
    names = list(CPU_TASKS) + (list(GPU_TASKS) if dev.type == "cuda" else [])
    if tasks is not None:
        unknown = [t for t in tasks if t not in TASKS]
        if unknown:
            raise ArgumentError(
                f"unknown warm-up task {unknown[0]!r}; use one of {', '.join(TASKS)}"
            )
        names = list(tasks)
        on_gpu = [t for t in names if t in GPU_TASKS]
        if on_gpu and dev.type != "cuda":
            raise ArgumentError(
                f"warm-up task {on_gpu[0]!r} compiles GPU kernels; give a CUDA device "
                f"(device='cuda') or leave it out"
            )
    if jobs is not None and jobs < 1:
        raise ArgumentError(f"Invalid value for `jobs` argument: {jobs!r}; use 1 or more")
    jobs = min(jobs or usable_cores(), max(1, len(names)))
    # on few cores the core goes first, alone on the CPU side: every other CPU task calls its
    # functions and would compile them again beside it (the GPU tasks compile beside it); with
    # a core for most tasks that costs no wall time and everything starts at once
    first = [n for n in names if n == CORE or n in GPU_TASKS or 2 * jobs >= len(names)]
    stages = [first, [n for n in names if n not in first]]
    start = time.perf_counter()
    reports = []
    if jobs == 1:
        for name in (n for stage in stages for n in stage):
            try:
                reports.append(_run_task(name, str(dev)))
            except Exception as exc:
                raise _failed([name], exc) from exc
    else:
        import concurrent.futures
        import multiprocessing

        # spawned processes: a fork would copy this process's CUDA context and thread pools
        # (so a calling script needs the ``if __name__ == "__main__":`` guard; the command and
        # notebooks need none)
        ctx = multiprocessing.get_context("spawn")
        with concurrent.futures.ProcessPoolExecutor(jobs, mp_context=ctx) as pool:
            for stage in stages:
                futures = {pool.submit(_run_task, name, str(dev)): name for name in stage}
                for future in concurrent.futures.as_completed(futures):
                    try:
                        reports.append(future.result())
                    except Exception as exc:
                        running = [futures[f] for f in futures if not f.done() or f is future]
                        pool.shutdown(wait=False, cancel_futures=True)
                        raise _failed(running, exc) from exc
    reports.sort(key=lambda r: names.index(r.name))
    return WarmupReport(str(dev), time.perf_counter() - start, jobs, reports, *_cache_folders())


def _failed(names: list[str], exc: BaseException) -> Exception:
    """The error a failed task ends the warm-up with: which task(s), and why."""
    from torchmsa.errors import TorchMSAError

    what = " ".join(str(exc).split())[:300] or type(exc).__name__
    return TorchMSAError(
        f"warm-up task {', '.join(map(repr, names))} failed: {type(exc).__name__}: {what}; "
        f"rerun with --jobs 1 --task NAME to see it alone"
    )


def _cache_folders() -> tuple[str, str]:
    import numba

    numba_dir = numba.config.CACHE_DIR or "__pycache__ beside the package (or the user cache)"
    try:
        from triton import knobs

        triton_dir = knobs.cache.dir  # TRITON_CACHE_DIR, else Triton's default
    except ImportError:  # no Triton, or one without knobs
        triton_dir = os.environ.get("TRITON_CACHE_DIR", "Triton's default")
    return numba_dir, triton_dir
