"""Large families as a user runs them (issue #35): `torchmsa align` and the peers as fresh
processes on evolved families of N sequences, with wall time, peak memory and SP/TC against
the true alignment.

Families come from :mod:`benchmarks.evolve` (cached under ``--data``). Every run is a new
process: wall time includes the interpreter, imports and compilation. Peak RSS is the child's
own ``wait4`` figure, taken by a small launcher process that starts it (a child forked by this
large process would inherit its high-water mark); peak GPU memory is torch's
``max_memory_reserved`` in the torchmsa child, which runs the CLI's ``main`` and then reports
it. FAMSA runs through pyfamsa in a child
(``famsa``: defaults; ``famsa-medoid``: ``tree_heuristic="medoid"``, FAMSA 2's
``-medoidtree``), Kalign as its binary. SP/TC count the root's columns (``core.txt``).
``mafft`` (its default, FFT-NS-2) can be added with ``--tools``; long sequences take
``--indels`` to evolve more than one indel per root-to-leaf path (issue #38's long MSAs).
``--config NAME=VALUE`` (repeatable) passes torchmsa's ``--config`` on; rows record it.

``--regimes fresh,served``: ``fresh`` (the default) runs each torchmsa process with
``TORCHMSA_DAEMON=off``, so it imports, loads and sets up everything itself; ``served`` starts
a warm server first (``torchmsa daemon start``, timed as a ``served-start`` row, decision
0058) and then runs ``python -m torchmsa align`` as a fresh process per size, which hands the
work to it: what a user's later commands cost once a server runs. A served row's peak RSS is
the calling process's; its peak GPU memory is not known (the server's). A fresh row's
``host_parallel`` says whether the threaded form of the host's profile merges was compiled (in
numba's cache, or by the run): without it a process runs the one-thread twin (decision 0049),
as after a first cold run without ``torchmsa warmup``.

``--bytecode cached`` (the default) compiles the packages to bytecode first, untimed, as ``pip
install`` does, and lets every child read it (``cold_start``'s rule, decision 0048: a lent GPU
machine sets ``PYTHONDONTWRITEBYTECODE`` over a torch install without bytecode, and each
process there compiled torch from source, 4-5 s); ``--bytecode as-is`` keeps the
environment's setting. Rows record which. Each row is appended as soon as it is measured.

    python -m benchmarks.scale --sizes 10000,30000,100000 --device cuda --threads 16
    python -m benchmarks.scale --sizes 100000 --regimes fresh,served --device cuda
    python -m benchmarks.scale --sizes 2 --length 30000 --indels 300 --mode default \
        --tools torchmsa,famsa,mafft --device cpu --threads 2
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.evolve import EvolveSpec, evolve, write
from benchmarks.harness import (
    RESULTS_DIR,
    append_rows,
    cached_bytecode,
    markdown_table,
    run_metadata,
    served_commands,
    wait_compiling_later,
    wait_served,
)

TOOLS = ("torchmsa", "famsa", "famsa-medoid", "kalign")
REGIMES = ("fresh", "served")


def family_files(
    n: int, length: int, seed: int, data: Path, indels: float = 1.0
) -> dict[str, Path]:
    """The evolved family's files, generated once per (n, length, seed, indels)."""
    name = f"evolve-n{n}-l{length}-s{seed}" + ("" if indels == 1.0 else f"-i{indels:g}")
    out = data / name
    paths = {"input": out / "fam.fasta.gz", "ref": out / "ref.fasta.gz", "core": out / "core.txt"}
    if not all(p.exists() for p in paths.values()):
        write(evolve(EvolveSpec(n=n, length=length, seed=seed, indels=indels)), out)
    return paths


def _child_argv(
    tool: str, inp: Path, out: Path, args, report: Path, regime: str = "fresh"
) -> list[str]:
    if regime == "served":  # the real command, whose work the server does
        return [sys.executable, "-m", "torchmsa", "align", str(inp), "-o", str(out),
                "--device", args.device, "--mode", args.mode, "--tree", args.tree,
                *_config_words(args), "--threads", str(args.threads)]  # fmt: skip
    if tool in ("kalign", "mafft"):
        exe = shutil.which(tool)
        if exe is None:
            raise FileNotFoundError(f"{tool} is not on PATH")
        if tool == "mafft":  # its default (FFT-NS-2); it reads no gzip and writes to stdout
            script = 'gzip -dc "$1" > "$2.in" && "$0" --thread "$3" "$2.in" > "$2"'
            return ["bash", "-c", script, exe, str(inp), str(out), str(args.threads)]
        return [exe, "-i", str(inp), "-o", str(out), "-n", str(args.threads)]
    head = [sys.executable, "-m", "benchmarks.scale", "--child", tool, "--report", str(report)]
    return head + ["--threads", str(args.threads), "--device", args.device, "--mode", args.mode,
                   "--tree", args.tree, *_config_words(args), str(inp), str(out)]  # fmt: skip


def _config_words(args) -> list[str]:
    """``--config NAME=VALUE`` words for torchmsa's command line, one pair per setting."""
    return [w for c in args.config for w in ("--config", c)]


# Runs argv[2:] and writes its peak RSS (bytes) to argv[1]. A child's ru_maxrss starts at the
# RSS of the process that forked it (Linux keeps the high-water mark across fork and exec), so
# the measured command is started by this small process, not by the benchmark's large one.
_LAUNCHER = """
import os, sys
pid = os.posix_spawnp(sys.argv[2], sys.argv[2:], os.environ)
_, status, usage = os.wait4(pid, 0)
with open(sys.argv[1], "w") as fh:
    fh.write(str(usage.ru_maxrss * 1024))
code = os.waitstatus_to_exitcode(status)
sys.exit(code if code >= 0 else 128 - code)
"""


def run_child(
    argv: list[str], timeout: float, env: dict | None = None
) -> tuple[str, float, int, str]:
    """``(status, wall seconds, peak RSS bytes, last stderr line)`` of one process, started by
    a small launcher so that its peak RSS is its own (0 when it was stopped at ``timeout``:
    the process group is killed and no figure comes back)."""
    with tempfile.TemporaryFile() as err, tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "rss"
        launcher = [sys.executable, "-S", "-c", _LAUNCHER, str(report), *argv]
        start = time.perf_counter()
        proc = subprocess.Popen(
            launcher,
            stdout=subprocess.DEVNULL,
            stderr=err,
            start_new_session=True,
            env=_fresh_env() if env is None else env,
        )
        try:
            code = proc.wait(timeout=max(timeout, 0.0))
            status = "ok" if code == 0 else "failed"
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            status = "timeout"
        wall = time.perf_counter() - start
        rss = int(report.read_text()) if status != "timeout" and report.exists() else 0
        err.seek(0)
        lines = err.read().decode(errors="replace").strip().splitlines()
    return status, wall, rss, (lines[-1] if lines else "")


def _fresh_env() -> dict:
    """The environment of a fresh-regime process: no warm server."""
    return {**os.environ, "TORCHMSA_DAEMON": "off"}


class Server:
    """A warm torchmsa server in a folder of its own (``served`` regime), started and timed
    by :meth:`start`, stopped by :meth:`stop`."""

    def __init__(self, folder: Path, timeout: float):
        self.folder, self.timeout = folder, timeout
        self.env = {**os.environ, "TORCHMSA_DAEMON": "auto", "TORCHMSA_DAEMON_DIR": str(folder)}
        self.env["TORCHMSA_DAEMON_IDLE"] = "1800"

    def _cli(self, *words: str) -> list[str]:
        return [sys.executable, "-m", "torchmsa", *words]

    def start(self) -> tuple[str, float, int, str]:
        self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        argv = self._cli("daemon", "start", "--wait", str(int(self.timeout)))
        return run_child(argv, self.timeout, self.env)

    def stop(self) -> None:
        run_child(self._cli("daemon", "stop"), 60, self.env)


def child(tool: str, inp: Path, out: Path, args) -> int:
    """The measured process: torchmsa's CLI, or FAMSA through pyfamsa."""
    peak, host_parallel = 0, None
    if tool == "torchmsa":
        from torchmsa.cli import main as cli_main

        code = cli_main(["align", str(inp), "-o", str(out), "--device", args.device,
                         "--mode", args.mode, "--tree", args.tree,
                         *_config_words(args),
                         "--threads", str(args.threads)])  # fmt: skip
        import torch

        from torchmsa.cpu import merge, twins

        if torch.cuda.is_available():
            peak = torch.cuda.max_memory_reserved()
        # whether the host's profile merges could take their threaded form (decision 0049:
        # without it in numba's cache a process runs the one-thread twin)
        host_parallel = twins.compiled(merge._merge_parallel)
    else:
        import pyfamsa

        from torchmsa.io import read_sequences

        recs = read_sequences(inp)
        seqs = [pyfamsa.Sequence(r.name.encode(), r.seq.upper().encode()) for r in recs]
        extra = {"tree_heuristic": "medoid"} if tool == "famsa-medoid" else {}
        aln = pyfamsa.Aligner(threads=args.threads, **extra).align(seqs)
        with open(out, "w") as fh:
            fh.writelines(f">{s.id.decode()}\n{s.sequence.decode()}\n" for s in aln)
        code = 0
    Path(args.report).write_text(json.dumps({"peak_gpu": peak, "host_parallel": host_parallel}))
    return int(code or 0)


def score(out: Path, files: dict[str, Path]) -> tuple[float, float]:
    """SP/TC of ``out`` against the true alignment; any size of output (FAMSA's alignment of
    3 * 10^5 sequences passed the readers' default 4 GiB)."""
    from torchmsa.io import InputLimits, read_alignment
    from torchmsa.metrics import score_alignment

    test = read_alignment(out, limits=InputLimits(max_input_bytes=1 << 40))
    s = score_alignment(test, files["ref"], files["core"])
    return s.sp, s.tc


def _start_row(status: str, wall: float, last: str, args) -> dict:
    return {
        "n": 0, "tool": "torchmsa", "regime": "served-start", "mode": args.mode,
        "threads": args.threads, "status": status, "wall_s": round(wall, 3),
        "error": "" if status == "ok" else last[-300:],
    }  # fmt: skip


def _size_row(tool: str, regime: str, files: dict, args, server: Server | None) -> dict | None:
    """One tool's process on one family (``None``: the tool is not installed)."""
    with tempfile.TemporaryDirectory() as tmp:
        out, report = Path(tmp) / "out.fasta", Path(tmp) / "report.json"
        try:
            argv_c = _child_argv(tool, files["input"], out, args, report, regime)
        except FileNotFoundError as exc:
            print(f"skip {tool}: {exc}")
            return None
        before = served_commands(server.folder) if regime == "served" else 0
        env = server.env if regime == "served" else None
        status, wall, rss, last = run_child(argv_c, args.timeout, env)
        if regime == "served" and status == "ok" and not wait_served(server.folder, before):
            status, last = "not served", "the command ran in its own process"
        sp = tc = float("nan")
        if status in ("ok", "not served") and not args.no_score:
            try:
                sp, tc = score(out, files)
            except Exception as exc:  # noqa: BLE001 - the run's other rows still count
                status, last = "unscored", f"{type(exc).__name__}: {exc}"
        got = json.loads(report.read_text()) if report.exists() else {}
        peak, host_parallel = got.get("peak_gpu"), got.get("host_parallel")
    mine = tool == "torchmsa"
    return {
        "tool": tool, "regime": regime if mine else "", "mode": args.mode if mine else "",
        "tree": args.tree if mine else "", "config": " ".join(args.config) if mine else "",
        "threads": args.threads, "status": status, "wall_s": round(wall, 3),
        "peak_rss_gib": round(rss / 2**30, 3),
        "peak_gpu_gib": None if peak is None else round(peak / 2**30, 3),
        "sp": sp, "tc": tc, "length": args.length, "seed": args.seed, "indels": args.indels,
        "host_parallel": host_parallel, "error": "" if status == "ok" else last[-300:],
    }  # fmt: skip


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10000,30000,100000")
    ap.add_argument("--tools", default=",".join(TOOLS))
    ap.add_argument("--length", type=int, default=250)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--indels", type=float, default=1.0, help="indels per root-to-leaf path")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--device", default="auto")
    ap.add_argument("--mode", default="auto")
    ap.add_argument("--tree", default="auto", help="torchmsa's --tree (default: its own choice)")
    ap.add_argument(
        "--config",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="torchmsa's --config (repeatable), e.g. tree.parttree_distance=lcs",
    )
    ap.add_argument("--regimes", default="fresh", help="fresh,served (torchmsa only)")
    ap.add_argument("--bytecode", choices=("cached", "as-is"), default="cached")
    ap.add_argument("--timeout", type=float, default=900.0)
    ap.add_argument(
        "--no-score", action="store_true", help="skip SP/TC (minutes at 3*10^6 sequences)"
    )
    ap.add_argument("--data", type=Path, default=Path(tempfile.gettempdir()) / "torchmsa-scale")
    ap.add_argument("--out", default=None, help="results folder (default benchmarks/results)")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--report", default=None, help=argparse.SUPPRESS)
    ap.add_argument("paths", nargs="*", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        return child(args.child, Path(args.paths[0]), Path(args.paths[1]), args)
    meta = run_metadata(args.device)
    regimes = [r for r in args.regimes.split(",") if r]
    if bad := [r for r in regimes if r not in REGIMES]:
        ap.error(f"unknown regime {bad[0]!r}; use {','.join(REGIMES)}")
    tools = args.tools.split(",")
    runs = [(t, r) for t in tools for r in (regimes if t == "torchmsa" else ["fresh"])]
    rows, server = [], None
    meta["bytecode"] = args.bytecode

    def add(row: dict) -> None:
        rows.append(row)
        append_rows("scale", [row], meta, args.out)
        print(markdown_table([row]), flush=True)

    with tempfile.TemporaryDirectory() as folder:
        if args.bytecode == "cached":
            took = cached_bytecode(Path(folder) / "pycache")
            print(f"bytecode compiled in {took:.1f} s (untimed)", flush=True)
        if ("torchmsa", "served") in runs:
            server = Server(Path(folder) / "daemon", args.timeout)
            status, wall, rss, last = server.start()
            add(_start_row(status, wall, last, args))
            if status != "ok":
                runs.remove(("torchmsa", "served"))
        try:
            for n in [int(x) for x in args.sizes.split(",")]:
                t0 = time.perf_counter()
                files = family_files(n, args.length, args.seed, args.data, args.indels)
                made = time.perf_counter() - t0
                for tool, regime in runs:
                    row = _size_row(tool, regime, files, args, server)
                    # a compile a command left for the next (decision 0067) ends before the
                    # next timed process starts
                    wait_compiling_later()
                    if row is not None:
                        add({"n": n, **row, "generate_s": round(made, 2)})
        finally:
            if server is not None:
                server.stop()
    print(markdown_table(rows))
    print(f"appended {len(rows)} rows to {Path(args.out or RESULTS_DIR) / 'scale.csv'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
