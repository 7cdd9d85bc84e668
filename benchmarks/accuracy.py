"""Alignment accuracy (SP and TC against reference alignments) of torchmsa and its peers.

    python -m benchmarks.accuracy --dataset balibase3 [--cases BB,RV20] [--limit N]
        [--tools torchmsa-default,mafft-linsi,...] [--mode default,fast] [--threads T]
        [--device auto] [--timeout S] [--config NAME=VALUE] [--policy NAME=VALUE] [--out DIR]

Runs every tool on every selected case of ``shared/benchmarks/<dataset>``, one tool at a time,
each with ``--threads`` threads, and scores the result (``benchmarks.harness.score``: the test
alignment restricted to the reference's rows, SP and TC over the ``core.txt`` columns when the
case has them). A tool failing on a case is recorded and the run goes on. ``--config`` and
``--policy`` (repeatable) run torchmsa under changed settings (``consistency.weight=16``).

Appends one row per tool and case to ``accuracy.csv`` in ``--out`` (``benchmarks/results``)
and prints SP, TC and time per tool and reference set (means over the cases a tool aligned).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from pathlib import Path

from benchmarks.harness import (
    DATA_DIR,
    RESULTS_DIR,
    Timer,
    add_settings_options,
    align_kwargs,
    append_rows,
    case_files,
    load_cases,
    markdown_table,
    parsed_settings,
    run_metadata,
    score,
    select_cases,
    set_threads,
    settings_columns,
)
from benchmarks.peers import (
    DEFAULT_PEERS,
    PEERS,
    PeerFailed,
    PeerNotInstalled,
    peer_status,
    run_peer,
)
from torchmsa.errors import TorchMSAError

TORCHMSA_MODES = ("fast", "default", "accurate", "auto")


class TorchMSARunner:
    """``torchmsa.align`` in one mode, with its thread count set and a warm-up before timing."""

    def __init__(self, mode: str, device: str, threads: int, warmup: Path | None, kwargs: dict):
        import torch

        import torchmsa

        set_threads(threads)
        self.align, self.mode, self.device, self.kwargs = torchmsa.align, mode, device, kwargs
        self.cuda = device != "cpu" and torch.cuda.is_available()
        if warmup is not None:
            # compiles numba / Triton kernels so the first timed case does not pay for it
            try:
                self.align(str(warmup), mode=mode, device=device, **kwargs)
            except Exception as exc:  # the cases themselves will record the failure
                print(
                    f"torchmsa-{mode} warm-up failed: {type(exc).__name__}: {exc}", file=sys.stderr
                )

    def __call__(self, in_path: Path) -> tuple[list[str], list[str], float]:
        with Timer(cuda=self.cuda) as t:
            aln = self.align(str(in_path), mode=self.mode, device=self.device, **self.kwargs)
        return list(aln.names), list(aln.rows), t.seconds


def _size(path: Path) -> int:
    return path.stat().st_size


def run_tool(tool: str, cases: list[dict], dataset_dir: Path, args, kwargs: dict) -> list[dict]:
    """One row per case for ``tool``; errors are recorded in the ``error`` field."""
    rows: list[dict] = []
    runner = None
    if tool.startswith("torchmsa-"):
        warm = None
        if args.warmup and cases:
            # the smallest input of the run: enough to compile every kernel, cheap to align
            warm = min((case_files(dataset_dir, c["case"])[0] for c in cases), key=_size)
        try:
            mode = tool.removeprefix("torchmsa-")
            runner = TorchMSARunner(mode, args.device, args.threads, warm, kwargs)
        except PeerNotInstalled as exc:
            print(f"skipping {tool}: {exc}", file=sys.stderr)
            return rows
    for case in cases:
        inp, ref, core = case_files(dataset_dir, case["case"])
        row = {
            "dataset": args.dataset,
            "case": case["case"],
            "ref_set": case["ref_set"],
            "tool": tool,
            "mode": tool.removeprefix("torchmsa-") if runner is not None else "",
            "n_seqs": case.get("nseq") or case.get("nseq_in", ""),
            "threads": args.threads,
            "sp": math.nan,
            "tc": math.nan,
            "seconds": math.nan,
            "error": "",
        }
        try:
            if runner is not None:
                names, aligned, seconds = runner(inp)
            else:
                names, aligned, seconds = run_peer(tool, inp, args.threads, args.timeout)
            row["seconds"] = round(seconds, 4)
            sp, tc = score(names, aligned, ref, core)
            row.update(sp=round(sp, 6), tc=round(tc, 6))
        except PeerNotInstalled as exc:
            print(f"skipping {tool}: {exc}", file=sys.stderr)
            return []
        except (PeerFailed, TorchMSAError) as exc:
            row["error"] = str(exc)[:300]
        except Exception as exc:  # a crash in one tool on one case must not end the run
            row["error"] = f"{type(exc).__name__}: {exc}"[:300]
        rows.append(row)
        status = row["error"] or f"SP {row['sp']:.3f}  TC {row['tc']:.3f}"
        print(f"{tool:16s} {case['case']:12s} {row['seconds']:9.2f} s  {status}", flush=True)
    return rows


def summarise(rows: list[dict], ref_sets: list[str]) -> list[dict]:
    """Tidy summary: one row per (tool, reference set) and per tool over all cases."""
    out = []
    for tool in dict.fromkeys(r["tool"] for r in rows):
        mine = [r for r in rows if r["tool"] == tool]
        for group in [*ref_sets, "total"]:
            part = [r for r in mine if group == "total" or r["ref_set"] == group]
            ok = [r for r in part if not r["error"]]
            out.append(
                {
                    "tool": tool,
                    "ref_set": group,
                    "cases": len(part),
                    "failed": len(part) - len(ok),
                    "sp": _mean([r["sp"] for r in ok]),
                    "tc": _mean([r["tc"] for r in ok]),
                    "seconds": round(sum(r["seconds"] for r in ok), 3),
                }
            )
    return out


def _mean(values: list[float]) -> float:
    values = [v for v in values if not math.isnan(v)]
    return round(sum(values) / len(values), 6) if values else math.nan


def _pct(value: float) -> str:
    return "-" if math.isnan(value) else f"{100 * value:.1f}"


def wide_table(summary: list[dict], ref_sets: list[str]) -> list[dict]:
    """One markdown row per tool: ``SP / TC`` (percent) per reference set, total, time."""
    table = []
    for tool in dict.fromkeys(r["tool"] for r in summary):
        mine = {r["ref_set"]: r for r in summary if r["tool"] == tool}
        row = {"tool": tool}
        if len(ref_sets) > 1:
            for group in ref_sets:
                row[f"{group} SP / TC"] = f"{_pct(mine[group]['sp'])} / {_pct(mine[group]['tc'])}"
        total = mine["total"]
        row.update(
            {
                "SP": _pct(total["sp"]),
                "TC": _pct(total["tc"]),
                "time (s)": f"{total['seconds']:.2f}",
                "cases": total["cases"],
                "failed": total["failed"],
            }
        )
        table.append(row)
    return table


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks.accuracy", description=__doc__.split("\n")[0]
    )
    p.add_argument(
        "--dataset", required=True, help="folder name under the data root, e.g. balibase3"
    )
    p.add_argument("--data", type=Path, default=DATA_DIR, help=f"data root (default {DATA_DIR})")
    p.add_argument(
        "--cases",
        default="",
        help="comma list of case names, reference sets (RV11) or name prefixes (BB: full-length "
        "BAliBASE, BBS: truncated)",
    )
    p.add_argument("--limit", type=int, default=None, help="at most N cases, evenly spaced")
    p.add_argument(
        "--tools",
        default="",
        help=f"comma list; default torchmsa-<mode> for each --mode, then {','.join(DEFAULT_PEERS)}"
        f" (also: {','.join(sorted(set(PEERS) - set(DEFAULT_PEERS)))})",
    )
    p.add_argument(
        "--mode", default="default", help=f"torchmsa modes for the default tools {TORCHMSA_MODES}"
    )
    p.add_argument(
        "--threads", type=int, default=os.cpu_count() or 1, help="threads for every tool"
    )
    p.add_argument("--device", default="auto", help="torchmsa device (auto, cpu, cuda, cuda:N)")
    p.add_argument(
        "--timeout", type=float, default=None, help="seconds per peer run before it is killed"
    )
    p.add_argument(
        "--no-warmup", dest="warmup", action="store_false", help="do not warm torchmsa up"
    )
    p.add_argument(
        "--out", type=Path, default=RESULTS_DIR, help=f"output folder (default {RESULTS_DIR})"
    )
    add_settings_options(p)
    args = p.parse_args(argv)
    args.settings = parsed_settings(p, args)
    modes = [m for m in args.mode.split(",") if m]
    bad = [m for m in modes if m not in TORCHMSA_MODES]
    if bad:
        p.error(f"unknown --mode {bad}; choose from {TORCHMSA_MODES}")
    tools = [t for t in args.tools.split(",") if t]
    if not tools:
        tools = [f"torchmsa-{m}" for m in modes] + DEFAULT_PEERS
    unknown = [
        t for t in tools if t not in PEERS and t.removeprefix("torchmsa-") not in TORCHMSA_MODES
    ]
    if unknown:
        p.error(f"unknown tools {unknown}; choose from torchmsa-<mode> and {sorted(PEERS)}")
    args.tool_list = tools
    if args.threads < 1:
        p.error("--threads must be at least 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    dataset_dir = args.data / args.dataset
    cases = select_cases(
        load_cases(dataset_dir), [t for t in args.cases.split(",") if t], args.limit
    )
    if not cases:
        sys.exit(f"error: no case of {args.dataset} matches --cases {args.cases!r}")
    ref_sets = list(dict.fromkeys(c["ref_set"] for c in cases))
    status = peer_status()
    meta = run_metadata(None if args.device == "auto" else args.device)
    settings = settings_columns(*args.settings)
    rows: list[dict] = []
    for tool in args.tool_list:
        mine = run_tool(tool, cases, dataset_dir, args, align_kwargs(*args.settings))
        for row in mine:
            row.update(settings if tool.startswith("torchmsa-") else {})
            row["tool_version"] = status.get(tool, "")
        # after every tool, so a run cut short keeps what it finished
        path = append_rows("accuracy", mine, meta, args.out)
        rows += mine
    if not rows:
        sys.exit("error: no tool could run; see the messages above")
    print()
    print(markdown_table(wide_table(summarise(rows, ref_sets), ref_sets)))
    print(f"appended {len(rows)} rows to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
