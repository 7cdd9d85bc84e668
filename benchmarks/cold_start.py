"""Cold start: whole ``torchmsa align`` processes as a user runs them, with emptied and with
filled compile caches, beside the peers in fresh processes, same cases, same run (issue #36).

    python -m benchmarks.cold_start --cases DIR_OR_GLOB_OR_FILE ... [--limit N]
        [--mode default,accurate] [--device auto] [--threads 16] [--timeout S]
        [--regimes cold,process-warm,in-process-warm,served,peers] [--peers mafft-linsi]
        [--cold-all] [--warmup] [--keep-caches] [--out DIR]

``--cases`` takes folders (their ``*.in.fasta`` and ``*.in.fasta.gz``), globs and files; a
``<case>.ref.fasta`` (and ``<case>.core.txt``) beside an input is its reference. Gzipped inputs
are decompressed once, before any clock, and every tool reads the same plain file.

Regimes, per ``--mode`` (each mode gets its own cache folders):

* ``cold``: ``TRITON_CACHE_DIR``, ``NUMBA_CACHE_DIR`` and ``TORCHMSA_CACHE_DIR`` point at
  fresh, empty folders; the wall time of ``python -m torchmsa align CASE -o OUT --mode MODE
  --device DEVICE --threads T -q`` on the first case (every case, each with emptied caches,
  with ``--cold-all``). The operating system's file cache is not dropped.
* ``warmup`` (with ``--warmup``): the caches emptied again, then ``torchmsa warmup --device
  DEVICE`` timed as a process; a torchmsa without that command gives a row whose ``note`` says
  so, and the caches are then filled by aligning the first case once.
* ``process-warm``: the caches filled (by the cold pass, the warm-up, or one untimed run of the
  first case), one fresh CLI process per case: Python start, imports, CUDA context, reading,
  aligning, writing. A case whose launch shapes the fill did not meet still compiles Triton
  variants, as it would for a user.
* ``in-process-warm``: one child Python process on the same caches imports torchmsa (its
  ``import_s``), aligns every case once untimed (``first_pass_s``), then times
  ``torchmsa.align(case, mode=MODE, device=DEVICE, policy=ExecutionPolicy(threads=T))`` per
  case, CUDA synchronised on both ends. ``triton_built`` and ``numba_built``: the Triton
  kernels and numba overloads each case's untimed align compiled (after a warm-up: none).
* ``served`` (issue #36, decision 0058): ``torchmsa daemon start`` on the filled caches, timed
  as a process (a ``served-start`` row), then one fresh ``torchmsa align`` process per case,
  which the warm server runs: what a user's second and later commands cost. Then the cases
  again as a shell loop runs them (``served-loop``): one process after another with nothing
  between them, the outputs checked after the last; where the server did not take them all,
  every row of the loop says how many ran in the caller. The ``served`` rows are checked and
  waited for one by one, which gives a server time a loop does not (decision 0062). The other
  regimes run with ``TORCHMSA_DAEMON=off``: each of their processes computes by itself.
* ``peers``: ``--peers`` (``benchmarks.peers`` names) per case with ``--threads`` threads, each
  a fresh process: command-line peers as :func:`benchmarks.peers.run_peer` runs them, pyfamsa in
  a child Python process timed whole. A peer that is not installed gives one ``note`` row.

Child processes start in a temporary folder, not the repository, so the installed torchmsa is
the one that runs; the environment is passed through. Every alignment is checked (names and
residues of the input, case aside) and scored against the reference where there is one.

Appends one ``case`` row per (regime, tool, mode, case) to ``cold_start.csv`` in ``--out``
(``regime, tool, mode, case, n_seqs, wall_s, sp, tc, ok, note, caches`` ...) and one
``summary`` row per (regime, tool, mode): total, median and max wall time over the cases that
succeeded, max / median, mean SP / TC and, for torchmsa, ``vs_<peer>``: the peer's total over
torchmsa's on the cases both aligned (above 1: torchmsa took less time). Prints the summaries.
``--keep-caches`` leaves the cache variables alone (for tests; ``cold`` is then not cold).

Bytecode (``--bytecode cached``, the default): children run with ``PYTHONPYCACHEPREFIX`` set to
a folder of the run, where the packages they import are compiled first, untimed, as ``pip
install`` compiles them; ``PYTHONDONTWRITEBYTECODE`` is dropped. A lent GPU machine sets that
variable over a package folder without bytecode, so every process there compiled torch from
source: about 4 s of each 7-8 s ``torchmsa align`` process on an H100 machine. ``--bytecode
as-is`` keeps the environment's setting; rows record which (``bytecode``).
"""

from __future__ import annotations

import argparse
import glob
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple
from unittest.mock import patch

from benchmarks.harness import (
    REPO,
    RESULTS_DIR,
    append_rows,
    cached_bytecode,
    markdown_table,
    run_metadata,
    score,
    select_cases,
    served_commands,
    wait_compiling_later,
    wait_served,
)
from benchmarks.peers import PEERS, PeerFailed, peer_status, plain_fasta, run_peer

REGIMES = ("cold", "process-warm", "in-process-warm", "served", "peers")
# peers that benchmarks.peers runs inside the calling process: here a child Python runs them
IN_PROCESS_PEERS = {"famsa", "famsa-medoid"}
_SUFFIXES = (".in.fasta.gz", ".in.fasta", ".fasta.gz", ".fasta", ".fa.gz", ".fa")

_DRIVER = """\
import json, sys, time
t0 = time.perf_counter()
import torchmsa
import torch
from torchmsa.config import ExecutionPolicy
from torchmsa.io import write_alignment
from torchmsa.precompile import numba_compiled, triton_build_counter
import_s = time.perf_counter() - t0
triton_built = triton_build_counter()
spec = json.loads(sys.argv[1])
kw = {"mode": spec["mode"], "device": spec["device"]}
kw["policy"] = ExecutionPolicy(threads=spec["threads"])
cuda = torch.cuda.is_available() and spec["device"] != "cpu"
def sync():
    if cuda:
        torch.cuda.synchronize()
t0 = time.perf_counter()
built = []  # what each case's first align compiled: Triton kernels, numba overloads
for path in spec["inputs"]:
    before = triton_built(), numba_compiled()
    try:
        torchmsa.align(path, **kw)
    except Exception:
        pass  # the timed pass reports it
    built.append((triton_built() - before[0], numba_compiled() - before[1]))
first_pass_s = time.perf_counter() - t0
cases = []
for path, out in zip(spec["inputs"], spec["outputs"]):
    try:
        sync()
        t = time.perf_counter()
        aln = torchmsa.align(path, **kw)
        sync()
        cases.append({"wall_s": time.perf_counter() - t, "error": ""})
        write_alignment(aln.names, aln.rows, out)
    except Exception as exc:
        cases.append({"wall_s": None, "error": f"{type(exc).__name__}: {exc}"[:300]})
for case, (tri, nb) in zip(cases, built):
    case.update(triton_built=tri, numba_built=nb)
print(json.dumps({"import_s": import_s, "first_pass_s": first_pass_s, "cases": cases}))
"""

_PEER_CHILD = """\
import sys
sys.path.insert(0, sys.argv[1])
from benchmarks.peers import run_peer
r = run_peer(sys.argv[2], sys.argv[3], int(sys.argv[4]))
with open(sys.argv[5], "w") as fh:
    fh.writelines(f">{n}\\n{row}\\n" for n, row in zip(r.names, r.rows))
"""


class Case(NamedTuple):
    """An input: its name, plain FASTA, reference (``None``: none), core mask and records."""

    name: str
    dataset: str
    path: Path
    ref: Path | None
    core: Path | None
    names: list[str]
    seqs: list[str]


def _stem(path: Path) -> str:
    name = path.name
    return next((name[: -len(s)] for s in _SUFFIXES if name.endswith(s)), path.stem)


def find_cases(specs: Sequence[str], limit: int | None, workdir: Path) -> list[Case]:
    """The inputs that folders, globs and files name (sorted by name, at most ``limit`` of
    them evenly spaced), decompressed into ``workdir`` where gzipped."""
    from torchmsa.io import read_sequences

    files: dict[Path, None] = {}
    for spec in specs:
        if Path(spec).is_dir():
            found = [*Path(spec).glob("*.in.fasta"), *Path(spec).glob("*.in.fasta.gz")]
        else:
            found = [Path(p) for p in glob.glob(spec) if ".ref." not in Path(p).name]
            found = found or [Path(spec)]
        for path in sorted(found, key=_stem):
            if not path.is_file():
                raise SystemExit(f"error: --cases {spec!r}: {path} is not a file")
            files[path.resolve()] = None
    if not files:
        raise SystemExit(f"error: --cases {' '.join(specs)!r} names no *.in.fasta[.gz] file")
    table = [{"case": _stem(p), "ref_set": "all", "path": p} for p in files]
    seen: dict[str, Path] = {}
    for row in table:
        first = seen.setdefault(row["case"], row["path"])
        if first != row["path"]:
            name = row["case"]
            raise SystemExit(f"error: two inputs are named {name}: {first} and {row['path']}")
    workdir.mkdir(parents=True, exist_ok=True)
    cases = []
    for row in select_cases(table, [], limit):
        path, name = row["path"], row["case"]
        ref, core = path.parent / f"{name}.ref.fasta", path.parent / f"{name}.core.txt"
        plain = plain_fasta(path, workdir)
        recs = read_sequences(plain)
        cases.append(
            Case(
                name,
                path.parent.name,
                plain,
                ref if ref.is_file() else None,
                core if core.is_file() else None,
                [r.name for r in recs],
                [r.seq.replace("-", "").upper() for r in recs],
            )
        )
    return cases


def fresh_caches(root: Path) -> dict[str, str]:
    """Empty cache folders under ``root`` (anything there before is removed), as the
    environment variables that point torchmsa, Triton and numba at them."""
    shutil.rmtree(root, ignore_errors=True)
    env = {
        "TORCHMSA_CACHE_DIR": str(root),
        "TRITON_CACHE_DIR": str(root / "triton"),
        "NUMBA_CACHE_DIR": str(root / "numba"),
    }
    for folder in env.values():
        Path(folder).mkdir(parents=True, exist_ok=True)
    return env


def run_process(argv: list[str], env: dict, cwd: Path, timeout: float | None):
    """(wall seconds, error text or ``""``, stdout) of one child process."""
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(
            argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        return math.nan, f"timed out after {timeout} s", ""
    wall = time.perf_counter() - t0
    wait_compiling_later()  # a compile it left for the next command (0067) ends first
    if proc.returncode:
        tail = " / ".join(proc.stderr.strip().splitlines()[-3:])
        return wall, f"exit status {proc.returncode}: {tail}"[:300], proc.stdout
    return wall, "", proc.stdout


def check(names: Sequence[str], rows: Sequence[str], case: Case) -> dict:
    """``ok`` (names and residues of the input, case aside), ``sp`` / ``tc`` and ``note``."""
    if list(names) != case.names:
        return {"ok": False, "note": "names differ from the input's"}
    if [r.replace("-", "").upper() for r in rows] != case.seqs:
        return {"ok": False, "note": "residues differ from the input's"}
    if len({len(r) for r in rows}) > 1:
        return {"ok": False, "note": "rows of unequal length"}
    out = {"ok": True}
    if case.ref is not None:
        try:
            out["sp"], out["tc"] = score(list(names), list(rows), case.ref, case.core)
        except Exception as exc:  # recorded, not fatal
            out["note"] = f"not scored: {type(exc).__name__}: {exc}"[:300]
    return out


def _check_file(path: Path, case: Case) -> dict:
    from torchmsa.io import read_alignment

    try:
        recs = read_alignment(path, "fasta")
    except Exception as exc:  # an unreadable output is a failed row
        return {"ok": False, "note": f"output unreadable: {type(exc).__name__}: {exc}"[:300]}
    return check([r.name for r in recs], [r.seq for r in recs], case)


def _row(regime: str, tool: str, mode: str, case: Case | None, args, **extra) -> dict:
    return {
        "scope": "case",
        "dataset": case.dataset if case else "",
        "case": case.name if case else "",
        "regime": regime,
        "tool": tool,
        "mode": mode,
        "n_seqs": len(case.names) if case else "",
        "max_len": max(map(len, case.seqs)) if case else "",
        "backend": args.backend if tool == "torchmsa" else "cpu",
        "threads": args.threads,
        "wall_s": math.nan,
        "sp": math.nan,
        "tc": math.nan,
        "ok": False,
        "note": "",
        **extra,
    }


def _print(row: dict) -> None:
    sp = f"SP {row['sp']:.3f}" if not math.isnan(row["sp"]) else ""
    print(
        f"{row['regime']:15s} {row['tool']:12s} {row['mode']:8s} {row['case']:16s} "
        f"{row['wall_s']:8.2f} s  {sp} {row['note']}",
        flush=True,
    )


def _torchmsa(*words: str) -> list[str]:
    return [sys.executable, "-m", "torchmsa", *words]


def cli_row(regime: str, case: Case, mode: str, env: dict, args, caches: str) -> dict:
    """One fresh ``torchmsa align`` process on ``case``."""
    out, argv = _align_command(regime, case, mode, args)
    wall, error, _ = run_process(argv, env, args.work, args.timeout)
    row = _row(regime, "torchmsa", mode, case, args, caches=caches, wall_s=wall)
    row.update({"note": error} if error else _check_file(out, case))
    _print(row)
    return row


def _align_command(regime: str, case: Case, mode: str, args) -> tuple[Path, list[str]]:
    """The output file and the ``torchmsa align`` command of ``case`` in ``regime``."""
    out = args.work.parent / "out" / f"{regime}-{mode}-{case.name}.fasta"
    out.parent.mkdir(exist_ok=True)
    argv = _torchmsa("align", str(case.path), "-o", str(out), "--mode", mode)
    return out, argv + ["--device", args.device, "--threads", str(args.threads), "-q"]


def warmup_row(mode: str, env: dict, args) -> dict:
    """``torchmsa warmup`` as a process; a torchmsa without it gives a row with a note."""
    argv = _torchmsa("warmup", "--device", args.device)
    wall, error, _ = run_process(argv, env, args.work, args.timeout)
    row = _row("warmup", "torchmsa", mode, None, args, caches="empty", wall_s=wall)
    if "invalid choice: 'warmup'" in error:
        row["note"] = "this torchmsa has no warmup command"
    else:
        row.update({"note": error} if error else {"ok": True})
    _print(row)
    return row


def driver_rows(cases: list[Case], mode: str, env: dict, args, caches: str) -> list[dict]:
    """Every case aligned twice in one child Python process; the second pass timed."""
    out = args.work.parent / "out"
    out.mkdir(exist_ok=True)
    outputs = [out / f"in-process-warm-{mode}-{c.name}.fasta" for c in cases]
    spec = {
        "mode": mode,
        "device": args.device,
        "threads": args.threads,
        "inputs": [str(c.path) for c in cases],
        "outputs": [str(p) for p in outputs],
    }
    timeout = None if args.timeout is None else args.timeout * (2 * len(cases) + 1)
    argv = [sys.executable, "-c", _DRIVER, json.dumps(spec)]
    wall, error, stdout = run_process(argv, env, args.work, timeout)
    lines = stdout.strip().splitlines()
    result = json.loads(lines[-1]) if not error and lines else None
    rows = []
    for k, case in enumerate(cases):
        row = _row("in-process-warm", "torchmsa", mode, case, args, caches=caches, process_s=wall)
        if result is None:
            row["note"] = error or "the driver printed no result"
        else:
            row["import_s"], row["first_pass_s"] = result["import_s"], result["first_pass_s"]
            got = result["cases"][k]
            # compiled by the case's first, untimed align (after a warm-up: nothing)
            row["triton_built"], row["numba_built"] = got["triton_built"], got["numba_built"]
            if got["error"]:
                row["note"] = got["error"]
            else:
                row["wall_s"] = got["wall_s"]
                row.update(_check_file(outputs[k], case))
        _print(row)
        rows.append(row)
    return rows


def torchmsa_rows(cases: list[Case], mode: str, args) -> list[dict]:
    """The cold, warm-up, process-warm and in-process-warm rows of one mode."""
    root = args.work.parent / f"caches-{mode}"
    keep = args.keep_caches
    env = dict(os.environ) if keep else {**os.environ, **fresh_caches(root)}
    env["TORCHMSA_DAEMON"] = "off"  # every process computes itself, but in `served`
    rows = []
    filled = "kept" if keep else ""
    if "cold" in args.regimes:
        for k, case in enumerate(cases if args.cold_all else cases[:1]):
            if k and not keep:
                fresh_caches(root)
            rows.append(cli_row("cold", case, mode, env, args, filled or "empty"))
        filled = filled or "cold pass"
    warm = [r for r in ("process-warm", "in-process-warm") if r in args.regimes]
    if args.warmup:
        if not keep:
            fresh_caches(root)
        rows.append(warmup_row(mode, env, args))
        filled = "kept" if keep else "warmup" if rows[-1]["ok"] else ""
    if warm and not filled:
        print(f"filling the caches: {cases[0].name}, {mode} mode (untimed)", flush=True)
        fill = cli_row("fill", cases[0], mode, env, args, "empty")
        filled = f"fill run of {cases[0].name}" if fill["ok"] else "fill run failed"
    for case in cases if "process-warm" in warm else ():
        rows.append(cli_row("process-warm", case, mode, env, args, filled))
    if "in-process-warm" in warm:
        rows += driver_rows(cases, mode, env, args, filled)
    if "served" in args.regimes:
        rows += served_rows(cases, mode, env, args, filled or "served start")
    return rows


def served_rows(cases: list[Case], mode: str, env: dict, args, caches: str) -> list[dict]:
    """``torchmsa daemon start`` timed as a process (``served-start``), then one fresh
    ``torchmsa align`` process per case that the warm server runs (``served``); a case the
    server did not take (the caller ran it) says so in ``note``."""
    folder = args.work.parent / f"d-{mode}"
    folder.mkdir(mode=0o700, exist_ok=True)
    served = {**env, "TORCHMSA_DAEMON": "auto", "TORCHMSA_DAEMON_DIR": str(folder)}
    served["TORCHMSA_DAEMON_IDLE"] = "900"
    argv = _torchmsa("daemon", "start", "--wait", str(args.timeout or 900))
    wall, error, _ = run_process(argv, served, args.work, None)
    start = _row("served-start", "torchmsa", mode, None, args, caches=caches, wall_s=wall)
    start.update({"note": error} if error else {"ok": True})
    _print(start)
    rows = [start]
    for case in cases if start["ok"] else ():
        before = served_commands(folder)
        row = cli_row("served", case, mode, served, args, caches)
        if not wait_served(folder, before):
            row["note"] = (row["note"] + "; " if row["note"] else "") + "ran in the caller"
        rows.append(row)
    if start["ok"] and cases:
        rows += loop_rows(cases, mode, served, args, caches, folder)
    run_process(_torchmsa("daemon", "stop"), served, args.work, 60)
    return rows


def loop_rows(cases: list[Case], mode: str, env: dict, args, caches: str, folder) -> list[dict]:
    """``served-loop``: the cases as a shell loop runs them, one ``torchmsa align`` process
    after another; the outputs checked, and the server's log read, after the last."""
    before = served_commands(folder)
    runs = []
    for case in cases:
        out, argv = _align_command("served-loop", case, mode, args)
        wall, error, _ = run_process(argv, env, args.work, args.timeout)
        runs.append((case, out, wall, error))
    missed = len(cases) - wait_served(folder, before, len(cases))
    rows = []
    for case, out, wall, error in runs:
        row = _row("served-loop", "torchmsa", mode, case, args, caches=caches, wall_s=wall)
        row.update({"note": error} if error else _check_file(out, case))
        if missed > 0:
            said = f"{missed} of the loop's {len(cases)} ran in the caller"
            row["note"] = f"{row['note']}; {said}" if row.get("note") else said
        _print(row)
        rows.append(row)
    return rows


def peer_rows(cases: list[Case], peer: str, status: str, args) -> list[dict]:
    """``peer`` on every case, each run a fresh process."""
    if status.startswith("not installed"):
        row = _row("peers", peer, "", None, args, note=status)
        print(f"skipping {peer}: {status}", file=sys.stderr)
        return [row]
    rows = []
    for case in cases:
        row = _row("peers", peer, "", case, args, version=status)
        if peer in IN_PROCESS_PEERS:
            out = args.work.parent / "out" / f"peers-{peer}-{case.name}.fasta"
            out.parent.mkdir(exist_ok=True)
            argv = [sys.executable, "-c", _PEER_CHILD, str(REPO), peer, str(case.path)]
            argv += [str(args.threads), str(out)]
            wall, error, _ = run_process(argv, dict(os.environ), args.work, args.timeout)
            row["wall_s"] = wall
            row.update({"note": error} if error else _check_file(out, case))
        else:
            try:
                names, aligned, seconds = run_peer(peer, case.path, args.threads, args.timeout)
                row["wall_s"] = seconds
                row.update(check(names, aligned, case))
            except PeerFailed as exc:
                row["note"] = str(exc)[:300]
        _print(row)
        rows.append(row)
    return rows


def summarize(rows: list[dict], peers: Sequence[str] = ()) -> list[dict]:
    """One ``summary`` row per (regime, tool, mode) of ``rows``; torchmsa's with the ratio of
    each peer's total wall time to torchmsa's, over the cases both aligned."""
    groups: dict[tuple, list[dict]] = {}
    for row in rows:
        if row["scope"] == "case":
            groups.setdefault((row["regime"], row["tool"], row["mode"]), []).append(row)
    peer_walls = {
        p: {r["case"]: r["wall_s"] for r in groups.get(("peers", p, ""), []) if r["ok"]}
        for p in peers
    }
    out = []
    for (regime, tool, mode), group in groups.items():
        ok = [r for r in group if r["ok"]]
        walls = [r["wall_s"] for r in ok]
        median = statistics.median(walls) if walls else math.nan
        first = group[0]
        s = {
            "scope": "summary",
            "regime": regime,
            "tool": tool,
            "mode": mode,
            "backend": first["backend"],
            "threads": first["threads"],
            "caches": first.get("caches", ""),
            "cases": sum(1 for r in group if r["case"]),
            "failures": len(group) - len(ok),
            "wall_s": sum(walls) if walls else math.nan,
            "median_s": median,
            "max_s": max(walls) if walls else math.nan,
            "max_over_median": max(walls) / median if walls and median > 0 else math.nan,
            "sp": _mean(r["sp"] for r in ok),
            "tc": _mean(r["tc"] for r in ok),
            "note": "; ".join(dict.fromkeys(r["note"] for r in group if r["note"]))[:300],
        }
        for key in ("import_s", "first_pass_s", "process_s"):
            if key in first:
                s[key] = first[key]
        for key in ("triton_built", "numba_built"):
            if key in first:
                s[key] = sum(int(r.get(key) or 0) for r in group)
        if tool == "torchmsa":
            for peer, theirs in peer_walls.items():
                both = [r for r in ok if r["case"] in theirs]
                ours = sum(r["wall_s"] for r in both)
                s[f"vs_{peer}"] = sum(theirs[r["case"]] for r in both) / ours if ours else math.nan
        out.append(s)
    return out


def _mean(values) -> float:
    kept = [v for v in values if not math.isnan(v)]
    return statistics.fmean(kept) if kept else math.nan


def _backend(device: str) -> str:
    if device.startswith("cuda"):
        return "cuda"
    if device == "auto":
        import torch

        return "cuda" if torch.cuda.is_available() else "cpu"
    return device


def _split(text: str, option: str, allowed: Sequence[str] | None = None) -> list[str]:
    items = [t for t in text.split(",") if t]
    bad = [t for t in items if allowed is not None and t not in allowed]
    if bad:
        raise SystemExit(f"error: {option} {bad[0]!r}: choose from {', '.join(allowed)}")
    return items


def _preflight(work: Path) -> str:
    """Where the child processes import torchmsa from (outside the repository)."""
    code = "import torchmsa; print(torchmsa.__version__, torchmsa.__file__)"
    _, error, stdout = run_process([sys.executable, "-c", code], dict(os.environ), work, 600)
    if error:
        raise SystemExit(
            f"error: torchmsa cannot be imported outside the repository ({error}); install it "
            f"(pip install -e .) or set PYTHONPATH"
        )
    return stdout.strip()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", nargs="+", required=True, help="folders, globs or files")
    ap.add_argument("--limit", type=int, default=None, help="at most N cases, evenly spaced")
    ap.add_argument("--mode", default="default,accurate", help="comma list of torchmsa modes")
    ap.add_argument("--device", default="auto", help="auto | cpu | cuda | cuda:N")
    ap.add_argument("--threads", type=int, default=16)
    ap.add_argument("--timeout", type=float, default=None, help="seconds per process")
    ap.add_argument("--regimes", default=",".join(REGIMES))
    ap.add_argument("--peers", default="mafft-linsi", help="comma list of benchmarks.peers")
    ap.add_argument("--cold-all", action="store_true", help="every case with emptied caches")
    ap.add_argument("--warmup", action="store_true", help="run torchmsa warmup first")
    ap.add_argument(
        "--keep-caches",
        action="store_true",
        help="leave the cache variables as they are (tests: cold is then not cold)",
    )
    ap.add_argument(
        "--bytecode",
        choices=("cached", "as-is"),
        default="cached",
        help="cached: modules compiled to bytecode first, as pip install does (default); "
        "as-is: the environment's own setting",
    )
    ap.add_argument("--out", default=str(RESULTS_DIR))
    args = ap.parse_args(argv)
    modes = _split(args.mode, "--mode", ("auto", "fast", "default", "accurate"))
    args.regimes = _split(args.regimes, "--regimes", REGIMES)
    peers = _split(args.peers, "--peers", list(PEERS)) if "peers" in args.regimes else []
    args.backend = _backend(args.device)
    meta = run_metadata(args.device, None if argv is None else [__file__, *argv])
    sums: list[dict] = []
    # os.environ, which the peers' processes inherit, is as it was once the run ends
    with patch.dict(os.environ), tempfile.TemporaryDirectory(prefix="torchmsa-cold-start-") as tmp:
        args.work = Path(tmp) / "work"
        args.work.mkdir()
        meta["bytecode"] = args.bytecode
        if args.bytecode == "cached":
            took = cached_bytecode(Path(tmp) / "pycache")
            print(f"bytecode compiled in {took:.1f} s (untimed)", flush=True)
        cases = find_cases(args.cases, args.limit, Path(tmp) / "inputs")
        print(f"{len(cases)} cases; torchmsa {_preflight(args.work)}", flush=True)
        theirs: list[dict] = []
        if peers:
            status = peer_status()
            for peer in peers:
                theirs += peer_rows(cases, peer, status[peer], args)
            sums += summarize(theirs, peers)
            append_rows("cold_start", [*theirs, *sums], meta, args.out)
        for mode in modes:
            mine = torchmsa_rows(cases, mode, args)
            new = [s for s in summarize(mine + theirs, peers) if s["tool"] == "torchmsa"]
            sums += new
            # after every mode, so a run cut short by a time limit keeps what it finished
            append_rows("cold_start", [*mine, *new], meta, args.out)
    cols = ["regime", "tool", "mode", "cases", "failures", "wall_s", "median_s", "max_s"]
    cols += ["max_over_median", "sp", "import_s", "triton_built", "numba_built"]
    cols += [*(f"vs_{p}" for p in peers), "note"]
    print(markdown_table(sums, cols))
    return 0


if __name__ == "__main__":
    sys.exit(main())
