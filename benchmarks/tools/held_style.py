"""Held-out-style small families from a large-family set: each case keeps its reference's
sequences and the input's first others up to ``--size`` sequences, so the reference still
scores it (issue #36: "50 sequences of 200-800 aa").

    python -m benchmarks.tools.held_style --dataset DIR --out DIR [--size 50] [--cases 15]
        [--min-len 200] [--max-len 800]

Families whose median input length lies outside ``--min-len .. --max-len``, or whose reference
holds more than ``--size`` sequences, are skipped; of the
rest, ``--cases`` evenly spaced in name order are written as ``<case>.in.fasta``,
``<case>.ref.fasta`` and ``<case>.core.txt`` (where the set has one).
"""

from __future__ import annotations

import argparse
import gzip
import shutil
import statistics
import sys
from pathlib import Path


def _read(path: Path) -> list[tuple[str, str]]:
    opener = gzip.open if path.suffix == ".gz" else open
    records, name, parts = [], None, []
    with opener(path, "rt") as fh:
        for line in fh:
            line = line.strip()
            if line.startswith(">"):
                if name is not None:
                    records.append((name, "".join(parts)))
                name, parts = line[1:].split()[0], []
            elif line:
                parts.append(line)
    if name is not None:
        records.append((name, "".join(parts)))
    return records


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dataset", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--size", type=int, default=50)
    ap.add_argument("--cases", type=int, default=15)
    ap.add_argument("--min-len", type=int, default=200)
    ap.add_argument("--max-len", type=int, default=800)
    args = ap.parse_args(argv)
    src, out = Path(args.dataset), Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    picked = []
    for inp in sorted(src.glob("*.in.fasta*")):
        case = inp.name.split(".in.fasta")[0]
        records = _read(inp)
        named = {n for n, _ in _read(src / f"{case}.ref.fasta")}
        if len(named) > args.size:
            continue  # its reference alone is larger than a case
        if args.min_len <= statistics.median(len(s) for _, s in records) <= args.max_len:
            picked.append((case, records))
    if not picked:
        print("no family of that length", file=sys.stderr)
        return 1
    step = max(1, len(picked) / args.cases)
    chosen = [picked[int(k * step)] for k in range(min(args.cases, len(picked)))]
    for case, records in chosen:
        ref = src / f"{case}.ref.fasta"
        named = {n for n, _ in _read(ref)}
        keep = [r for r in records if r[0] in named]
        keep += [r for r in records if r[0] not in named][: max(0, args.size - len(keep))]
        order = {n: k for k, (n, _) in enumerate(records)}
        keep.sort(key=lambda r: order[r[0]])
        with open(out / f"{case}.in.fasta", "w") as fh:
            fh.writelines(f">{n}\n{s}\n" for n, s in keep)
        shutil.copy(ref, out / f"{case}.ref.fasta")
        core = src / f"{case}.core.txt"
        if core.exists():
            shutil.copy(core, out / f"{case}.core.txt")
    print(f"{len(chosen)} families of {args.size} sequences in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
