"""``torchmsa merge``: two or more alignments aligned to each other as profiles, each one's
columns kept as blocks; and the output, threading and timing options that ``align``'s
``--add``, ``--merge`` and ``--profile1/--profile2`` share with it."""

from __future__ import annotations

import argparse
import sys

from torchmsa.cli.common import add_scoring, emit
from torchmsa.errors import ArgumentError

__all__ = [
    "add_parser",
    "run",
    "add_output",
    "add_run_options",
    "merge_files",
    "policy_of",
    "progress_of",
    "summary",
    "timed",
    "write",
]

FORMATS = ["fasta", "clustal", "stockholm", "phylip", "a3m"]


def add_parser(sub) -> None:
    p = sub.add_parser(
        "merge",
        help="align alignments to each other (profile-profile), keeping their columns",
        description="Merge two or more alignments: each is aligned to the ones before it as a "
        "profile, and its columns stay together (columns that are gaps in every row of their "
        "alignment are dropped). Rows come out file after file. The same as "
        "'torchmsa align --profile1 A --profile2 B' (Clustal Omega) or "
        "'torchmsa align --merge B A' (MAFFT-style).",
        epilog="example: torchmsa merge a.aln b.aln -o merged.fasta",
    )
    p.add_argument(
        "inputs",
        nargs="+",
        metavar="ALIGNMENT",
        help="aligned files (FASTA, A2M/A3M, Stockholm, Clustal, PHYLIP); at least two",
    )
    add_output(p)
    add_run_options(p)
    add_scoring(p, "BLOSUM62 / NUC.4.4")
    p.set_defaults(func=run)


def add_output(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "-o",
        "--output",
        default="-",
        help="output file, '-' for stdout (default); a .gz name compresses",
    )
    p.add_argument(
        "--format",
        default=None,
        choices=FORMATS,
        help="output format (default: from the output name, else fasta)",
    )
    p.add_argument("--query", type=int, default=0, help="query row for a3m output (default 0)")


def add_run_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--threads",
        type=int,
        metavar="N",
        help="CPU threads for numba and torch (default: as many as they use by default)",
    )
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    p.add_argument(
        "--progress",
        action="store_true",
        help="draw a progress bar on stderr even when it is not a terminal (default: on a "
        "terminal, once the work has run for a second)",
    )
    p.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="report the mode, device and time, and the seconds of every stage, on stderr",
    )


def policy_of(args):
    """The :class:`~torchmsa.ExecutionPolicy` of ``--threads`` (``None`` for the default)."""
    from torchmsa.config import ExecutionPolicy

    if args.threads is None:
        return None
    if args.threads < 1:
        raise ArgumentError(f"--threads {args.threads}: give 1 or more threads")
    return ExecutionPolicy(threads=args.threads)


def progress_of(args) -> bool:
    return bool(args.progress or (not args.quiet and sys.stderr.isatty()))


def timed(args, call):
    """``call()``'s result; with ``-v`` the seconds of every stage go to stderr after it."""
    if not args.verbose:
        return call()
    from torchmsa.pipeline.progress import StageTimes

    with StageTimes() as times:
        out = call()
    sys.stderr.write(times.report())
    return out


def write(aln, args) -> None:
    """Writes ``aln`` to ``args.output`` in ``args.format`` (or the output name's format)."""
    from torchmsa.io import output_format

    fmt = args.format or output_format(args.output)
    if args.output.endswith(".gz"):
        aln.write(args.output, fmt, query=args.query)  # FASTA: bytes straight from the codes
    elif fmt == "fasta":  # bytes straight from the codes (no bytes object): 10^6 rows in seconds
        emit(aln.fasta_array(), args.output)
    else:
        emit(aln.format(fmt, query=args.query), args.output)
    summary(aln, args)


def summary(aln, args) -> None:
    """With ``-v``: one line on what was aligned, how and in how long."""
    if args.verbose:
        m = aln.metadata
        print(
            f"torchmsa: {len(aln)} sequences, {aln.width} columns, mode {m['mode']}, device "
            f"{m['device']}, backend {m['backend']}, {m['seconds']:.2f} s",
            file=sys.stderr,
        )


def run(args) -> int:
    if len(args.inputs) < 2:
        raise ArgumentError("merge needs at least two alignments (torchmsa merge A.aln B.aln)")
    aln = merge_files(args.inputs, args)
    write(aln, args)
    return 0


def merge_files(paths: list, args):
    """The alignments of ``paths`` merged left to right."""
    from torchmsa.addmerge import merge

    def call():
        out = paths[0]
        for other in paths[1:]:
            out = merge(
                out,
                other,
                device=args.device,
                policy=policy_of(args),
                matrix=args.matrix,
                gap_open=args.gap_open,
                gap_extend=args.gap_extend,
                seqtype=args.seqtype,
            )
        return out

    return timed(args, call)
