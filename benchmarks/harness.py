"""What every benchmark shares: run metadata, case loading, settings, timing and the tidy
results files.

Each benchmark appends its rows to one CSV, ``benchmarks/results/<benchmark>.csv``: one row per
case x tool x variant x run, each carrying the run's id, date, commit, device, CPU, library
versions, command line and the non-default settings it ran under (``config``, ``policy``,
``budget``). Files only grow: a run adds rows, a new column is added empty to the old rows.

Case loading (:mod:`benchmarks.cases`) and settings (:mod:`benchmarks.settings`) are
re-exported here, so a benchmark imports everything it shares from this module.
"""

from __future__ import annotations

import csv
import datetime
import math
import os
import platform
import secrets
import shlex
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from benchmarks.cases import (
    SMALL_LEN,
    SMALL_N,
    case_files,
    load_cases,
    pick_cases,
    score,
    select_cases,
    set_threads,
    small_case,
)
from benchmarks.settings import (
    Variant,
    add_settings_options,
    align_kwargs,
    parse_variant,
    parsed_settings,
    settings_columns,
    settings_from,
)

REPO = Path(__file__).resolve().parent.parent
RESULTS_DIR = REPO / "benchmarks" / "results"

__all__ = [
    "REPO",
    "RESULTS_DIR",
    "DATA_DIR",
    "ID_COLUMNS",
    "META_COLUMNS",
    "Timer",
    "Variant",
    "cached_bytecode",
    "served_commands",
    "wait_served",
    "run_metadata",
    "append_rows",
    "read_rows",
    "markdown_table",
    "SMALL_N",
    "SMALL_LEN",
    "load_cases",
    "select_cases",
    "pick_cases",
    "small_case",
    "case_files",
    "score",
    "add_settings_options",
    "settings_from",
    "parse_variant",
    "parsed_settings",
    "align_kwargs",
    "settings_columns",
    "set_threads",
]


def _data_dir() -> Path:
    """``$TORCHMSA_BENCH_DATA``, else ``shared/benchmarks`` beside the repository or inside it."""
    if os.environ.get("TORCHMSA_BENCH_DATA"):
        return Path(os.environ["TORCHMSA_BENCH_DATA"])
    for base in (REPO.parent, REPO):
        if (base / "shared" / "benchmarks").is_dir():
            return base / "shared" / "benchmarks"
    return REPO.parent / "shared" / "benchmarks"


DATA_DIR = _data_dir()

# leading columns of every results file, in this order (those a benchmark uses)
ID_COLUMNS = (
    "run",
    "date",
    "scope",
    "dataset",
    "case",
    "ref_set",
    "tool",
    "mode",
    "variant",
    "config",
    "policy",
    "budget",
)
# trailing columns: where and with what a row was measured
META_COLUMNS = (
    "device",
    "cpu",
    "commit",
    "torch",
    "triton",
    "numba",
    "numpy",
    "python",
    "command",
    "source",
)


class Timer:
    """Wall-clock seconds of a ``with`` block (``time.perf_counter``); CUDA is synchronised
    on both ends when ``cuda`` is true, so queued kernels are counted.

    Example:
        >>> with Timer() as t:
        ...     pass
        >>> t.seconds >= 0
        True
    """

    def __init__(self, cuda: bool = False):
        self.cuda = cuda
        self.seconds = float("nan")

    def _sync(self) -> None:
        if self.cuda:
            import torch

            torch.cuda.synchronize()

    def __enter__(self) -> Timer:
        self._sync()
        self._start = time.perf_counter()
        return self

    def __exit__(self, *exc) -> None:
        self._sync()
        self.seconds = time.perf_counter() - self._start


# ---- run metadata ---------------------------------------------------------------------------


def _git(*args: str) -> str:
    try:
        out = subprocess.run(
            ["git", *args], cwd=REPO, capture_output=True, text=True, timeout=30, check=True
        )
    except (OSError, subprocess.SubprocessError):
        return ""
    return out.stdout.strip()


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _version(module: str) -> str:
    try:
        mod = __import__(module)
    except Exception:  # a broken install must not stop a benchmark from recording the rest
        return "not installed"
    return str(getattr(mod, "__version__", "unknown"))


def _command(argv: Sequence[str] | None = None) -> str:
    """The command line as it can be typed again: ``python -m benchmarks.<name> ...``."""
    argv = list(sys.argv if argv is None else argv)
    script = Path(argv[0]) if argv and argv[0] else Path("python")
    try:
        rel = script.resolve().relative_to(REPO)
    except ValueError:
        rel = None
    if rel is not None and rel.suffix == ".py" and rel.parts[0] == "benchmarks":
        head = "python -m " + ".".join(rel.with_suffix("").parts)
    else:
        head = str(script)
    return " ".join([head, *(shlex.quote(a) for a in argv[1:])])


def run_metadata(device: str | None = None, argv: Sequence[str] | None = None) -> dict[str, str]:
    """What a result depends on: a fresh run id, the date, code and library versions, device.

    Arguments:
        device: the torch device the run used (``"cuda:0"``, ``"cpu"``); ``None`` or
            ``"auto"`` reports the first CUDA GPU when there is one, else the CPU.
        argv: the command line to record (default ``sys.argv``).

    Returns:
        ``run`` (``$TORCHMSA_RUN``, else ``<date>-<random hex>``: shared by every row of the
        run, and by the shards of one run when they are given one ``$TORCHMSA_RUN``), ``date`` (UTC,
        ISO 8601), ``device`` (GPU name, or CPU model and core count), ``cpu`` (where
        numba and command-line peers run), ``commit`` (short hash, ``-dirty`` when tracked
        files other than ``benchmarks/results/`` differ; ``$TORCHMSA_COMMIT`` wins, for copies
        of the tree with stale git metadata), versions of ``torch``, ``triton``, ``numba``,
        ``numpy`` and ``python``, and ``command``.
    """
    cpu = f"{_cpu_name()} ({os.cpu_count()} cores)"
    name = cpu
    try:
        import torch

        device = None if device in (None, "auto") else str(device)
        if torch.cuda.is_available() and (device is None or device.startswith("cuda")):
            index = torch.device(device).index if device is not None else None
            name = torch.cuda.get_device_name(index or 0)
    except Exception:  # no torch or no driver: the CPU name stands
        pass
    commit = os.environ.get("TORCHMSA_COMMIT", "")
    if not commit:
        commit = _git("rev-parse", "--short", "HEAD") or "unknown"
        # the results files are this harness's output: appending to them leaves the code clean
        if _git("status", "--porcelain", "--untracked-files=no", "--", ".", ":!benchmarks/results"):
            commit += "-dirty"
    now = datetime.datetime.now(datetime.timezone.utc)
    return {
        "run": os.environ.get("TORCHMSA_RUN") or f"{now:%Y%m%dT%H%M%SZ}-{secrets.token_hex(3)}",
        "date": now.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "device": name,
        "cpu": cpu,
        "commit": commit,
        "torch": _version("torch"),
        "triton": _version("triton"),
        "numba": _version("numba"),
        "numpy": _version("numpy"),
        "python": platform.python_version(),
        "command": _command(argv),
    }


# ---- tidy results files ---------------------------------------------------------------------


def _cell(value) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return "" if math.isnan(value) else repr(value)
    return str(value)


def _order(columns: Iterable[str]) -> list[str]:
    cols = list(dict.fromkeys(columns))
    head = [c for c in ID_COLUMNS if c in cols]
    tail = [c for c in META_COLUMNS if c in cols]
    return head + [c for c in cols if c not in head and c not in tail] + tail


def read_rows(path: str | os.PathLike) -> list[dict[str, str]]:
    """The rows of a results file (every value a string, ``""`` for none)."""
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def append_rows(
    benchmark: str,
    rows: Iterable[Mapping],
    metadata: Mapping[str, str] | None = None,
    out_dir: str | os.PathLike | None = None,
) -> Path:
    """Append ``rows`` to ``<out_dir>/<benchmark>.csv``, each with ``metadata``'s columns.

    The file is created with the rows' columns (identifying columns first, metadata last). A
    column the file lacks is added, empty in the rows already there; no row already written
    changes otherwise. Floats are written exactly (``repr``), NaN and ``None`` as ``""``.

    Arguments:
        benchmark: the file's stem, e.g. ``"accuracy"``.
        rows: one mapping per row.
        metadata: :func:`run_metadata` (computed when ``None``); a row's own value wins.
        out_dir: :data:`RESULTS_DIR` by default.

    Returns:
        The file's path.
    """
    meta = dict(run_metadata() if metadata is None else metadata)
    full = [{**meta, **row} for row in rows]
    out = Path(out_dir) if out_dir is not None else RESULTS_DIR
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{benchmark}.csv"
    wanted = _order(c for row in full for c in row)
    if path.exists() and path.stat().st_size:
        with open(path, newline="") as fh:
            header = next(csv.reader(fh), [])
        extra = [c for c in wanted if c not in header]
        if extra:
            old = read_rows(path)
            header = _order(header + extra)
            tmp = path.with_suffix(".csv.tmp")
            with open(tmp, "w", newline="") as fh:
                writer = csv.DictWriter(fh, fieldnames=header, lineterminator="\n")
                writer.writeheader()
                writer.writerows(old)
            tmp.replace(path)
        mode = "a"
    else:
        header, mode = wanted, "w"
    with open(path, mode, newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=header, lineterminator="\n")
        if mode == "w":
            writer.writeheader()
        for row in full:
            writer.writerow({k: _cell(v) for k, v in row.items()})
    return path


def markdown_table(rows: list[Mapping], columns: list[str] | None = None) -> str:
    """Rows (mappings) as a GitHub markdown table, columns in first-seen order."""
    if columns is None:
        columns = list(dict.fromkeys(k for row in rows for k in row))

    def fmt(value) -> str:
        if isinstance(value, float):
            return "" if math.isnan(value) else f"{value:.4g}"
        return str(value).replace("|", "\\|")

    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for row in rows:
        lines.append("| " + " | ".join(fmt(row.get(c, "")) for c in columns) + " |")
    return "\n".join(lines) + "\n"


# what a pip install leaves compiled: the packages an align process imports
_BYTECODE_PACKAGES = ("torchmsa", "torch", "triton", "numba", "llvmlite", "numpy", "scipy", "Bio")


def cached_bytecode(prefix: Path) -> float:
    """Children write and read bytecode under ``prefix`` (``PYTHONPYCACHEPREFIX``; a
    ``PYTHONDONTWRITEBYTECODE`` in the environment is dropped), and the packages they import
    are compiled there first, untimed, as ``pip install`` compiles them: a machine that
    forbids bytecode files would otherwise make every process compile every module it
    imports from source (seconds for torch). Returns the compile's seconds."""
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ["PYTHONPYCACHEPREFIX"] = str(prefix)
    code = (
        "import importlib.util, sys\n"
        "for name in sys.argv[1:]:\n"
        "    spec = importlib.util.find_spec(name)\n"
        "    if spec and spec.submodule_search_locations:\n"
        "        print(*spec.submodule_search_locations)\n"
    )
    found = subprocess.run(
        [sys.executable, "-c", code, *_BYTECODE_PACKAGES], capture_output=True, text=True
    )
    dirs = found.stdout.split()
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "compileall", "-q", "-j", "0", *dirs], check=False)
    return time.perf_counter() - t0


def served_commands(folder: Path) -> int:
    """Commands the warm servers whose logs are in ``folder`` have run (decision 0058)."""
    return sum(p.read_text().count("] align: status") for p in Path(folder).glob("*.log"))


def wait_served(folder: Path, before: int, count: int = 1, seconds: float = 5.0) -> int:
    """How many of the ``count`` commands just run the servers in ``folder`` have logged past
    their ``before`` count, waiting up to ``seconds`` for all of them (a server logs a command
    after tidying up, so a moment after its caller ends); fewer: the others ran in their
    callers."""
    deadline = time.monotonic() + seconds
    while served_commands(folder) < before + count and time.monotonic() < deadline:
        time.sleep(0.05)
    return min(served_commands(folder) - before, count)


def compiling_later() -> int:
    """How many ``torchmsa.compile_later`` processes run on this machine (decision 0067: a
    command may leave one compiling for the next; read from ``/proc``, 0 without it)."""
    count = 0
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            cmd = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        count += b"torchmsa.compile_later" in cmd
    return count


def wait_compiling_later(seconds: float = 300.0) -> float:
    """Waits, up to ``seconds``, until no ``torchmsa.compile_later`` process runs, so that the
    next timed process does not share the machine with one; returns the seconds waited."""
    t0 = time.monotonic()
    while compiling_later() and time.monotonic() - t0 < seconds:
        time.sleep(0.2)
    return time.monotonic() - t0
