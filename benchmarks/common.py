"""Helpers every benchmark uses: run metadata, result files, timing."""

from __future__ import annotations

import ast
import csv
import datetime
import importlib
import os
import platform
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RESULTS_DIR = REPO / "benchmarks" / "results"


def _data_dir() -> Path:
    """``$TORCHMSA_BENCH_DATA``, else ``shared/benchmarks`` beside the repository or inside it."""
    if os.environ.get("TORCHMSA_BENCH_DATA"):
        return Path(os.environ["TORCHMSA_BENCH_DATA"])
    for base in (REPO.parent, REPO):
        if (base / "shared" / "benchmarks").is_dir():
            return base / "shared" / "benchmarks"
    return REPO.parent / "shared" / "benchmarks"


DATA_DIR = _data_dir()

__all__ = ["REPO", "RESULTS_DIR", "DATA_DIR", "Timer", "run_metadata", "write_results"]


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


def run_metadata(device: str | None = None) -> dict[str, str]:
    """What a result depends on: device, code version, library versions, date.

    Arguments:
        device: the torch device the run used (``"cuda:0"``, ``"cpu"``); ``None`` reports the
            first CUDA GPU when there is one, else the CPU.

    Returns:
        ``device`` (GPU name, or CPU model and core count), ``cpu`` (CPU model and core
        count, where command-line peers run), ``commit`` (short hash, ``-dirty``
        when tracked files differ from it), versions of ``torch``, ``triton``, ``numba``,
        ``numpy`` and ``python``, and ``date`` (UTC, ISO 8601).
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
    # a copy of the tree (the GPU machine's) may carry stale git metadata: the caller's word wins
    commit = os.environ.get("TORCHMSA_COMMIT", "")
    if not commit:
        commit = _git("rev-parse", "--short", "HEAD") or "unknown"
        if _git("status", "--porcelain", "--untracked-files=no"):
            commit += "-dirty"
    return {
        "device": name,
        "cpu": cpu,
        "commit": commit,
        "torch": _version("torch"),
        "triton": _version("triton"),
        "numba": _version("numba"),
        "numpy": _version("numpy"),
        "python": platform.python_version(),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }


def _cell(value) -> str:
    if isinstance(value, float):
        return "" if value != value else f"{value:.4g}"
    return str(value).replace("|", "\\|")


def markdown_table(rows: list[Mapping], columns: list[str] | None = None) -> str:
    """Rows (dicts) as a GitHub markdown table, columns in first-seen order."""
    if columns is None:
        columns = list(dict.fromkeys(k for row in rows for k in row))
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for row in rows:
        lines.append("| " + " | ".join(_cell(row.get(c, "")) for c in columns) + " |")
    return "\n".join(lines) + "\n"


def write_results(
    name: str,
    rows: Iterable[Mapping],
    header_md: str = "",
    out_dir: str | os.PathLike | None = None,
    metadata: Mapping[str, str] | None = None,
    md_rows: list[Mapping] | None = None,
    markdown: bool = True,
) -> tuple[Path, Path | None]:
    """Write ``<name>.csv`` (tidy rows plus the metadata columns) and ``<name>.md``.

    Arguments:
        name: file stem, e.g. ``"accuracy-balibase3"``.
        rows: one dict per result row; keys become CSV columns.
        header_md: markdown placed between the metadata block and the table.
        out_dir: where to write; :data:`RESULTS_DIR` by default.
        metadata: from :func:`run_metadata`; computed when ``None``.
        md_rows: rows for the markdown table when it should differ from the CSV (e.g. percent
            values, fewer columns); ``rows`` otherwise.
        markdown: write the ``.md`` file too (``False`` for long per-item tables).

    Returns:
        The CSV path and the markdown path (``None`` when not written).
    """
    rows = list(rows)
    meta = dict(metadata or run_metadata())
    out = Path(out_dir) if out_dir is not None else RESULTS_DIR
    out.mkdir(parents=True, exist_ok=True)
    columns = list(dict.fromkeys([k for row in rows for k in row] + list(meta)))
    csv_path = out / f"{name}.csv"
    with open(csv_path, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=columns)
        writer.writeheader()
        for row in rows:
            writer.writerow({**meta, **row})
    if not markdown:
        return csv_path, None
    md_path = out / f"{name}.md"
    meta_md = "\n".join(f"- {k}: {v}" for k, v in meta.items())
    script = Path(sys.argv[0]) if sys.argv and sys.argv[0] else Path("python")
    if script.parent.resolve() == REPO / "benchmarks":
        script = Path(f"python -m benchmarks.{script.stem}")
    command = " ".join([str(script), *sys.argv[1:]])
    parts = [f"# {name}\n", meta_md + f"\n- command: `{command}`\n"]
    if header_md:
        parts.append(header_md.rstrip() + "\n")
    parts.append(markdown_table(md_rows if md_rows is not None else rows))
    md_path.write_text("\n".join(parts))
    return csv_path, md_path


def _int_expr(text: str) -> int:
    """A literal integer expression (``2**40``, ``1 << 22``, ``-1``) without ``eval``."""
    node = ast.parse(text, mode="eval").body

    def ev(n):
        if isinstance(n, ast.Constant) and isinstance(n.value, int):
            return n.value
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub):
            return -ev(n.operand)
        if isinstance(n, ast.BinOp):
            a, b = ev(n.left), ev(n.right)
            ops = {ast.Pow: pow, ast.LShift: int.__lshift__, ast.Mult: int.__mul__}
            if type(n.op) in ops:
                return ops[type(n.op)](a, b)
        raise ValueError(f"not an integer expression: {text}")

    return ev(node)


def parse_variant(spec: str) -> tuple[str, list[tuple[object, str, int]]]:
    """``label:module.NAME=expr,...`` -> (label, [(module, NAME, value), ...])."""
    label, _, body = spec.partition(":")
    sets = []
    for item in filter(None, body.split(",")):
        target, _, expr = item.partition("=")
        mod, _, name = target.rpartition(".")
        module = importlib.import_module(f"torchmsa.{mod}")
        if not hasattr(module, name):
            raise ValueError(f"torchmsa.{mod} has no {name}")
        sets.append((module, name, _int_expr(expr)))
    return label, sets


def add_settings_option(parser) -> None:
    """``--set module.NAME=expr`` (repeatable) on a benchmark's argument parser."""
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="module.NAME=expr",
        help="set a torchmsa module constant for this run (e.g. pipeline.CONSISTENCY_WEIGHT=64)",
    )


def apply_settings(specs) -> None:
    """Applies ``--set module.NAME=expr`` options (``torchmsa`` module constants) in place."""
    for spec in specs or ():
        for module, name, value in parse_variant(f"set:{spec}")[1]:
            setattr(module, name, value)
