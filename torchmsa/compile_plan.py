"""A cold first call's numba functions, compiled on every core (decision 0055).

numba compiles a function, and every function it calls, on one core when it first meets
their argument types. A first ``torchmsa align`` of a small family with empty caches compiled
about 45 functions one after another (30 s on two cores, 35 s on an H100 machine's host),
while the machine's other cores idled.

The plan (``data/compile_plan.json``, made by ``python -m torchmsa.compile_plan record``)
lists what a first align of a small family compiles in each mode: every numba function of
torchmsa with its argument types (pickled, as numba's cache index keeps them), the functions
it calls, and the seconds its own compiling took. :func:`compile_cold` compiles a mode's
functions that numba's on-disk cache lacks in forked worker processes, each function once the
functions it calls are in the cache (so that it loads them rather than compiling them again),
the longest chain of compiles still ahead first; the align then loads them from the cache.
Results cannot change: the same functions compile to the same code, only earlier and
elsewhere. A function the plan lacks or describes wrongly is compiled by the align itself, as
before; a plan that cannot be read is ignored.

Only the ``torchmsa align`` command calls it (the API starts no processes), and only with
two cores or more, on a platform that forks, unless ``TORCHMSA_COMPILE_AHEAD=0``.
"""

from __future__ import annotations

import base64
import importlib
import json
import os
import pickle
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from torchmsa.runtime import usable_cores

__all__ = [
    "PLAN",
    "PlanEntry",
    "CompileReport",
    "load_plan",
    "cold",
    "compile_cold",
    "record",
    "global_name",
    "pack_types",
    "compile_types",
]

PLAN = Path(__file__).with_name("data") / "compile_plan.json"
MAX_WORKERS = 16  # more buys nothing: the longest chain of compiles sets the time
DEADLINE_S = 300.0  # workers still busy then are stopped; the align compiles what is left


@dataclass(frozen=True)
class PlanEntry:
    """One numba function and argument types: ``module.name`` compiled for ``types``
    (pickled numba types; ``text`` says them for people), calling the entries ``calls``,
    compiling for ``seconds`` on its own when recorded, in ``modes``."""

    module: str
    name: str
    text: str
    types: str
    calls: tuple[int, ...]
    seconds: float
    modes: tuple[str, ...]


@dataclass(frozen=True)
class CompileReport:
    """What :func:`compile_cold` did: the mode, worker processes, functions compiled (and
    those that failed, which the align compiles itself), and wall seconds."""

    mode: str
    workers: int
    compiled: int
    failed: int
    seconds: float
    errors: list[str] = field(default_factory=list)

    def summary(self) -> str:
        return (
            f"compiled {self.compiled} numba functions for {self.mode} mode in "
            f"{self.seconds:.1f} s on {self.workers} processes"
            + (f" ({self.failed} left to the align)" if self.failed else "")
        )


def load_plan(path: Path = PLAN) -> list[PlanEntry]:
    """The plan's entries (``[]`` when there is no readable plan)."""
    try:
        raw = json.loads(Path(path).read_text())
        return [
            PlanEntry(
                e["module"],
                e["name"],
                e["text"],
                e["types"],
                tuple(e["calls"]),
                float(e["seconds"]),
                tuple(e["modes"]),
            )  # fmt: skip
            for e in raw["entries"]
        ]
    except (OSError, ValueError, KeyError, TypeError):
        return []


def _closure(entries: list[PlanEntry], mode: str) -> list[int]:
    """The entries of ``mode`` and every entry they call."""
    todo = [i for i, e in enumerate(entries) if mode in e.modes]
    seen = set(todo)
    while todo:
        for c in entries[todo.pop()].calls:
            if c not in seen:
                seen.add(c)
                todo.append(c)
    return sorted(seen)


def _dispatcher(entry: PlanEntry):
    return getattr(importlib.import_module(entry.module), entry.name)


def global_name(func) -> str | None:
    """The name under which the numba function ``func`` is a global of its module (``None``:
    none), what a plan entry or :mod:`torchmsa.compile_later`'s job names it by."""
    found = vars(sys.modules[func.py_func.__module__]).items()
    return next((k for k, v in found if v is func), None)


def pack_types(args) -> str:
    """Argument types as a plan entry keeps them: pickled, as base64 text."""
    return base64.b64encode(pickle.dumps(tuple(args))).decode("ascii")


def compile_types(module: str, name: str, types: str) -> None:
    """Compiles ``module.name`` for the argument types ``types`` (:func:`pack_types`), or
    loads it from numba's cache where it is there."""
    getattr(importlib.import_module(module), name).compile(pickle.loads(base64.b64decode(types)))


def _pending(entries: list[PlanEntry], ids: list[int]) -> list[int]:
    """The entries whose function numba's cache lacks (any argument types: the check reads
    its index once a function; :func:`torchmsa.cpu.twins.compiled`)."""
    from torchmsa.cpu.twins import compiled

    out = []
    for i in ids:
        try:
            if not compiled(_dispatcher(entries[i])):
                out.append(i)
        except Exception:  # noqa: BLE001 - a function renamed since the plan: the align's
            continue
    return out


def _applies() -> bool:
    if os.environ.get("TORCHMSA_COMPILE_AHEAD", "1") == "0" or usable_cores() < 2:
        return False
    import multiprocessing

    return "fork" in multiprocessing.get_all_start_methods()


def cold() -> bool:
    """Whether :func:`compile_cold` applies here and numba's cache lacks a function the plan
    starts from in some mode (one a first call reaches, that no other entry calls): a cheap
    test, made before the command reads its input, of whether to compile first."""
    if not _applies():
        return False
    entries = load_plan()
    called = {c for e in entries for c in e.calls}
    return bool(_pending(entries, [i for i in range(len(entries)) if i not in called]))


def compile_cold(mode: str, *, workers: int | None = None) -> CompileReport | None:
    """Compiles the plan's functions for ``mode`` that numba's cache lacks, in ``workers``
    forked processes (default: the cores this process may use, at most
    :data:`MAX_WORKERS`), and returns when they are done; ``None`` when there was nothing to
    do or it does not apply (see the module's docstring)."""
    if not _applies():
        return None
    import multiprocessing

    entries = load_plan()
    if not entries:
        return None
    pending = _pending(entries, _closure(entries, mode))
    n = min(workers or usable_cores(), MAX_WORKERS, len(pending))
    if n < 2:
        return None
    start = time.perf_counter()
    done, failed, errors = _schedule(entries, pending, n, multiprocessing.get_context("fork"))
    return CompileReport(mode, n, done, failed, time.perf_counter() - start, errors)


def _priorities(entries: list[PlanEntry], pending: list[int]) -> dict[int, float]:
    """Each pending entry's seconds plus the longest chain of pending callers above it."""
    users: dict[int, list[int]] = {i: [] for i in pending}
    for i in pending:
        for c in entries[i].calls:
            if c in users:
                users[c].append(i)
    prio: dict[int, float] = {}

    def chain(i: int) -> float:
        if i not in prio:
            prio[i] = entries[i].seconds + max((chain(u) for u in users[i]), default=0.0)
        return prio[i]

    for i in pending:
        chain(i)
    return prio


def _schedule(entries, pending, n, ctx) -> tuple[int, int, list[str]]:
    """Runs the pending entries on ``n`` workers, each once its pending callees are done."""
    from multiprocessing.connection import wait

    todo = set(pending)
    waits = {i: {c for c in entries[i].calls if c in todo} for i in pending}
    prio = _priorities(entries, pending)
    ready = [i for i in pending if not waits[i]]
    workers = []
    for _ in range(n):
        parent, child = ctx.Pipe()
        proc = ctx.Process(target=_worker, args=(child, entries), daemon=True)
        proc.start()
        child.close()
        workers.append([proc, parent, None])
    compiled, errors = 0, []
    deadline = time.monotonic() + DEADLINE_S
    try:
        while todo:
            for w in workers:
                if w[2] is None and ready:
                    ready.sort(key=lambda i: (prio[i], -i))
                    w[2] = ready.pop()
                    w[1].send(w[2])
            busy = [w for w in workers if w[2] is not None]
            if not busy:  # nothing ready and nothing running: a cycle, or workers died
                break
            left = deadline - time.monotonic()
            if left <= 0:
                break
            for conn in wait([w[1] for w in busy], timeout=left):
                w = next(w for w in busy if w[1] is conn)
                i, w[2] = w[2], None
                try:
                    err = conn.recv()
                except (EOFError, OSError):  # the worker died: the align compiles it
                    err = "worker stopped"
                    workers.remove(w)
                if err is None:
                    compiled += 1
                else:
                    errors.append(f"{entries[i].module}.{entries[i].name}: {err}")
                todo.discard(i)
                for j in todo:
                    if i in waits[j]:
                        waits[j].discard(i)
                        if not waits[j] and j not in ready:
                            ready.append(j)
    finally:
        for w in workers:
            try:
                w[1].send(None)
            except OSError:
                pass
        for proc, _, task in workers:  # one still compiling at the deadline is stopped
            proc.join(timeout=0 if task is not None else 5)
            if proc.is_alive():
                proc.kill()
    return compiled, len(pending) - compiled, errors


def _worker(conn, entries: list[PlanEntry]) -> None:
    """A worker: compiles the entries it is sent, answering ``None`` or an error's text.
    Ctrl-C is the parent's to handle (it stops the workers): no traceback from each."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    while True:
        try:
            i = conn.recv()
        except EOFError:
            return
        if i is None:
            return
        try:
            e = entries[i]
            compile_types(e.module, e.name, e.types)
            conn.send(None)
        except Exception as exc:  # noqa: BLE001 - reported; the align compiles it itself
            conn.send(f"{type(exc).__name__}: {exc}"[:300])


# ---- recording the plan (a maintainer's step when numba functions change) -----------------


def _recorder():
    """Wraps numba's ``Dispatcher.compile`` to note every torchmsa function compiled (not
    loaded from the cache), its argument types, what it calls and its own seconds."""
    from numba.core.dispatcher import Dispatcher

    seen: dict[tuple, dict] = {}
    order: list[dict] = []
    stack: list[list] = []  # per torchmsa compile in progress: [callee keys, callee seconds]
    original = Dispatcher.compile

    def compile_(self, sig):
        module = self.py_func.__module__
        if not module.startswith("torchmsa."):
            return original(self, sig)
        args = tuple(sig.args) if hasattr(sig, "args") else tuple(sig)
        name = global_name(self)
        key = (module, name, args)
        if stack:
            stack[-1][0].append(key)
        misses = sum(self.stats.cache_misses.values())
        stack.append([[], 0.0])
        t = time.perf_counter()
        try:
            return original(self, sig)
        finally:
            took = time.perf_counter() - t
            calls, inner = stack.pop()
            if stack:
                stack[-1][1] += took
            missed = sum(self.stats.cache_misses.values()) > misses
            if missed and name is not None and key not in seen:
                seen[key] = {
                    "module": module, "name": name, "args": args, "calls": calls,
                    "seconds": round(took - inner, 2),
                }  # fmt: skip
                order.append(seen[key])

    Dispatcher.compile = compile_
    return order


def _record_child(mode: str, out: str, inputs: list[str]) -> None:
    """In a fresh process with an empty numba cache: aligns ``inputs`` in ``mode`` on the CPU
    with the command, and writes what compiled to ``out``."""
    order = _recorder()
    from torchmsa.cli import main

    for k, path in enumerate(inputs):
        main(["align", path, "-o", f"{out}.{k}.fasta", "--mode", mode, "--device", "cpu", "-q"])
    rows = [
        {
            "module": r["module"],
            "name": r["name"],
            "text": str(r["args"]),
            "types": pack_types(r["args"]),
            "calls": [[m, n, str(a)] for m, n, a in r["calls"] if n is not None],
            "seconds": r["seconds"],
        }  # fmt: skip
        for r in order
    ]
    Path(out).write_text(json.dumps(rows))


def record(modes=("fast", "default", "accurate"), path: Path = PLAN) -> int:
    """Records the plan: for each mode a fresh process with an empty numba cache aligns the
    bundled example and a generated family of 50 sequences of 300 residues with
    ``torchmsa align --device cpu``; the entries of all modes are merged. Returns how many."""
    import subprocess
    import tempfile

    from torchmsa.synthetic import AMINO, family

    example = Path(__file__).parents[1] / "examples" / "superoxide_dismutase.fasta"
    entries: dict[tuple[str, str, str], dict] = {}  # by module, name and types' text
    with tempfile.TemporaryDirectory() as tmp:
        fam = Path(tmp) / "family.fasta"
        seqs = family(50, 300, 11, letters=AMINO, indels=True)
        fam.write_text("".join(f">s{k}\n{s}\n" for k, s in enumerate(seqs)))
        inputs = [str(p) for p in (example, fam) if p.exists()]
        for mode in modes:
            out = Path(tmp) / f"{mode}.json"
            env = dict(os.environ, TORCHMSA_COMPILE_AHEAD="0")
            env.pop("TORCHMSA_CACHE_DIR", None)
            env["NUMBA_CACHE_DIR"] = str(Path(tmp) / f"numba-{mode}")
            argv = [sys.executable, "-m", "torchmsa.compile_plan", "_record", mode, str(out)]
            subprocess.run([*argv, *inputs], env=env, check=True)
            for row in json.loads(out.read_text()):
                key = (row["module"], row["name"], row["text"])
                kept = entries.setdefault(key, dict(row, modes=[]))
                kept["modes"].append(mode)
                kept["seconds"] = max(kept["seconds"], row["seconds"])
                calls = {tuple(c) for c in kept["calls"]} | {tuple(c) for c in row["calls"]}
                kept["calls"] = sorted(calls)
    keys = list(entries)
    index = {k: i for i, k in enumerate(keys)}
    out_rows = []
    for k in keys:
        e = entries[k]
        calls = sorted({index[tuple(c)] for c in e["calls"] if tuple(c) in index})
        out_rows.append({
            "module": e["module"], "name": e["name"], "text": e["text"], "types": e["types"],
            "calls": calls, "seconds": e["seconds"], "modes": sorted(e["modes"]),
        })  # fmt: skip
    import numba

    head = {"numba": numba.__version__, "python": sys.version.split()[0], "entries": out_rows}
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(head, indent=1) + "\n")
    return len(out_rows)


if __name__ == "__main__":
    if sys.argv[1:2] == ["_record"]:
        _record_child(sys.argv[2], sys.argv[3], sys.argv[4:])
    elif sys.argv[1:2] == ["record"]:
        print(f"{record()} entries written to {PLAN}")
    else:
        print("usage: python -m torchmsa.compile_plan record", file=sys.stderr)
        raise SystemExit(2)
