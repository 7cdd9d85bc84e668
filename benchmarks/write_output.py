"""Writing a large alignment as FASTA, as ``torchmsa align`` does: the file's bytes made from
the codes, then written whole (a temporary file renamed), either through a ``bytes`` object
(``fasta_bytes``) or straight from the ``uint8`` array they are filled into
(``fasta_array``), alternated in one process (each first in turn).

    python -m benchmarks.write_output [--n 1000000] [--length 250] [--width 2001]
        [--data DIR] [--repeat 3] [--out DIR]

The rows are ``benchmarks.scale``'s family (``family_files(n, length, 0, data)``), each row's
residues first and gaps after, ``--width`` columns. Each call writes a new file (the last
one removed untimed). Appends one row per variant to ``results/write_output.csv``:
``format_s`` (the bytes made), ``write_s`` (the file written), ``total_s`` (medians),
``extra_rss_mb`` (the largest growth of the peak resident set over a call,
``/proc/self/clear_refs``), ``bytes``, and the run's metadata. The files must be equal.
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import sys
import time
from pathlib import Path

from benchmarks.harness import append_rows, markdown_table, run_metadata
from benchmarks.long_local import PeakRSS
from benchmarks.scale import family_files


def alignment(n: int, length: int, width: int, data: Path):
    """The family's rows as an alignment ``width`` columns wide, residues first."""
    import torch

    from torchmsa import Alignment
    from torchmsa.sequences import SequenceBatch

    b = SequenceBatch.from_input(str(family_files(n, length, 0, data)["input"]))
    codes = torch.nn.functional.pad(
        b.codes, (0, width - b.codes.shape[1]), value=b.alphabet.gap_code
    )
    return Alignment(b.names, b.descriptions, b.residues, codes, b.alphabet)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--length", type=int, default=250)
    ap.add_argument("--width", type=int, default=2001)
    ap.add_argument("--data", type=Path, default=Path("/tmp/torchmsa-scale"))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    from torchmsa.cli.common import emit

    meta = run_metadata("cpu", argv)
    aln = alignment(args.n, args.length, args.width, args.data)
    made = {"bytes": aln.fasta_bytes, "array": aln.fasta_array}
    times = {k: {"format_s": [], "write_s": [], "total_s": [], "extra_rss_mb": []} for k in made}
    digests, size = {}, 0
    for rep in range(args.repeat):
        for name, make in list(made.items())[:: 1 if rep % 2 == 0 else -1]:  # either first
            target = args.data / f"write-output-{args.n}-{name}.fasta"
            target.unlink(missing_ok=True)  # a new file each time, none replaced
            with PeakRSS() as peak:
                t0 = time.perf_counter()
                data = make()
                t1 = time.perf_counter()
                emit(data, str(target))
                t2 = time.perf_counter()
            size = len(data)
            del data
            for key, value in (("format_s", t1 - t0), ("write_s", t2 - t1), ("total_s", t2 - t0)):
                times[name][key].append(value)
            times[name]["extra_rss_mb"].append(peak.extra_mb)
            digests.setdefault(name, hashlib.sha1(target.read_bytes()).hexdigest())
            target.unlink()
    if len(set(digests.values())) != 1:
        print("the two variants wrote different files", file=sys.stderr)
        return 1
    rows = []
    for name, t in times.items():
        row = {"n": args.n, "width": args.width, "variant": name, "repeats": args.repeat}
        row.update({k: statistics.median(v) for k, v in t.items() if k != "extra_rss_mb"})
        row.update(extra_rss_mb=max(t["extra_rss_mb"]), bytes=size)
        rows.append(row)
    append_rows("write_output", rows, meta, args.out)
    print(markdown_table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
