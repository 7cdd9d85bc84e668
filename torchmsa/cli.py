"""The ``torchmsa`` command: ``align``, ``pairwise`` and ``score`` subcommands.

User errors print one line (``torchmsa: error: ...``) on stderr and exit with status 2; no
traceback.
"""

from __future__ import annotations

import argparse
import sys

from torchmsa.errors import ArgumentError, TorchMSAError

__all__ = ["main", "build_parser"]

EXAMPLES = """examples:
  torchmsa align seqs.fasta -o aln.fasta
  torchmsa align seqs.fasta.gz --format clustal --mode accurate -o -
  cat seqs.fasta | torchmsa align - --tree-out guide.nwk > aln.fasta
  torchmsa pairwise query.fasta targets.fasta --mode local
  torchmsa score test.fasta reference.fasta --core core.txt
"""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def _number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    return int(value) if value.is_integer() else value


def _add_scoring(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument(
        "--matrix",
        help=f"substitution matrix name, e.g. BLOSUM62, PAM250, NUC.4.4 "
        f"(default: per alphabet, {what})",
    )
    p.add_argument("--gap-open", type=_number, help="gap opening cost (a positive number)")
    p.add_argument("--gap-extend", type=_number, help="gap extension cost (<= gap open)")
    p.add_argument(
        "--seqtype",
        default="auto",
        choices=["auto", "protein", "dna", "rna"],
        help="sequence alphabet (default: detected)",
    )
    p.add_argument(
        "--device",
        default="auto",
        help="auto | cpu | cuda | cuda:N (default: auto = CUDA if available)",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="torchmsa",
        description="Multiple sequence alignment on CUDA GPUs (Triton) and CPUs.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    from torchmsa import __version__

    parser.add_argument("--version", action="version", version=f"torchmsa {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

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
        default="auto",
        choices=["auto", "fast", "default", "accurate"],
        help="fast: one progressive pass; default: two passes and light refinement "
        "(FFT-NS-2 style); accurate: local-alignment consistency and refinement (L-INS-i "
        "style); auto: accurate up to 200 sequences of up to 2,000 residues, else default "
        "up to 20,000 sequences, else fast",
    )
    p.add_argument(
        "--tree",
        default="auto",
        choices=["auto", "upgma", "upgma_mafft", "nj", "single", "lcs", "parttree"],
        help="guide tree method (lcs: single linkage on LCS distances, FAMSA's tree; auto: "
        "lcs above 500 sequences in default mode)",
    )
    p.add_argument("--tree-out", metavar="FILE", help="write the guide tree (Newick) here")
    p.add_argument("--query", type=int, default=0, help="query row for a3m output (default 0)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    p.add_argument(
        "-v", "--verbose", action="store_true", help="report the mode, device and time on stderr"
    )
    _add_scoring(p, "BLOSUM62 / NUC.4.4")
    p.set_defaults(func=_align)

    p = sub.add_parser(
        "pairwise",
        help="align pairs of sequences",
        description="Align the k-th sequence of A with the k-th of B, or one "
        "sequence with every sequence of the other file.",
    )
    p.add_argument("a", help="FASTA (or other) file of first sequences, '-' for stdin")
    p.add_argument("b", help="file of second sequences")
    p.add_argument("--mode", default="global", choices=["global", "local", "semiglobal"])
    p.add_argument("--score-only", action="store_true", help="scores without alignments")
    p.add_argument(
        "--format",
        default="tsv",
        choices=["tsv", "fasta"],
        help="tsv: one line per pair; fasta: the two gapped rows per pair",
    )
    p.add_argument("-o", "--output", default="-", help="output file (default: stdout)")
    _add_scoring(p, "BLOSUM62 / NUC.4.4, open 10, extend 1")
    p.set_defaults(func=_pairwise)

    p = sub.add_parser("score", help="score an alignment against a reference (SP and TC)")
    p.add_argument("test", help="alignment to score")
    p.add_argument("ref", help="reference alignment")
    p.add_argument(
        "--core", help="core-column mask: a file of one 0/1 line, one char per reference column"
    )
    p.set_defaults(func=_score)
    return parser


def _align(args) -> int:
    from torchmsa.io import guess_format
    from torchmsa.pipeline import align

    fmt = args.format
    if fmt is None:
        fmt = "fasta" if args.output == "-" else guess_format(args.output)
        fmt = fmt if fmt in ("fasta", "clustal", "stockholm", "phylip", "a3m") else "fasta"
    aln = align(
        args.input,
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
        _emit(aln.tree.newick() + "\n", args.tree_out)
    if args.output.endswith(".gz"):
        aln.write(args.output, fmt, query=args.query)
    else:
        _emit(text, args.output)
    if args.verbose:
        m = aln.metadata
        where = "" if m["computed_on"] == m["device"] else f" (computed on {m['computed_on']})"
        print(
            f"torchmsa: {len(aln)} sequences, {aln.width} columns, mode {m['mode']}, "
            f"device {m['device']}{where}, backend {m['backend']}, {m['seconds']:.2f} s",
            file=sys.stderr,
        )
    return 0


def _pairwise(args) -> int:
    from torchmsa.io import read_sequences
    from torchmsa.ops.pairwise import pairwise_align

    recs_a, recs_b = read_sequences(args.a), read_sequences(args.b)
    if len(recs_a) == 1 and len(recs_b) > 1:
        recs_a = recs_a * len(recs_b)
    elif len(recs_b) == 1 and len(recs_a) > 1:
        recs_b = recs_b * len(recs_a)
    elif len(recs_a) != len(recs_b):
        raise ArgumentError(
            f"{args.a} holds {len(recs_a)} sequences and {args.b} holds {len(recs_b)}; give equal "
            f"counts (pairs k-th with k-th) or one sequence in either file (one against all)"
        )
    results = pairwise_align(
        [r.seq for r in recs_a],
        [r.seq for r in recs_b],
        mode=args.mode,
        matrix=args.matrix,
        gap_open=args.gap_open,
        gap_extend=args.gap_extend,
        device=args.device,
        traceback=not args.score_only,
        seqtype=args.seqtype,
    )
    lines = []
    if args.format == "tsv":
        cols = ["a", "b", "score", "a_start", "a_end", "b_start", "b_end"]
        lines.append("\t".join(cols + ([] if args.score_only else ["aligned_a", "aligned_b"])))
        for ra, rb, res in zip(recs_a, recs_b, results):
            fields = [ra.name, rb.name, res.score, *res.a_range, *res.b_range]
            fields += [] if res.aligned is None else list(res.aligned)
            lines.append("\t".join("" if f is None else str(f) for f in fields))
    else:
        if args.score_only:
            raise ArgumentError("--format fasta needs alignments; drop --score-only or use tsv")
        for ra, rb, res in zip(recs_a, recs_b, results):
            lines.append(f">{ra.description} score={res.score}\n{res.aligned[0]}")
            lines.append(f">{rb.description} score={res.score}\n{res.aligned[1]}")
    _emit("\n".join(lines) + "\n", args.output)
    return 0


def _score(args) -> int:
    from torchmsa.metrics import score_alignment

    s = score_alignment(args.test, args.ref, core=args.core)
    print(f"SP={s.sp:.4f}\tTC={s.tc:.4f}")
    return 0


def _emit(text: str, target: str) -> None:
    if target == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    try:
        with open(target, "w") as fh:
            fh.write(text)
    except OSError as exc:
        raise ArgumentError(f"cannot write {target!r}: {exc.strerror or exc}") from None


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version and usage errors end here
        return exc.code if isinstance(exc.code, int) else 2
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        return args.func(args)
    except (TorchMSAError, ValueError) as exc:
        msg = " ".join(str(exc).split())
        print(f"torchmsa: error: {msg}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("torchmsa: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0


def _entry() -> None:
    sys.exit(main())
