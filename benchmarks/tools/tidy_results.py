"""One-time conversion of the per-run result files into one tidy CSV per benchmark.

    python -m benchmarks.tools.tidy_results [--results benchmarks/results] [--out DIR]
        [--replace]

Until the harness (``benchmarks/harness.py``) appended to one file per benchmark, every run
wrote ``<benchmark>-<labels>.csv`` (rows), often ``-cases.csv`` beside it (one row per case)
and a ``.md`` whose header held the run's metadata. This reads them all and writes
``<benchmark>.csv``: every row of every file, with

* ``run``: the file's stem without ``-cases`` and without a shard's ``-sKofN`` (a run's
  summary and case rows, and the shards of one run, share it);
* ``scope``: ``case`` for a row per measured item, ``summary`` for a row of a summary file
  whose items are in a ``-cases`` file beside it (or a merge of shards);
* ``dataset``, ``mode``, ``variant`` filled from the file name where the row lacks them
  (``accuracy-balibase3-accurate-5c9f539-cw40``: dataset ``balibase3``, mode ``accurate``,
  variant ``cw40``); ``config`` / ``policy``: the run's ``--set`` / ``--variant`` settings
  (then module constants, e.g. ``pipeline.CONSISTENCY_WEIGHT=16``);
* the metadata of the ``.md`` header where the row lacks it (``device``, ``cpu``, ``commit``,
  versions, ``date``, ``command``, ``note`` from a ``provenance`` line);
* ``source``: the file the row came from.

Rows repeated verbatim in another file (a merge of shards repeats the shards' case rows) are
kept once, from the first file. A ``.md`` without a ``.csv`` (hand-written probes) gives one
row per line of each of its tables, ``table`` naming the section. One-off experiments,
deleted from ``benchmarks/`` since, go to ``experiments/<name>.csv``. ``--replace`` then
deletes the old files (and the ``*.log``, ``*.diff``, ``*.patch`` beside them) and moves the
new ones into ``--results``; without it they are written to ``--out`` only.
"""

from __future__ import annotations

import argparse
import csv
import re
import shutil
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

from benchmarks.harness import ID_COLUMNS, META_COLUMNS, REPO, RESULTS_DIR

PRODUCT = (
    "accuracy",
    "e2e_gpu",
    "large_families",
    "pairwise_cpu",
    "pairwise_gpu",
    "kmer_gpu",
    "stages",
    "alignment_hashes",
    "ab_cases",
    "ab_versions",
)
EXPERIMENTS = (
    "colscores_cpu",
    "famsa_probe",
    "library_precision",
    "linkage_gpu",
    "occupancy_floor",
    "probes",
    "refine_placement",
    "refine_rounds",
    "tree_source",
)
# file name prefixes of runs whose script is named otherwise
ALIASES = {"ab": "ab_cases"}
DATASETS = {
    "balibase3": "balibase3",
    "bb": "balibase3",
    "balifam100": "balifam100",
    "balifam1000": "balifam1000",
    "balifam10000": "balifam10000",
    "bf10k": "balifam10000",
    "homfam": "homfam",
}
MODES = ("fast", "default", "accurate", "auto")
DEVICE_TAGS = ("cpu", "gpu", "h100", "h200")
META = ("device", "cpu", "commit", "torch", "triton", "numba", "numpy", "python", "date")
# large_families' torchmsa tools: their mode (``benchmarks/large_families.py``)
LARGE_FAMILY_MODES = {
    "torchmsa-auto": "auto",
    "torchmsa-lcs": "default",
    "torchmsa-fast": "fast",
    "torchmsa-parttree": "fast",
}
# columns that later runs name otherwise
RENAME = {"provider": "tool"}
ITEM_SUFFIXES = ("-cases", "-evaluations", "-grid")
JUNK = ("*.log", "*.diff", "*.patch")
# legacy module constants that moved work around (ExecutionPolicy / MemoryBudget today)
POLICY_NAME = re.compile(r"CELLS|HOST|THREADS|BATCH|BYTES|ROWS")


def parse_header(md: Path) -> dict[str, str]:
    """The ``- key: value`` lines under a results file's title (``command`` unquoted)."""
    meta: dict[str, str] = {}
    if not md.is_file():
        return meta
    started = False
    for line in md.read_text().splitlines()[1:]:
        if line.startswith("- "):
            started = True
            key, sep, value = line[2:].partition(":")
            if sep and re.fullmatch(r"[a-z_]+", key):
                meta[key] = value.strip().strip("`").strip()
        elif started and not line.startswith("  "):
            break
    if "provenance" in meta:
        meta["note"] = meta.pop("provenance")
    return meta


def _option(command: str, name: str) -> list[str]:
    found = re.findall(rf"{name}[ =]+([^ `]+)", command)
    return [f.strip("'\"") for f in found]


def _commits(tokens: set[str]) -> set[str]:
    """Those tokens that name a commit of this repository."""
    hexes = sorted(t for t in tokens if re.fullmatch(r"[0-9a-f]{7,}", t))
    if not hexes:
        return set()
    proc = subprocess.run(
        ["git", "cat-file", "--batch-check"],
        input="\n".join(hexes) + "\n",
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    return {h for h, line in zip(hexes, proc.stdout.splitlines()) if "missing" not in line}


def benchmark_of(stem: str, meta: dict[str, str]) -> str:
    found = re.search(r"-m benchmarks\.(\w+)", meta.get("command", ""))
    if found and found.group(1) != "merge_results":
        return found.group(1)
    prefix = stem.split("-", 1)[0]
    return ALIASES.get(prefix, prefix)


def name_fields(stem: str, benchmark: str, commits: set[str]) -> dict[str, str]:
    """``dataset``, ``mode`` and the leftover ``variant`` of a results file's name."""
    tokens = stem.split("-")[1:]
    out: dict[str, str] = {}
    rest = []
    for tok in tokens:
        if tok in DATASETS and "dataset" not in out:
            out["dataset"] = DATASETS[tok]
        elif tok in MODES and "mode" not in out:
            out["mode"] = tok
        elif tok in DEVICE_TAGS or tok in commits or tok in ("cases", "evaluations", "grid"):
            continue
        elif tok == "balifam" and "dataset" not in out:  # balifam1000 and balifam10000
            continue
        elif re.fullmatch(r"s\d+of\d+|\d", tok):
            continue  # a shard, or a repetition's number: the run id keeps them apart
        else:
            rest.append(tok)
    if rest:
        out["variant"] = "-".join(rest)
    return out


def _legacy_settings(command: str) -> dict[str, str]:
    sets = [s.rstrip("`") for s in _option(command, "--set")]
    config = [s for s in sets if not POLICY_NAME.search(s.split("=")[0])]
    policy = [s for s in sets if POLICY_NAME.search(s.split("=")[0])]
    return {"config": ", ".join(config), "policy": ", ".join(policy)}


def _variant_settings(command: str) -> dict[str, str]:
    """``ab_cases --variant label:module.NAME=expr,...`` -> label: settings."""
    out = {}
    for spec in _option(command, "--variant"):
        label, _, body = spec.partition(":")
        out[label] = body.replace(",", ", ")
    return out


def _mode(row: dict, command: str, fields: dict, benchmark: str) -> str:
    if row.get("mode"):
        return row["mode"]
    tool = row.get("tool", "")
    if tool and not tool.startswith("torchmsa"):
        return ""
    if benchmark == "large_families" and tool in LARGE_FAMILY_MODES:
        return LARGE_FAMILY_MODES[tool]
    suffix = tool.removeprefix("torchmsa-")
    if suffix in MODES:
        return suffix
    given = _option(command, "--mode")
    if given and "," not in given[0]:
        return given[0]
    if "mode" in fields:
        return fields["mode"]
    return "default" if benchmark in ("accuracy", "e2e_gpu", "alignment_hashes", "ab_cases") else ""


def markdown_tables(md: Path) -> list[dict[str, str]]:
    """Every row of every markdown table in ``md``; ``table`` is the heading above it."""
    rows, heading, columns = [], "", None
    for line in md.read_text().splitlines():
        if line.startswith("#"):
            heading, columns = line.lstrip("#").strip(), None
        elif line.startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if columns is None:
                columns = cells
            elif not all(set(c) <= set("-: ") for c in cells):
                rows.append({"table": heading, **dict(zip(columns, cells))})
        else:
            columns = None
    return rows


def _stem_of(path: Path) -> str:
    stem = path.stem
    for suffix in ITEM_SUFFIXES:
        if stem.endswith(suffix):
            return stem[: -len(suffix)]
    return stem


def convert(results: Path) -> dict[str, list[dict[str, str]]]:
    """Rows of the tidy files, by benchmark (``experiments/<name>`` for experiments)."""
    csvs = sorted(results.glob("*.csv"))
    mds = sorted(results.glob("*.md"))
    stems = {p.stem for p in csvs}
    commits = _commits({t for p in csvs + mds for t in p.stem.split("-")})
    headers = {p.stem: parse_header(p) for p in mds}
    # merges of shards last, so that the shards' own rows are the ones kept
    csvs.sort(key=lambda p: "merged_shards" in headers.get(_stem_of(p), {}))
    out: dict[str, list[dict[str, str]]] = defaultdict(list)
    seen: set[tuple] = set()
    for path in csvs:
        stem = _stem_of(path)
        run = re.sub(r"-s\d+of\d+", "", stem)
        meta = headers.get(path.stem) or headers.get(stem, {})
        bench = benchmark_of(stem, meta)
        fields = name_fields(stem, bench, commits)
        command = meta.get("command", "")
        items = path.stem != stem
        has_items = any(f"{stem}{s}" in stems for s in ITEM_SUFFIXES)
        merged = "merged_shards" in meta
        scope = "summary" if (not items and has_items) or (merged and not items) else "case"
        settings = _legacy_settings(command)
        variants = _variant_settings(command)
        with open(path, newline="") as fh:
            for raw in csv.DictReader(fh):
                key = tuple(sorted((k, v) for k, v in raw.items() if k != "merged_shards"))
                if key in seen:
                    continue
                seen.add(key)
                row = {"run": run, "scope": scope}
                row.update({RENAME.get(k, k): v for k, v in raw.items()})
                for k, v in fields.items():
                    if k != "mode" and not row.get(k):
                        row[k] = v
                row["mode"] = _mode(raw, command, fields, bench)
                row["config"] = row.get("config") or settings["config"]
                row["policy"] = row.get("policy") or settings["policy"]
                if raw.get("variant") in variants:
                    row["policy"] = variants[raw["variant"]]
                for k in (*META, "command", "note"):
                    if not row.get(k) and meta.get(k):
                        row[k] = meta[k]
                row["source"] = path.name
                out[_target(bench)].append(row)
    for md in mds:
        if md.stem in stems or any(f"{md.stem}{s}" in stems for s in ITEM_SUFFIXES):
            continue
        meta = headers[md.stem]
        bench = benchmark_of(md.stem, meta)
        for raw in markdown_tables(md):
            row = {"run": md.stem, "scope": "case", **raw}
            for k in (*META, "command"):
                if meta.get(k):
                    row.setdefault(k, meta[k])
            row["source"] = md.name
            out[_target(bench)].append(row)
    return out


def _target(benchmark: str) -> str:
    return benchmark if benchmark in PRODUCT else f"experiments/{benchmark}"


def write(tables: dict[str, list[dict[str, str]]], out: Path) -> list[Path]:
    written = []
    for name, rows in sorted(tables.items()):
        cols = list(dict.fromkeys(k for r in rows for k in r))
        head = [c for c in ID_COLUMNS if c in cols]
        tail = [c for c in (*META_COLUMNS[:-1], "note", "source") if c in cols]
        middle = [c for c in cols if c not in head and c not in tail]
        # rows in date order (then file, then their order in it): appended runs come last
        rows = sorted(rows, key=lambda r: (r.get("date", ""), r.get("source", "")))
        path = out / f"{name}.csv"
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "w", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=head + middle + tail, lineterminator="\n")
            writer.writeheader()
            writer.writerows(rows)
        written.append(path)
    return written


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", type=Path, default=RESULTS_DIR)
    ap.add_argument("--out", type=Path, default=None, help="where to write (default: --results)")
    ap.add_argument(
        "--replace", action="store_true", help="delete the per-run files, keep the tidy ones"
    )
    args = ap.parse_args(argv)
    old = [p for p in args.results.iterdir() if p.is_file()]
    if not any(p.suffix in (".csv", ".md") for p in old):
        raise SystemExit(f"error: no result files in {args.results}")
    tables = convert(args.results)
    staging = args.out or args.results / ".tidy"
    if staging.exists():
        shutil.rmtree(staging)
    written = write(tables, staging)
    for path in written:
        with open(path, newline="") as fh:
            n = sum(1 for _ in fh) - 1
        print(f"{path.relative_to(staging)}: {n} rows")
    if args.replace:
        for p in old:
            p.unlink()
        for path in written:
            dest = args.results / path.relative_to(staging)
            dest.parent.mkdir(parents=True, exist_ok=True)
            path.replace(dest)
        shutil.rmtree(staging)
        print(f"replaced {len(old)} files in {args.results}")
    elif args.out is None:
        print(f"written to {staging}; --replace to swap them in")
    return 0


if __name__ == "__main__":
    sys.exit(main())
