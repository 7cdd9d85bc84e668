"""``torchmsa pairwise``: pairs of sequences aligned, global, local or semiglobal."""

from __future__ import annotations

from torchmsa.cli.common import add_limits, add_scoring, emit, limits
from torchmsa.errors import ArgumentError

__all__ = ["add_parser", "run"]


def add_parser(sub) -> None:
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
    add_scoring(p, "BLOSUM62 / NUC.4.4, open 10, extend 1")
    add_limits(p)
    p.set_defaults(func=run)


def run(args) -> int:
    from torchmsa.io import read_sequences
    from torchmsa.ops.pairwise import pairwise_align

    bounds = limits(args)
    recs_a, recs_b = read_sequences(args.a, limits=bounds), read_sequences(args.b, limits=bounds)
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
    emit("\n".join(lines) + "\n", args.output)
    return 0
