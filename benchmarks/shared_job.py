"""One large family over ranks: ``torchmsa align`` as fresh processes, alone and under
torchrun with 2 (or more) ranks sharing its PartTree and progressive pass, side by side in
one run (issue #42 item 2, decision 0068).

    python -m benchmarks.shared_job [--n 1000000] [--length 250] [--ranks 1,2] [--repeat 1]
        [--device cuda] [--data DIR] [--timeout S] [--logs DIR] [--verbose] [--out DIR]

The family is ``benchmarks.scale``'s evolved one (``family_files(n, length, 0, data)``).
First one **cold** run: ``python -m torchmsa align FAMILY -o OUT --device DEVICE`` with the
caches as the machine has them (empty on a fresh machine: compile time included), then the
wait for the process it leaves compiling for the next command (decision 0067). Then each
world size ``W`` of ``--ranks``, in order, ``--repeat`` times (**warm**): ``W = 1`` the same
command alone (no torchrun), ``W > 1`` ``python -m torch.distributed.run --standalone
--nproc-per-node W -m torchmsa align ...``, timed whole (launcher, imports, reading,
alignment, writing). ``TORCHMSA_DAEMON=off``: no warm server takes a command.

Appends to ``results/shared_job.csv`` one row per run: ``regime``, ``ranks``, ``repeat``,
``n``, ``wall_s``, ``speedup`` (the one-process warm run of the same repeat over this one),
``identical`` (the output's bytes equal the cold run's), the ranks' log lines about their
shares (``shares``), with ``--verbose`` when each process began reading, aligning and
writing and when it ended, in seconds after the launch (``steps``), ``note``, and the run's
metadata. With ``--verbose`` each process's ``-v`` stage times go to
``results/shared_job_stages.csv``, one row per run, process and stage (``process``: the
order of the processes' blocks in the standard error, which names no rank). Prints a table.
``--logs``: each
run's standard error is kept there as ``REGIME-ranksW-REPEAT.log`` (with ``--verbose`` it
holds every process's stage times: ``torchmsa align -v``).
"""

from __future__ import annotations

import argparse
import hashlib
import math
import os
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.harness import append_rows, markdown_table, run_metadata, wait_compiling_later
from benchmarks.scale import family_files


def command(ranks: int, inp: Path, out: Path, device: str, verbose: bool = False) -> list[str]:
    tail = ["-m", "torchmsa", "align", str(inp), "-o", str(out), "--device", device]
    tail += ["-v"] if verbose else []
    if ranks == 1:
        return [sys.executable, *tail]
    head = [sys.executable, "-m", "torch.distributed.run", "--standalone"]
    return [*head, "--nproc-per-node", str(ranks), *tail]


def timed(ranks: int, inp: Path, out: Path, args, env: dict, name: str) -> dict:
    out.unlink(missing_ok=True)
    launched = time.time()
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(
            command(ranks, inp, out, args.device, args.verbose),
            env=env,
            capture_output=True,
            text=True,
            timeout=args.timeout,
        )
    except subprocess.TimeoutExpired:
        return {"wall_s": math.nan, "note": f"timed out after {args.timeout} s", "shares": ""}
    wall = time.perf_counter() - t0
    if args.logs is not None:
        args.logs.mkdir(parents=True, exist_ok=True)
        (args.logs / f"{name}.log").write_text(proc.stderr)
    shares = " | ".join(ln.strip() for ln in proc.stderr.splitlines() if ": rank " in ln)
    note = ""
    if proc.returncode:
        note = f"exit status {proc.returncode}: {proc.stderr.strip()[-300:]}"
    digest = hashlib.sha1(out.read_bytes()).hexdigest() if out.exists() else ""
    steps = " | ".join(_steps(ln, launched) for ln in proc.stderr.splitlines() if _MARKS in ln)
    out = {"wall_s": wall, "note": note, "shares": shares, "sha1": digest, "steps": steps}
    return {**out, "stages": stage_rows(proc.stderr)}


_MARKS = "torchmsa: steps began "
_STAGE = "torchmsa: stage "


def stage_rows(stderr: str) -> list[dict]:
    """Each process's ``-v`` stage times in ``stderr``: ``{process, stage, seconds}``, a new
    process at each ``align`` stage (the first a process prints), in the order printed."""
    rows, process = [], -1
    for line in stderr.splitlines():
        if not line.startswith(_STAGE):
            continue
        stage, seconds = line[len(_STAGE) :].split()[:2]
        process += stage == "align"
        rows.append({"process": max(process, 0), "stage": stage, "seconds": float(seconds)})
    return rows


def _steps(line: str, launched: float) -> str:
    """A ``-v`` line of when each step began, as seconds after the launch."""
    marks = (kv.split("=") for kv in line.split(_MARKS, 1)[1].split())
    return " ".join(f"{k}={float(v) - launched:.2f}" for k, v in marks)


def _append(rows: list[dict], meta: dict, out) -> None:
    """The runs' rows to ``shared_job.csv``, their processes' stage times (taken out of
    them) to ``shared_job_stages.csv``."""
    stages = []
    for r in rows:
        keys = {"regime": r["regime"], "ranks": r["ranks"], "repeat": r["repeat"], "n": r["n"]}
        stages += [{**keys, **s} for s in r.pop("stages", [])]
    append_rows("shared_job", rows, meta, out)
    if stages:
        append_rows("shared_job_stages", stages, meta, out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--length", type=int, default=250)
    ap.add_argument("--ranks", default="1,2")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--data", type=Path, default=Path("/tmp/torchmsa-scale"))
    ap.add_argument("--timeout", type=float, default=600.0)
    ap.add_argument("--logs", type=Path, default=None)
    ap.add_argument("--verbose", action="store_true", help="-v: every process's stage times")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    worlds = [int(w) for w in args.ranks.split(",")]
    meta = run_metadata(args.device, argv)
    env = {**os.environ, "TORCHMSA_DAEMON": "off"}
    t0 = time.perf_counter()
    inp = family_files(args.n, args.length, 0, args.data)["input"]
    print(f"family of {args.n} ready in {time.perf_counter() - t0:.1f} s", flush=True)
    work = args.data / f"shared-{args.n}"
    work.mkdir(parents=True, exist_ok=True)
    base = {"tool": "torchmsa align", "n": args.n, "length": args.length}
    cold = timed(1, inp, work / "cold.fa", args, env, "cold-ranks1-0")
    waited = wait_compiling_later()
    row = {**base, "regime": "cold", "ranks": 1, "repeat": 0, **cold, "identical": True}
    row["note"] = (row["note"] + f" (then waited {waited:.1f} s for compile_later)").strip()
    print(f"cold: {cold['wall_s']:.1f} s {cold['note']}", flush=True)
    _append([row], meta, args.out)
    rows = [row]
    for rep in range(args.repeat):
        these = []
        for w in worlds:
            got = timed(w, inp, work / f"out-{w}.fa", args, env, f"warm-ranks{w}-{rep}")
            same = bool(got.get("sha1")) and got.get("sha1") == cold.get("sha1")
            these.append({**base, "regime": "warm", "ranks": w, "repeat": rep, **got,
                          "identical": same})  # fmt: skip
            print(f"ranks {w}: {got['wall_s']:.1f} s, identical {same} {got['note']}", flush=True)
            wait_compiling_later()
        one = next((r["wall_s"] for r in these if r["ranks"] == 1), math.nan)
        for r in these:
            r["speedup"] = one / r["wall_s"] if r["wall_s"] else math.nan
        _append(these, meta, args.out)
        rows += these
    cols = ["regime", "ranks", "repeat", "n", "wall_s", "speedup", "identical", "note"]
    print(markdown_table(rows, cols))
    for r in rows:
        if r["shares"] or r["steps"]:
            print(f"ranks {r['ranks']} repeat {r['repeat']}: {r['shares']} {r['steps']}")
    return 0 if all(r["identical"] and not r["note"].startswith("exit") for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
