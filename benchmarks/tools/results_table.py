"""RESULTS.md and README.md's results table, generated from the tidy results files.

    python -m benchmarks.tools.results_table [--results benchmarks/results] [--out RESULTS.md]
        [--readme README.md] [--check]

Reads the accuracy benchmarks' files (``accuracy``, ``e2e_gpu``, ``large_families``) and, per
reference set, keeps the latest run of each tool: its cases, failures, mean SP and TC over the
cases it aligned, summed wall time, threads, device, commit and date. A reference set is a
dataset and the cases a run covered, counted only when they are the whole dataset as that
benchmark has run it, or all of its cases of one prefix (BAliBASE's 218 full-length ``BB``
cases); partial runs (a shard not merged, a few cases) are left out. Rows run under settings
that can change an alignment (``config``) or from uncommitted code (``-dirty``) are left out
too. Shards of one run share its ``run`` id and count as one run.

RESULTS.md gets one table per benchmark and reference set. The block between
``<!-- results:begin -->`` and ``<!-- results:end -->`` in README.md becomes a short table: one
row per reference set and torchmsa mode, one column per tool family (torchmsa, MAFFT, FAMSA,
Kalign, Clustal Omega), each cell the latest figures; README.md is left alone when it has no
such block. ``--check`` writes nothing and exits 1 when either file would change.
"""

from __future__ import annotations

import argparse
import csv
import math
import re
import sys
import textwrap
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from benchmarks.harness import REPO, RESULTS_DIR

BENCHMARKS = ("accuracy", "e2e_gpu", "large_families")
README_BENCHMARKS = ("accuracy", "e2e_gpu")
BEGIN, END = "<!-- results:begin -->", "<!-- results:end -->"
DATASET_NAMES = {
    "balibase3": "BAliBASE 3",
    "balifam100": "balifam100",
    "balifam1000": "balifam1000",
    "balifam10000": "balifam10000",
    "homfam": "HomFam",
}
# README columns: tool family -> tools, in order of preference per torchmsa mode
FAMILIES = {
    "torchmsa": ("torchmsa-gpu", "torchmsa-{mode}", "torchmsa-auto", "torchmsa-cpu"),
    "MAFFT": ("mafft-auto", "mafft-fftns2", "mafft-parttree"),
    "FAMSA": ("famsa",),
    "Kalign": ("kalign",),
    "Clustal Omega": ("clustalo",),
}
MAFFT_ACCURATE = ("mafft-linsi", "mafft-auto")
PEER_LABEL = {
    "mafft-auto": "`--auto`",
    "mafft-linsi": "L-INS-i",
    "mafft-fftns2": "FFT-NS-2",
    "mafft-parttree": "`--parttree`",
}


@dataclass
class Result:
    """One tool's run on one reference set."""

    benchmark: str
    dataset: str
    cases: frozenset
    tool: str
    mode: str
    failures: int
    sp: float
    tc: float
    seconds: float
    threads: str
    device: str
    commit: str
    date: str
    run: str


def _num(text) -> float:
    try:
        return float(text)
    except (TypeError, ValueError):
        return math.nan


def _mean(values: list[float]) -> float:
    values = [v for v in values if not math.isnan(v)]
    return sum(values) / len(values) if values else math.nan


def _counted(row: dict) -> bool:
    return not row.get("config") and not row.get("commit", "").endswith("-dirty")


def results(rows_by_benchmark: dict[str, list[dict]]) -> list[Result]:
    """Every (benchmark, dataset, tool, mode, run) as a :class:`Result`, the last row of each
    case counting (rows in file order: a later row of a case replaces an earlier one)."""
    out = []
    for bench, rows in rows_by_benchmark.items():
        groups: dict[tuple, dict[str, dict]] = defaultdict(dict)
        walls: dict[tuple, float] = defaultdict(float)
        for row in rows:
            if not _counted(row) or not row.get("tool"):
                continue
            key = (row.get("dataset", ""), row["tool"], row.get("mode", ""), row.get("run", ""))
            if row.get("scope", "case") == "case":
                groups[key][row.get("case", "")] = row
            elif not math.isnan(_num(row.get("wall_s"))):
                walls[key] += _num(row["wall_s"])
        for key, by_case in groups.items():
            ok = [r for r in by_case.values() if not r.get("error")]
            seconds = sum(_num(r.get("seconds")) for r in ok) if ok else math.nan
            if math.isnan(seconds) and key in walls:
                seconds = walls[key]  # one call for every case (``torchmsa-gpu-batch``)
            last = max(by_case.values(), key=lambda r: r.get("date", ""))
            out.append(
                Result(
                    benchmark=bench,
                    dataset=key[0],
                    cases=frozenset(by_case),
                    tool=key[1],
                    mode=key[2],
                    failures=len(by_case) - len(ok),
                    sp=_mean([_num(r.get("sp")) for r in ok]),
                    tc=_mean([_num(r.get("tc")) for r in ok]),
                    seconds=seconds,
                    threads=last.get("threads", ""),
                    device=last.get("device", ""),
                    commit=last.get("commit", ""),
                    date=last.get("date", ""),
                    run=key[3],
                )
            )
    return out


def _prefix(case: str) -> str | None:
    found = re.fullmatch(r"([A-Z]+)\d+", case)
    return found.group(1) if found else None


def reference_set(result: Result, ran: frozenset, dataset: frozenset) -> str | None:
    """The label of ``result``'s cases when they make a reference set, else ``None``: all
    cases of the dataset with one name prefix (``BB``), or every case that its benchmark has
    run of the dataset (``ran``; ``dataset``: those that any benchmark has run)."""
    name = DATASET_NAMES.get(result.dataset, result.dataset)
    n = len(result.cases)
    unit = "cases" if result.dataset == "balibase3" else "families"
    mine = {_prefix(c) for c in result.cases}
    if len({_prefix(c) for c in dataset}) > 1 and len(mine) == 1 and None not in mine:
        (p,) = mine
        if result.cases == frozenset(c for c in dataset if _prefix(c) == p):
            return f"{name}, {n} {p} {unit}"
    if result.cases == ran:
        return f"{name}, {n} {unit}"
    return None


def latest(found: list[Result]) -> dict[tuple[str, str, str, str], Result]:
    """(benchmark, reference set, tool, mode) -> the latest :class:`Result`."""
    ran: dict[tuple[str, str], set] = defaultdict(set)
    dataset: dict[str, set] = defaultdict(set)
    for r in found:
        ran[r.benchmark, r.dataset] |= r.cases
        dataset[r.dataset] |= r.cases
    best: dict[tuple[str, str, str, str], Result] = {}
    for r in found:
        label = reference_set(
            r, frozenset(ran[r.benchmark, r.dataset]), frozenset(dataset[r.dataset])
        )
        if label is None:
            continue
        key = (r.benchmark, label, r.tool, r.mode)
        if key not in best or (r.date, r.run) > (best[key].date, best[key].run):
            best[key] = r
    return best


def _pct(x: float, digits: int = 2) -> str:
    return "-" if math.isnan(x) else f"{100 * x:.{digits}f}"


def _secs(x: float) -> str:
    return "-" if math.isnan(x) else f"{x:.1f}"


def results_md(best: dict) -> str:
    """RESULTS.md: one table per benchmark and reference set."""
    lines = [
        "# Results",
        "",
        "Generated by `python -m benchmarks.tools.results_table` from `benchmarks/results/"
        "*.csv`; do not edit by hand. For each benchmark and reference set, the latest run of "
        "each tool: SP and TC (%, mean over the cases it aligned, core columns, reference rows "
        "only), summed wall time of those cases, and where and when it ran. Runs under "
        "non-default alignment settings, from uncommitted code, or over part of a set are left "
        "out; every run is in the CSV files, `run` and `source` naming it.",
        "",
    ]
    sections: dict[tuple[str, str], list[Result]] = defaultdict(list)
    for (bench, label, _, _), r in best.items():
        sections[bench, label].append(r)
    order = {b: i for i, b in enumerate(BENCHMARKS)}
    names = list(DATASET_NAMES)

    def place(key):
        r = sections[key][0]
        where = names.index(r.dataset) if r.dataset in names else len(names)
        return order.get(key[0], 99), where, -len(r.cases), key[1]

    for bench, label in sorted(sections, key=place):
        rs = sorted(sections[bench, label], key=lambda r: -_num(r.sp) if r.sp == r.sp else 0)
        lines += [f"## {label} (`{bench}`)", ""]
        lines.append(
            "| tool | mode | cases | failed | SP | TC | time (s) | threads | device | commit "
            "| date |"
        )
        lines.append("|---|---|---|---|---|---|---|---|---|---|---|")
        for r in rs:
            lines.append(
                f"| {r.tool} | {r.mode or '-'} | {len(r.cases)} | {r.failures} | {_pct(r.sp)} "
                f"| {_pct(r.tc)} | {_secs(r.seconds)} | {r.threads or '-'} | {r.device} "
                f"| {r.commit} | {r.date[:10]} |"
            )
        lines.append("")
    return "\n".join(lines)


def _pick(best: dict, label: str, tools: tuple[str, ...], mode: str, torchmsa: bool):
    found = []
    for (bench, lab, tool, m), r in best.items():
        if bench not in README_BENCHMARKS or lab != label or tool not in tools:
            continue
        if torchmsa and m != mode:
            continue
        found.append((r.date, -tools.index(tool), r))
    return max(found, key=lambda x: x[:2])[2] if found else None


def readme_block(best: dict) -> str:
    """The README table: one row per reference set and torchmsa mode, a cell per tool family."""
    found = {}
    for (b, lab, t, m), r in best.items():
        if b in README_BENCHMARKS and t.startswith("torchmsa"):
            found[lab, m] = (list(DATASET_NAMES).index(r.dataset), len(r.cases), lab, m)
    rows = sorted(found, key=lambda k: (found[k][0], -found[k][1], found[k][2], found[k][3]))
    header = "| reference set (mode) | " + " | ".join(FAMILIES) + " |"
    lines = [header, "|" + "---|" * (len(FAMILIES) + 1)]
    for label, mode in rows:
        cells = [f"{label} (`{mode}`)"]
        for family, tools in FAMILIES.items():
            torchmsa = family == "torchmsa"
            tools = tuple(t.format(mode=mode) for t in tools)
            if family == "MAFFT" and mode == "accurate":
                tools = MAFFT_ACCURATE
            r = _pick(best, label, tools, mode, torchmsa)
            if r is None:
                cells.append("")
                continue
            text = f"{_pct(r.sp, 1)} / {_pct(r.tc, 1)}"
            if not math.isnan(r.seconds):
                text += f", {_secs(r.seconds)} s"
            if r.failures:
                text += f", {r.failures} of {len(r.cases)} failed"
            if r.tool in PEER_LABEL:
                text += f" ({PEER_LABEL[r.tool]})"
            cells.append(text)
        lines.append("| " + " | ".join(cells) + " |")
    note = (
        "SP / TC (%) and summed wall time of each tool's latest run on each set (torchmsa on "
        "the GPU where it ran there; peers on the CPU of the same machine). Runs differ in "
        "device, threads and date: [RESULTS.md](RESULTS.md) gives them, and every tool."
    )
    return "\n".join(lines) + "\n\n" + textwrap.fill(note, 95)


def load(results_dir: Path) -> dict[str, list[dict]]:
    out = {}
    for bench in BENCHMARKS:
        path = results_dir / f"{bench}.csv"
        if path.is_file():
            with open(path, newline="") as fh:
                out[bench] = list(csv.DictReader(fh))
    return out


def replace_block(text: str, block: str) -> str | None:
    """``text`` with the marked block replaced, or ``None`` when it has no markers."""
    start, end = text.find(BEGIN), text.find(END)
    if start < 0 or end < start:
        return None
    return text[: start + len(BEGIN)] + "\n" + block.rstrip() + "\n" + text[end:]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", type=Path, default=RESULTS_DIR)
    ap.add_argument("--out", type=Path, default=REPO / "RESULTS.md")
    ap.add_argument("--readme", type=Path, default=REPO / "README.md")
    ap.add_argument("--check", action="store_true", help="exit 1 if a file is out of date")
    args = ap.parse_args(argv)
    rows = load(args.results)
    if not rows:
        raise SystemExit(f"error: none of {', '.join(BENCHMARKS)} has a CSV in {args.results}")
    best = latest(results(rows))
    updates = {args.out: results_md(best)}
    if args.readme.is_file():
        new = replace_block(args.readme.read_text(), readme_block(best))
        if new is not None:
            updates[args.readme] = new
        else:
            print(f"{args.readme} has no {BEGIN} block; left alone")
    stale = [p for p, text in updates.items() if not p.is_file() or p.read_text() != text]
    if args.check:
        for p in stale:
            print(f"{p} is out of date; run python -m benchmarks.tools.results_table")
        return 1 if stale else 0
    for p in stale:
        p.write_text(updates[p])
        print(f"wrote {p}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
