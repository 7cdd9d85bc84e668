"""Append the rows of results files made elsewhere (a GPU machine's ``$OUT``) to the tidy ones.

    python -m benchmarks.tools.merge_results FILE.csv [FILE.csv ...] [--benchmark NAME]
        [--into benchmarks/results]

Each ``FILE.csv`` was written by a benchmark with ``--out DIR`` (``DIR/<benchmark>.csv``): its
rows are appended to ``<into>/<benchmark>.csv`` (the benchmark is the file's stem unless
``--benchmark`` names it), columns matched by name. Rows already there (the same values in
every column either has) are skipped, so merging a file twice adds nothing. The shards of an
``e2e_gpu --shard K/N`` run merge the same way; given one ``TORCHMSA_RUN`` they share a run id.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from benchmarks.harness import RESULTS_DIR, append_rows, read_rows


def _key(row: dict[str, str]) -> frozenset:
    return frozenset((k, v) for k, v in row.items() if v not in ("", None))


def merge(path: Path, into: Path, benchmark: str | None = None) -> tuple[int, int]:
    """Append ``path``'s new rows to ``into/<benchmark>.csv``: (rows appended, rows skipped)."""
    if not path.is_file():
        raise SystemExit(f"error: {path}: no such file")
    name = benchmark or path.stem
    target = into / f"{name}.csv"
    if target.resolve() == path.resolve():
        raise SystemExit(f"error: {path} is the file to merge into")
    have = {_key(r) for r in read_rows(target)} if target.is_file() else set()
    rows = read_rows(path)
    new = [r for r in rows if _key(r) not in have]
    if new:
        append_rows(name, new, metadata={}, out_dir=into)
    return len(new), len(rows) - len(new)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+", type=Path)
    ap.add_argument("--benchmark", default=None, help="the file to append to (default: stem)")
    ap.add_argument("--into", type=Path, default=RESULTS_DIR)
    args = ap.parse_args(argv)
    for path in args.files:
        added, skipped = merge(path, args.into, args.benchmark)
        name = args.benchmark or path.stem
        print(f"{path}: {added} rows appended to {args.into / name}.csv, {skipped} already there")
    return 0


if __name__ == "__main__":
    sys.exit(main())
