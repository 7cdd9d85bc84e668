"""After a command: the parallel numba functions its one-thread twins stood in for, compiled
for the next command by a detached process (decision 0067).

A process takes a parallel function's twin while the parallel function is not compiled, for up
to :data:`torchmsa.cpu.twins.COLD_CELLS` cells (decision 0049): compiling it would cost more
than its threads save in that process. Nothing compiled it for the processes after, short of
``torchmsa warmup``, so every later command of a large job ran its host work on one thread
too (a 10^5-sequence family's host merges: 1.4 s on one thread of an H200 machine's host, most
of what its threads would save).

So the ``align`` command, once its output is written, hands the parallel functions whose twins
ran at least :data:`LATER_CELLS` cells, with the argument types the twins met, to a process of
its own session that compiles them into numba's on-disk cache and exits; the command does not
wait for it. The next command finds them compiled and takes them. Results cannot change: the
twin and the parallel function run the same loop in the same order. Like the cold compile plan
(:mod:`torchmsa.compile_plan`) it is off with ``TORCHMSA_COMPILE_AHEAD=0``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

__all__ = ["LATER_CELLS", "jobs", "compile_later", "compile_jobs"]

# cells a process's twin must have run in a parallel function's place before the function is
# compiled for the next process: about half a second on one core, where a compile takes 5-25 s
LATER_CELLS = 1 << 27
_handed: set[tuple[str, str, str]] = set()  # jobs this process has handed off already


def jobs(min_cells: int = LATER_CELLS) -> list[dict]:
    """What to compile: ``{"module", "name", "types"}`` (types pickled, base64) for each
    parallel function whose twin ran at least ``min_cells`` cells in this process in its
    place, once per argument types its twin met, that this process has not handed off yet
    (a warm server runs many commands)."""
    from torchmsa.compile_plan import global_name, pack_types
    from torchmsa.cpu.twins import cold_twins, compiled

    out = []
    for parallel, one in cold_twins(min_cells):
        module, name = parallel.py_func.__module__, global_name(parallel)
        if name is None or compiled(parallel):
            continue
        for sig in one.signatures:
            types = pack_types(sig)
            if (module, name, types) not in _handed:
                out.append({"module": module, "name": name, "types": types})
    return out


def compile_later(min_cells: int = LATER_CELLS, *, wait: bool = False):
    """Starts the process that compiles :func:`jobs` (``None`` when there is nothing to compile
    or ``TORCHMSA_COMPILE_AHEAD=0``); it runs in a session of its own, its output discarded,
    and the caller does not wait for it unless ``wait`` (tests: its output is then returned as
    a ``subprocess.CompletedProcess``)."""
    if os.environ.get("TORCHMSA_COMPILE_AHEAD", "1") == "0":
        return None
    path = None
    try:
        todo = jobs(min_cells)
        if not todo:
            return None
        _handed.update((j["module"], j["name"], j["types"]) for j in todo)
        fd, path = tempfile.mkstemp(prefix="torchmsa-later-", suffix=".json")
        with os.fdopen(fd, "w") as fh:
            json.dump(todo, fh)
        argv = [sys.executable, "-m", "torchmsa.compile_later", path]
        if wait:
            return subprocess.run(argv, capture_output=True, text=True)
        quiet = subprocess.DEVNULL
        return subprocess.Popen(
            argv, stdin=quiet, stdout=quiet, stderr=quiet, start_new_session=True
        )
    except Exception:  # noqa: BLE001 - the command's own work is done: this never fails it
        if path is not None:
            Path(path).unlink(missing_ok=True)
        return None


def compile_jobs(path: str) -> int:
    """Compiles the jobs in the file ``path`` (and deletes it); returns how many compiled. A
    job that fails is left to the process that next needs the function."""
    from torchmsa.compile_plan import compile_types

    todo = json.loads(Path(path).read_text())
    Path(path).unlink(missing_ok=True)
    done = 0
    for job in todo:
        try:
            compile_types(job["module"], job["name"], job["types"])
            done += 1
        except Exception:  # noqa: BLE001 - the next process compiles it where it needs it
            continue
    return done


if __name__ == "__main__":
    print(f"compiled {compile_jobs(sys.argv[1])}")
