"""``torchmsa local``: the K best local alignments (Waterman-Eggert) of every query record in
every subject record, for subjects of up to 10^8 residues and more.

Output coordinates are 1-based and inclusive, as BLAST writes them: ``qstart..qend`` and
``sstart..send`` are the first and last aligned residues (gap characters of the input are not
counted).

Under ``torchrun`` with several ranks (``--distributed auto``, the default), each subject's
strips are shared between the ranks, one GPU each (decision 0059); rank 0 writes the output,
which is the output of one process, and every rank logs its share.
"""

from __future__ import annotations

from torchmsa.cli.common import add_distributed, add_limits, add_scoring, emit, limits

__all__ = ["add_parser", "run"]

COLUMNS = ["query", "subject", "rank", "score", "qstart", "qend", "sstart", "send"]


def add_parser(sub) -> None:
    p = sub.add_parser(
        "local",
        help="the K best local alignments of queries in long subjects",
        description="The K best local alignments (Waterman-Eggert: each one avoids the residue "
        "pairs of the ones before) of every query record in every subject record, exact, in "
        "bounded memory. Coordinates are 1-based and inclusive.",
    )
    p.add_argument("query", help="FASTA (plain or .gz) file of queries, '-' for stdin")
    p.add_argument("subject", help="FASTA (plain or .gz) file of subjects")
    p.add_argument("-k", type=int, default=100, help="hits per query-subject pair (default 100)")
    p.add_argument(
        "--min-score", type=int, default=1, help="the lowest score a hit may have (default 1)"
    )
    p.add_argument(
        "--format",
        default="tsv",
        choices=["tsv", "fasta"],
        help="tsv: one line per hit; fasta: the two gapped rows per hit",
    )
    p.add_argument("-o", "--output", default="-", help="output file (default: stdout)")
    add_distributed(p, "share each subject's strips")
    add_scoring(p, "BLOSUM62 / NUC.4.4, open 10, extend 1")
    add_limits(p)
    p.set_defaults(func=run)


def _hits(query, subject, iq: int, is_: int, args, seqtype: str, ranks=None):
    """``local_topk`` of one pair, an invalid character named by its record."""
    from torchmsa.errors import InvalidCharacterError
    from torchmsa.ops.local import local_topk

    try:
        return local_topk(
            query.seq, subject.seq, k=args.k, min_score=args.min_score, matrix=args.matrix,
            gap_open=args.gap_open, gap_extend=args.gap_extend, seqtype=seqtype,
            device=ranks.device if ranks is not None else args.device, ranks=ranks,
        )  # fmt: skip
    except InvalidCharacterError as exc:
        rec, index = (query, iq) if exc.name == "query" else (subject, is_)
        raise InvalidCharacterError(
            rec.name, index, exc.position, exc.character, exc.alphabet
        ) from None


def run(args) -> int:
    from torchmsa.distributed.world import wanted

    world = wanted({"auto": "auto", "on": True, "off": False}[args.distributed])
    if world is None:
        return _run(args)
    from torchmsa.distributed.session import session

    with session(world, args.device, keep=False) as s:
        return _run(args, s)


def _run(args, ranks=None) -> int:
    from torchmsa.alphabet import resolve_alphabet
    from torchmsa.io import read_sequences

    bounds = limits(args)
    queries = read_sequences(args.query, limits=bounds)
    subjects = read_sequences(args.subject, limits=bounds)
    seqtype = resolve_alphabet(args.seqtype, [r.seq for r in queries + subjects]).name
    lines = ["\t".join(COLUMNS + ["query_row", "subject_row"])] if args.format == "tsv" else []
    for iq, q in enumerate(queries):
        for is_, s in enumerate(subjects):
            for rank, h in enumerate(_hits(q, s, iq, is_, args, seqtype, ranks), 1):
                qa, qb, sa, sb = h.query[0] + 1, h.query[1], h.subject[0] + 1, h.subject[1]
                if args.format == "tsv":
                    fields = [q.name, s.name, rank, h.score, qa, qb, sa, sb, *h.aligned]
                    lines.append("\t".join(map(str, fields)))
                else:
                    tag = f"rank={rank} score={h.score}"
                    lines.append(f">{q.name}/{qa}-{qb} {tag} {s.name}/{sa}-{sb}\n{h.aligned[0]}")
                    lines.append(f">{s.name}/{sa}-{sb} {tag} {q.name}/{qa}-{qb}\n{h.aligned[1]}")
    if ranks is None or ranks.leader:
        emit("\n".join(lines) + ("\n" if lines else ""), args.output)
    return 0
