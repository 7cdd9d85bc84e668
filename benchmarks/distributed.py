"""Many families over ranks: ``torchmsa batch`` as fresh processes under torchrun with 1, 2
and 4 ranks, side by side in one run (issue #42).

    python -m benchmarks.distributed [--families 1000] [--seqs 100-2000] [--lengths 100-400]
        [--ranks 1,2,4] [--mode auto] [--device auto] [--cpu-workers 1] [--repeat 1]
        [--seed 0] [--work DIR] [--no-warmup] [--timeout S] [--out DIR]

Families: ``torchmsa.synthetic.family(n, length, seed * 1,000,003 + f, indels=True)`` for
family ``f``, with ``n`` and ``length`` drawn uniformly from ``--seqs`` and ``--lengths`` by a
generator seeded with ``--seed``: the same files on every machine. They are written once into
``--work`` (a temporary folder by default) and reused there while their parameters match.

Each world size ``W`` of ``--ranks``, in order, ``--repeat`` times: the output folder emptied,
then ``python -m torch.distributed.run --standalone --nproc-per-node W -m torchmsa batch
FAMILIES -o OUT --device DEVICE --cpu-workers C [--mode MODE]`` timed whole as one fresh
process (launcher, imports, rendezvous, planning, alignment, writing). With ``W = 1`` torchrun
starts one process and ``torchmsa batch`` runs as it does without torchrun. Before the first
timed run ``torchmsa warmup --device DEVICE`` fills the compile caches, so that no world size
pays Triton and numba builds that another is spared (``--no-warmup`` skips it).

Every run's outputs are compared, byte for byte, with the first run's (``identical``).

Appends to ``results/distributed.csv`` one row per world size and repeat: ``ranks``,
``families``, ``sequences``, ``residues``, ``wall_s``, ``speedup`` (the wall time of one
rank, same repeat, over this one's), ``identical``, ``aligned``, ``failed``, ``plan_s``
(rank 0 listing, reading and splitting the inputs), ``rank_max_s`` and ``rank_mean_s`` (the
ranks' own alignment seconds from their log lines: their ratio is the imbalance), ``gpus``,
``batch_s`` (rank 0's own count from its start to its summary: the wall time less the
launcher and the imports), ``note``, and the run's metadata (device, commit,
versions, date, command). Prints a table.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.harness import REPO, RESULTS_DIR, append_rows, markdown_table, run_metadata

_RANK_LINE = re.compile(r"torchmsa batch: rank (\d+)/(\d+) .*, ([0-9.]+) s$")
_PLAN_LINE = re.compile(r"torchmsa batch: rank 0/\d+ .*: planned in ([0-9.]+) s$")
_SUMMARY = re.compile(
    r"torchmsa batch: (\d+) aligned, \d+ skipped \(done before\), (\d+) failed, ([0-9.]+) s"
)


def _span(text: str, option: str) -> tuple[int, int]:
    try:
        lo, hi = (int(v) for v in text.split("-", 1)) if "-" in text else (int(text),) * 2
    except ValueError:
        raise SystemExit(f"error: {option} {text!r}: give LOW-HIGH, e.g. 100-2000") from None
    if not 2 <= lo <= hi:
        raise SystemExit(f"error: {option} {text!r}: need 2 <= LOW <= HIGH")
    return lo, hi


def make_families(folder: Path, families: int, seqs, lengths, seed: int) -> dict:
    """The benchmark's families as ``fam00000.fasta`` ... in ``folder`` (reused when a
    ``params.json`` there says they were made with the same parameters); their totals."""
    import numpy as np

    from torchmsa.synthetic import family

    params = {"families": families, "seqs": list(seqs), "lengths": list(lengths), "seed": seed}
    stamp = folder / "params.json"
    if stamp.is_file() and json.loads(stamp.read_text()).get("params") == params:
        return json.loads(stamp.read_text())["totals"]
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    rng = np.random.default_rng(seed)
    sizes = rng.integers(seqs[0], seqs[1] + 1, families)
    widths = rng.integers(lengths[0], lengths[1] + 1, families)
    totals = {"sequences": 0, "residues": 0}
    for f, (n, length) in enumerate(zip(sizes.tolist(), widths.tolist())):
        fam = family(n, length, seed * 1_000_003 + f, indels=True)
        text = "".join(f">f{f}_s{i}\n{s}\n" for i, s in enumerate(fam))
        (folder / f"fam{f:05d}.fasta").write_text(text)
        totals["sequences"] += n
        totals["residues"] += sum(map(len, fam))
    stamp.write_text(json.dumps({"params": params, "totals": totals}))
    return totals


def _hashes(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha1(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


def launcher(ranks: int) -> list[str]:
    """torchrun, as the module of the running Python (no ``torchrun`` on PATH needed)."""
    return [sys.executable, "-m", "torch.distributed.run", "--standalone"] + [
        "--nproc-per-node",
        str(ranks),
    ]


def batch_command(ranks: int, families: Path, out: Path, args) -> list[str]:
    argv = launcher(ranks) + ["-m", "torchmsa", "batch", str(families), "-o", str(out)]
    argv += ["--device", args.device, "--cpu-workers", str(args.cpu_workers)]
    return argv + (["--mode", args.mode] if args.mode else [])


def parse_log(stderr: str) -> dict:
    """What the ranks and rank 0 said: aligned and failed files, planning seconds, and each
    rank's own seconds."""
    out: dict = {"aligned": None, "failed": None, "batch_s": math.nan, "plan_s": math.nan}
    out["rank_s"] = {}
    for line in stderr.splitlines():
        line = line.strip()
        if m := _RANK_LINE.search(line):
            out["rank_s"][int(m.group(1))] = float(m.group(3))
        if m := _PLAN_LINE.search(line):
            out["plan_s"] = float(m.group(1))
        if m := _SUMMARY.search(line):
            out["aligned"], out["failed"] = int(m.group(1)), int(m.group(2))
            out["batch_s"] = float(m.group(3))
    return out


def time_batch(ranks: int, families: Path, out: Path, args, env: dict) -> dict:
    """One timed ``torchmsa batch`` under torchrun with ``ranks`` ranks."""
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    argv = batch_command(ranks, families, out, args)
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(
            argv, env=env, cwd=args.cwd, capture_output=True, text=True, timeout=args.timeout
        )
    except subprocess.TimeoutExpired:
        return {"wall_s": math.nan, "note": f"timed out after {args.timeout} s", "log": {}}
    wall = time.perf_counter() - t0
    log = parse_log(proc.stderr)
    note = ""
    if proc.returncode:
        tail = [ln for ln in proc.stderr.splitlines() if "error" in ln.lower()][-3:]
        note = f"exit status {proc.returncode}: {' / '.join(tail)}"[:300]
    return {"wall_s": wall, "note": note, "log": log}


def _warmup(args, env: dict) -> None:
    argv = [sys.executable, "-m", "torchmsa", "warmup", "--device", args.device]
    t0 = time.perf_counter()
    proc = subprocess.run(argv, env=env, cwd=args.cwd, capture_output=True, text=True)
    status = "done" if proc.returncode == 0 else f"failed ({proc.stderr.strip()[-200:]})"
    print(f"warm-up {status} in {time.perf_counter() - t0:.1f} s", flush=True)


def _gpus() -> int:
    try:
        import torch

        return torch.cuda.device_count() if torch.cuda.is_available() else 0
    except Exception:  # noqa: BLE001 - recorded as 0
        return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--families", type=int, default=1000)
    ap.add_argument("--seqs", default="100-2000", help="sequences per family, LOW-HIGH")
    ap.add_argument("--lengths", default="100-400", help="ancestor length, LOW-HIGH")
    ap.add_argument("--ranks", default="1,2,4", help="comma list of world sizes")
    ap.add_argument("--mode", default=None, choices=["auto", "fast", "default", "accurate"])
    ap.add_argument("--device", default="auto", help="auto | cpu | cuda (each rank its own)")
    ap.add_argument("--cpu-workers", type=int, default=1, help="torchmsa batch --cpu-workers")
    ap.add_argument("--repeat", type=int, default=1, help="runs of each world size")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--work", help="folder for the families and outputs (kept)")
    ap.add_argument("--no-warmup", action="store_true", help="skip torchmsa warmup")
    ap.add_argument("--timeout", type=float, default=None, help="seconds per run")
    ap.add_argument("--out", default=str(RESULTS_DIR))
    args = ap.parse_args(argv)
    seqs, lengths = _span(args.seqs, "--seqs"), _span(args.lengths, "--lengths")
    try:
        worlds = [int(w) for w in args.ranks.split(",") if w]
    except ValueError:
        raise SystemExit(f"error: --ranks {args.ranks!r}: give world sizes, e.g. 1,2,4") from None
    if not worlds or min(worlds) < 1 or args.families < 1 or args.repeat < 1:
        raise SystemExit("error: --ranks, --families and --repeat must be 1 or more")
    meta = run_metadata(args.device, None if argv is None else [__file__, *argv])
    tmp = None if args.work else tempfile.TemporaryDirectory(prefix="torchmsa-distributed-")
    work = Path(args.work or tmp.name).resolve()
    args.cwd = str(REPO)  # ``-m torchmsa`` finds this checkout (or PYTHONPATH's)
    env = dict(os.environ)
    try:
        t0 = time.perf_counter()
        fams = work / "families"
        totals = make_families(fams, args.families, seqs, lengths, args.seed)
        print(
            f"{args.families} families, {totals['sequences']} sequences, "
            f"{totals['residues']} residues ({time.perf_counter() - t0:.1f} s)",
            flush=True,
        )
        if not args.no_warmup:
            _warmup(args, env)
        rows, first = [], None
        for rep in range(args.repeat):
            these = []
            for w in worlds:
                out = work / f"out-{w}"
                got = time_batch(w, fams, out, args, env)
                hashes = _hashes(out)
                first = hashes if first is None else first
                log, ranks_s = got["log"], list(got["log"].get("rank_s", {}).values())
                row = {
                    "scope": "run",
                    "tool": "torchmsa batch",
                    "mode": args.mode or "auto",
                    "variant": f"ranks={w}",
                    "ranks": w,
                    "repeat": rep,
                    "families": args.families,
                    "seqs_range": args.seqs,
                    "lengths_range": args.lengths,
                    "sequences": totals["sequences"],
                    "residues": totals["residues"],
                    "device_arg": args.device,
                    "cpu_workers": args.cpu_workers,
                    "wall_s": got["wall_s"],
                    "identical": bool(hashes) and hashes == first,
                    "aligned": log.get("aligned"),
                    "failed": log.get("failed"),
                    "batch_s": log.get("batch_s", math.nan),
                    "plan_s": log.get("plan_s", math.nan),
                    "rank_max_s": max(ranks_s) if ranks_s else math.nan,
                    "rank_mean_s": statistics.fmean(ranks_s) if ranks_s else math.nan,
                    "gpus": _gpus(),
                    "note": got["note"],
                }
                print(
                    f"ranks {w}: {row['wall_s']:.1f} s, identical {row['identical']} {row['note']}",
                    flush=True,
                )
                these.append(row)
            one = next((r["wall_s"] for r in these if r["ranks"] == 1), math.nan)
            for row in these:
                row["speedup"] = one / row["wall_s"] if row["wall_s"] else math.nan
            rows += these
            # after every repeat, so a run cut short keeps what it finished
            append_rows("distributed", these, meta, args.out)
    finally:
        if tmp is not None:
            tmp.cleanup()
    cols = ["ranks", "repeat", "families", "wall_s", "speedup", "identical", "failed"]
    cols += ["batch_s", "plan_s", "rank_max_s", "rank_mean_s", "note"]
    print(markdown_table(rows, cols))
    return 0 if all(r["identical"] and not r["note"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
