"""Seed 004's Table 7 workload: U users' jobs through one shared worker, against the same jobs
run one by one as fresh ``torchmsa align`` processes, and against Clustal Omega per job.

    python -m benchmarks.gmsa [--quick] [--users 2,4,8,16,32] [--n 300] [--length 498]
        [--similarity 0.9] [--device auto] [--cpu-workers 1] [--threads N]
        [--sample 4] [--clustalo-sample 1] [--no-clustalo] [--clustalo-once]
        [--share-distances] [--mode auto] [--out DIR]

Workload (``benchmarks/tools/gmsa_workload.py``): U users, each ``--n`` proteins of about
``--length`` residues, ``--similarity`` of each user's set shared with the others (GMSA's
definition: the share of identical sequences). Per U:

* ``torchmsa-shared``: a fresh store (SQLite in a temporary folder) and one
  :class:`torchmsa.serve.Worker`, warmed up before the clock starts as ``torchmsa serve``
  does at start-up (cost model measured, CPU processes started; ``warmup_s``); the wall
  time runs from the first ``submit`` to the last job done (sharing and batching included).
  ``speedup_vs_align_cold`` counts the warm-up in.
* ``torchmsa-shared-repeat``: the same U jobs submitted again: every one from the cache;
  ``wall_s`` is all of them, ``max_job_s`` the slowest submit (target <= 50 ms).
* ``torchmsa-align``: each job as ``python -m torchmsa align FILE`` in a fresh process, one
  after another; at most ``--sample`` of them run, the wall for all U jobs is the sampled mean
  times U (``jobs_measured`` says how many ran). The first sampled job's output is compared
  with the worker's result for that job (``identical``).
* ``clustalo``: ``clustalo -i FILE --threads T`` per job, ``--clustalo-sample`` of them, the
  same extrapolation; with ``--clustalo-once`` only at the first U (``jobs_measured`` 0 at
  later U, which use its per-job mean: every job has the same size).

``--threads`` (default: all cores) is given to Clustal Omega and to the torchmsa processes
(``NUMBA_NUM_THREADS``, ``OMP_NUM_THREADS``). ``--quick``: U = 2, 4 with 30 sequences of 120
residues. Appends one row per U and tool to ``gmsa.csv`` in ``--out`` (``benchmarks/results``).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from benchmarks.harness import append_rows, markdown_table, run_metadata
from benchmarks.tools.gmsa_workload import fasta, workload

COLUMNS = [
    "case",
    "tool",
    "jobs_measured",
    "wall_s",
    "jobs_per_s",
    "warmup_s",
    "speedup_vs_align",
    "speedup_vs_align_cold",
    "speedup_vs_clustalo",
    "identical",
    "placements",
    "pairs_cached_share",
    "max_job_s",
]


def _env(threads: int) -> dict:
    env = dict(os.environ)
    env.update(NUMBA_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads))
    return env


def shared(files: list[Path], args, workdir: Path) -> tuple[list[dict], dict]:
    """The U jobs through one store and worker; the rows and each job's result text."""
    from torchmsa.serve import Store, Worker

    store = Store.open(None, data_dir=workdir / "store")
    worker = Worker(
        store,
        device=args.device,
        cpu_workers=args.cpu_workers,
        share_trees=args.share_distances,
    )
    options = {} if args.mode == "auto" else {"mode": args.mode}
    try:
        warmup = worker.warm_up()  # what `torchmsa serve` does at start
        bodies = [f.read_text() for f in files]  # read before the clock
        t0 = time.perf_counter()
        ids = [store.submit(body, options, owner=f"user{k}").id for k, body in enumerate(bodies)]
        owners = {i: f"user{k}" for k, i in enumerate(ids)}
        while any(store.job(i, owners[i]).state in ("queued", "running") for i in ids):
            if worker.run_once() == 0:
                time.sleep(0.01)
        wall = time.perf_counter() - t0
        infos = [store.job(i, owners[i]) for i in ids]
        failed = [i.error for i in infos if i.state != "done"]
        if failed:
            raise RuntimeError(f"shared run: {len(failed)} job(s) failed, e.g. {failed[0]}")
        texts = {k: store.result(i, "fasta", owners[i]) for k, i in enumerate(ids)}
        places = Counter(i.placement for i in infos)
        pairs = sum(i.shared.get("pairs", 0) for i in infos)
        cached = sum(i.shared.get("pairs_cached", 0) for i in infos)
        rows = [
            {
                "tool": "torchmsa-shared",
                "jobs_measured": len(ids),
                "wall_s": wall,
                "placements": " ".join(f"{k}:{v}" for k, v in sorted(places.items())),
                "pairs_cached_share": cached / pairs if pairs else float("nan"),
                "cost_model": worker.costs.source if worker.costs else "",
                "warmup_s": warmup,
            }
        ]
        times = []
        t0 = time.perf_counter()
        for k, body in enumerate(bodies):
            t1 = time.perf_counter()
            info = store.submit(body, options, owner=f"again{k}")
            times.append(time.perf_counter() - t1)
            if info.state != "done":
                raise RuntimeError("a repeated job did not come from the cache")
        rows.append(
            {
                "tool": "torchmsa-shared-repeat",
                "jobs_measured": len(files),
                "wall_s": time.perf_counter() - t0,
                "max_job_s": max(times),
            }
        )
        return rows, texts
    finally:
        worker.close()
        store.close()


def per_job(files: list[Path], args, workdir: Path, texts: dict) -> dict:
    """``torchmsa align`` in a fresh process per job, on a sample."""
    sample = files[: max(1, args.sample)]
    seconds, identical = [], ""
    for k, f in enumerate(sample):
        out = workdir / f"{f.stem}.align.fasta"
        cmd = [sys.executable, "-m", "torchmsa", "align", str(f), "-o", str(out), "-q"]
        cmd += [] if args.mode == "auto" else ["--mode", args.mode]
        cmd += ["--device", args.device]
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, env=_env(args.threads), capture_output=True)
        seconds.append(time.perf_counter() - t0)
        if k == 0:
            identical = str(out.read_text() == texts[0])
    mean = sum(seconds) / len(seconds)
    return {
        "tool": "torchmsa-align",
        "jobs_measured": len(sample),
        "wall_s": mean * len(files),
        "job_s": mean,
        "identical": identical,
    }


def clustalo(files: list[Path], args, workdir: Path, known: float | None = None) -> dict | None:
    exe = shutil.which("clustalo")
    if exe is None or args.no_clustalo:
        return None
    if known is not None and args.clustalo_once:  # every job has the same size
        wall = known * len(files)
        return {"tool": "clustalo", "jobs_measured": 0, "wall_s": wall, "job_s": known}
    sample = files[: max(1, args.clustalo_sample)]
    seconds = []
    for f in sample:
        out = workdir / f"{f.stem}.clustalo.fasta"
        cmd = [exe, "-i", str(f), "-o", str(out), "--force", f"--threads={args.threads}"]
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True)
        seconds.append(time.perf_counter() - t0)
    mean = sum(seconds) / len(seconds)
    return {
        "tool": "clustalo",
        "jobs_measured": len(sample),
        "wall_s": mean * len(files),
        "job_s": mean,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="U = 2, 4; 30 sequences of 120")
    p.add_argument("--users", default="2,4,8,16,32")
    p.add_argument("--n", type=int, default=300)
    p.add_argument("--length", type=int, default=498)
    p.add_argument("--similarity", type=float, default=0.9)
    p.add_argument("--mode", default="auto", choices=["auto", "fast", "default", "accurate"])
    p.add_argument("--device", default="auto")
    p.add_argument("--cpu-workers", type=int, default=1)
    p.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    p.add_argument("--sample", type=int, default=4, help="per-job torchmsa runs per U")
    p.add_argument("--clustalo-sample", type=int, default=1, help="clustalo runs per U")
    p.add_argument("--no-clustalo", action="store_true")
    p.add_argument(
        "--clustalo-once",
        action="store_true",
        help="time Clustal Omega at the first U only; later U use its per-job mean",
    )
    p.add_argument(
        "--share-distances",
        action="store_true",
        help="first trees from the store's distance cache (Worker(share_trees=True))",
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    if args.quick:
        args.users, args.n, args.length = "2,4", 30, 120
    import torch

    torch.set_num_threads(args.threads)
    meta = run_metadata(args.device)
    per_job_s = None  # Clustal Omega's measured mean, reused with --clustalo-once
    for users in [int(u) for u in args.users.split(",")]:
        with tempfile.TemporaryDirectory(prefix="gmsa-") as tmp:
            work = Path(tmp)
            files = []
            for k, seqs in enumerate(
                workload(users, args.n, args.length, args.similarity, args.seed)
            ):
                files.append(work / f"user{k:02d}.fasta")
                files[-1].write_text(fasta(seqs))
            found, texts = shared(files, args, work)
            found.append(per_job(files, args, work, texts))
            peer = clustalo(files, args, work, per_job_s)
            if peer is not None and peer["jobs_measured"]:
                per_job_s = peer["job_s"]
            if peer is not None:
                found.append(peer)
        base = {r["tool"]: r["wall_s"] for r in found}
        for r in found:
            r.update(
                case=f"U{users}",
                users=users,
                n=args.n,
                length=args.length,
                similarity=args.similarity,
                mode=args.mode,
                threads=args.threads,
                cpu_workers=args.cpu_workers,
                jobs_per_s=users / r["wall_s"],
            )
            if r["tool"] == "torchmsa-shared":
                r["speedup_vs_align"] = base["torchmsa-align"] / r["wall_s"]
                r["speedup_vs_align_cold"] = base["torchmsa-align"] / (r["wall_s"] + r["warmup_s"])
                if "clustalo" in base:
                    r["speedup_vs_clustalo"] = base["clustalo"] / r["wall_s"]
        print(markdown_table(found, COLUMNS), flush=True)
        path = append_rows("gmsa", found, meta, args.out)  # per U: a cut-off run keeps its rows
        print(f"appended {len(found)} rows to {path}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
