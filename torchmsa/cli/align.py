"""``torchmsa align``: a multiple sequence alignment of a file's sequences."""

from __future__ import annotations

import sys

from torchmsa.cli.common import add_scoring, emit
from torchmsa.errors import ArgumentError

__all__ = ["add_parser", "run"]


def add_parser(sub) -> None:
    p = sub.add_parser(
        "align",
        help="align many sequences (multiple sequence alignment)",
        description="Align the sequences of a file; rows come out in input order.",
    )
    p.add_argument(
        "input", help="sequence file (FASTA, .gz, A2M/A3M, Stockholm, Clustal), '-' for stdin"
    )
    p.add_argument(
        "-o",
        "--output",
        default="-",
        help="output file, '-' for stdout (default); a .gz name compresses",
    )
    p.add_argument(
        "--format",
        default=None,
        choices=["fasta", "clustal", "stockholm", "phylip", "a3m"],
        help="output format (default: from the output name, else fasta)",
    )
    p.add_argument(
        "--mode",
        default=None,
        choices=["auto", "fast", "default", "accurate"],
        help="fast: one progressive pass; default: two passes and light refinement "
        "(FFT-NS-2 style); accurate: local-alignment consistency and refinement (L-INS-i "
        "style); auto: accurate up to 200 sequences of up to 2,000 residues, else default "
        "up to 20,000 sequences, else fast (default: auto)",
    )
    p.add_argument(
        "--tree",
        default=None,
        choices=["auto", "upgma", "upgma_mafft", "nj", "single", "lcs", "parttree"],
        help="guide tree method (lcs: single linkage on LCS distances, FAMSA's tree; auto: "
        "lcs above 500 sequences in default mode; default: auto)",
    )
    p.add_argument(
        "--config",
        metavar="NAME=VALUE",
        action="append",
        default=[],
        help="set a field of torchmsa.AlignConfig, e.g. consistency.weight=16 or "
        "scoring.offset=1.5 (repeatable; recorded in the alignment's metadata)",
    )
    p.add_argument("--tree-out", metavar="FILE", help="write the guide tree (Newick) here")
    p.add_argument("--query", type=int, default=0, help="query row for a3m output (default 0)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    p.add_argument(
        "-v", "--verbose", action="store_true", help="report the mode, device and time on stderr"
    )
    add_scoring(p, "BLOSUM62 / NUC.4.4")
    p.set_defaults(func=run)


def run(args) -> int:
    from torchmsa.config import AlignConfig, with_overrides
    from torchmsa.io import guess_format
    from torchmsa.pipeline import align

    config = with_overrides(AlignConfig(), args.config) if args.config else None
    fmt = args.format
    if fmt is None:
        fmt = "fasta" if args.output == "-" else guess_format(args.output)
        fmt = fmt if fmt in ("fasta", "clustal", "stockholm", "phylip", "a3m") else "fasta"
    aln = align(
        args.input,
        config=config,
        device=args.device,
        mode=args.mode,
        matrix=args.matrix,
        gap_open=args.gap_open,
        gap_extend=args.gap_extend,
        tree=args.tree,
        seqtype=args.seqtype,
        progress=not args.quiet and sys.stderr.isatty(),
    )
    text = aln.format(fmt, query=args.query)
    if args.tree_out:
        if aln.tree is None:
            raise ArgumentError("--tree-out: a single sequence has no guide tree")
        emit(aln.tree.newick() + "\n", args.tree_out)
    if args.output.endswith(".gz"):
        aln.write(args.output, fmt, query=args.query)
    else:
        emit(text, args.output)
    if args.verbose:
        m = aln.metadata
        where = "" if m["computed_on"] == m["device"] else f" (computed on {m['computed_on']})"
        settings = f", config {m['config']}" if m["config"] else ""
        print(
            f"torchmsa: {len(aln)} sequences, {aln.width} columns, mode {m['mode']}, "
            f"device {m['device']}{where}, backend {m['backend']}, {m['seconds']:.2f} s"
            f"{settings}",
            file=sys.stderr,
        )
    return 0
