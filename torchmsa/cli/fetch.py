"""``torchmsa fetch``: a finished job's result from a ``torchmsa serve`` server."""

from __future__ import annotations

from torchmsa.cli.submit import add_client_options, client_from, finished

__all__ = ["add_parser", "run"]

_FORMATS = ("fasta", "clustal", "stockholm", "phylip", "a3m", "newick")
_SUFFIX = {".aln": "clustal", ".sto": "stockholm", ".phy": "phylip", ".a3m": "a3m",
           ".nwk": "newick", ".newick": "newick"}  # fmt: skip


def add_parser(sub) -> None:
    p = sub.add_parser(
        "fetch",
        help="a server job's result (alignment or guide tree)",
        description="Write a job's alignment (or, with --format newick, its guide tree).",
    )
    p.add_argument("id", help="the job id (torchmsa submit printed it)")
    p.add_argument("-o", "--output", default="-", help="output file, '-' for stdout (default)")
    p.add_argument(
        "--format",
        choices=_FORMATS,
        help="fasta, clustal, stockholm, phylip, a3m, or newick for the guide tree (default: "
        "from the output name, else fasta)",
    )
    p.add_argument("--wait", action="store_true", help="wait for an unfinished job")
    p.add_argument("--timeout", type=float, help="seconds --wait waits at most")
    p.add_argument("--delete", action="store_true", help="delete the job once written")
    add_client_options(p)
    p.set_defaults(func=run)


def run(args) -> int:
    import os

    from torchmsa.cli.common import emit

    fmt = args.format
    if fmt is None:
        suffix = os.path.splitext(args.output)[1].lower()
        fmt = _SUFFIX.get(suffix, "fasta")
    with client_from(args) as client:
        if args.wait:
            finished(client, args.id, args.timeout)
        emit(client.result(args.id, fmt), args.output)
        if args.delete:
            client.delete(args.id)
    return 0
