"""``torchmsa submit``: send a file to a ``torchmsa serve`` server; prints the job id.

The options every client verb shares (``--server``, ``--token``, ``--user``) and the client
they make live here too; ``status`` and ``fetch`` import them.
"""

from __future__ import annotations

import sys

__all__ = ["add_parser", "run", "add_client_options", "client_from"]


def add_client_options(p) -> None:
    p.add_argument(
        "--server",
        help="the server's URL (default $TORCHMSA_SERVER, else http://127.0.0.1:8765)",
    )
    p.add_argument("--token", help="bearer token (default $TORCHMSA_TOKEN)")
    p.add_argument("--user", help="user name on a server without tokens (default $TORCHMSA_USER)")


def client_from(args):
    from torchmsa.client import Client

    return Client(args.server, args.token, user=args.user)


def add_parser(sub) -> None:
    p = sub.add_parser(
        "submit",
        help="send sequences to a torchmsa server; prints the job id",
        description="Queue an alignment on a torchmsa server (torchmsa serve). Prints the job "
        "id; with --wait, waits for it, and with -o also writes the result.",
    )
    p.add_argument("input", help="sequence file (any format torchmsa align reads), '-' for stdin")
    p.add_argument("--mode", choices=["auto", "fast", "default", "accurate"], help="as align")
    p.add_argument(
        "--tree",
        choices=["auto", "upgma", "upgma_mafft", "nj", "single", "lcs", "parttree"],
        help="guide tree method, as align",
    )
    p.add_argument("--matrix", help="substitution matrix name, as align")
    p.add_argument("--gap-open", type=float, help="gap opening cost, as align")
    p.add_argument("--gap-extend", type=float, help="gap extension cost, as align")
    p.add_argument("--seqtype", choices=["auto", "protein", "dna", "rna"], help="as align")
    p.add_argument("--config", metavar="NAME=VALUE", action="append", default=[], help="as align")
    p.add_argument("--wait", action="store_true", help="wait until the job is done")
    p.add_argument("--timeout", type=float, help="seconds --wait waits at most")
    p.add_argument("-o", "--output", help="with --wait: write the result here ('-': stdout)")
    p.add_argument(
        "--format",
        default="fasta",
        choices=["fasta", "clustal", "stockholm", "phylip", "a3m", "newick"],
        help="result format for -o (default fasta)",
    )
    add_client_options(p)
    p.set_defaults(func=run)


def finished(client, job_id: str, timeout: float | None) -> dict:
    """Wait for the job; raise its error when it failed."""
    from torchmsa.errors import InputError

    info = client.wait(job_id, timeout)
    if info["state"] != "done":
        raise InputError(f"job {job_id} {info['state']}: {info.get('error') or 'no reason given'}")
    return info


def run(args) -> int:
    from torchmsa.cli.common import emit

    with client_from(args) as client:
        job_id = client.submit(
            args.input,
            mode=args.mode,
            tree=args.tree,
            matrix=args.matrix,
            gap_open=args.gap_open,
            gap_extend=args.gap_extend,
            seqtype=args.seqtype,
            config=args.config or None,
        )
        if args.output and not args.wait:
            args.wait = True
        if not args.wait:
            print(job_id)
            return 0
        finished(client, job_id, args.timeout)
        if args.output:
            emit(client.result(job_id, args.format), args.output)
            if args.output != "-":
                print(job_id)
        else:
            print(job_id)
    sys.stdout.flush()
    return 0
