"""Reading a large FASTA input: the text (gzip undone, decoded) and the records parsed from
it, in this process, for the general split and for files of one header and one sequence line
per record (the two-line split of ``torchmsa/io/read.py``), alternated.

    python -m benchmarks.read_input [--n 1000000] [--length 250] [--data DIR] [--repeat 3]
        [--out DIR]

The family is ``benchmarks.scale``'s evolved one (``family_files(n, length, 0, data)``,
gzipped FASTA, two lines a record). Each repeat times ``read_text`` once and ``parse`` once
per split, the two splits in turn; the records must be equal. Appends one row per split to
``results/read_input.csv``: ``read_text_s`` and ``parse_s`` (medians), ``repeats``,
``records``, and the run's metadata.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from benchmarks.harness import append_rows, markdown_table, run_metadata
from benchmarks.scale import family_files


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--length", type=int, default=250)
    ap.add_argument("--data", type=Path, default=Path("/tmp/torchmsa-scale"))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    from torchmsa.io import read as tread
    from torchmsa.io.sources import InputLimits, read_text

    meta = run_metadata("cpu", argv)
    path = family_files(args.n, args.length, 0, args.data)["input"]
    two_line = tread._two_line_records
    splits = {"general": lambda text, headers=None: (None, None), "two-line": two_line}
    times: dict[str, list[float]] = {k: [] for k in splits}
    reads: list[float] = []
    counts = set()
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        label, text = read_text(str(path), InputLimits())
        reads.append(time.perf_counter() - t0)
        got = []
        for name, split in splits.items():
            tread._two_line_records = split
            try:
                t0 = time.perf_counter()
                records = tread.parse(text, "fasta", label, 1 << 62)[0]
                times[name].append(time.perf_counter() - t0)
            finally:
                tread._two_line_records = two_line
            got.append(records)
            counts.add(len(records))
        if got[0] != got[1]:
            print("the two splits read different records", file=sys.stderr)
            return 1
        del got, records, text
    rows = [
        {
            "n": args.n,
            "split": name,
            "records": next(iter(counts)) if len(counts) == 1 else "",
            "repeats": args.repeat,
            "read_text_s": statistics.median(reads),
            "parse_s": statistics.median(t),
        }
        for name, t in times.items()
    ]
    append_rows("read_input", rows, meta, args.out)
    print(markdown_table(rows, ["n", "split", "records", "read_text_s", "parse_s"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
