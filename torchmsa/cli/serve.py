"""``torchmsa serve``: the HTTP alignment service. The HTTP process checks, stores and answers
requests; the alignment workers (one per CUDA GPU, else one on the CPU) run in worker processes
of their own (:mod:`torchmsa.serve.procs`), all on one store's database."""

from __future__ import annotations

import ipaddress
import os
import sys

__all__ = ["add_parser", "run"]


def add_parser(sub) -> None:
    from torchmsa.serve.limits import MAX_BYTES, MAX_SEQS

    p = sub.add_parser(
        "serve",
        help="run the alignment server (HTTP API, web page, workers)",
        description="Serve alignment jobs over HTTP: POST /jobs, GET /jobs/ID, "
        "GET /jobs/ID/result, a web page at / and the API reference at /docs. Jobs are kept "
        "in a store (SQLite in --data, or --db) and survive restarts; one worker per CUDA GPU "
        "(else one on the CPU) runs them. SIGTERM or Ctrl-C stops it cleanly.",
    )
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default loopback)")
    p.add_argument("--port", type=int, default=8765, help="port (default 8765; 0: a free one)")
    p.add_argument(
        "--data", help="the store's folder (default $TORCHMSA_DATA, else ~/.cache/torchmsa)"
    )
    p.add_argument("--db", help="database URL instead of --data: sqlite:///PATH, postgresql://...")
    p.add_argument(
        "--token",
        action="append",
        default=None,
        help="bearer token a request must carry (repeatable, one per user; default "
        "$TORCHMSA_TOKEN; none: no authentication, jobs kept apart by X-TorchMSA-User)",
    )
    p.add_argument(
        "--device",
        default="auto",
        help="auto (one worker per CUDA GPU, else the CPU) | cpu | cuda:0,cuda:1 ...",
    )
    p.add_argument(
        "--cpu-workers", type=int, default=1, help="CPU processes for small jobs (default 1)"
    )
    p.add_argument(
        "--max-bytes", type=int, default=MAX_BYTES, help=f"request size limit (default {MAX_BYTES})"
    )
    p.add_argument(
        "--max-seqs", type=int, default=MAX_SEQS, help=f"sequences per job (default {MAX_SEQS})"
    )
    p.add_argument(
        "--cap-gb", type=float, default=2.0, help="store size cap in GiB (LRU eviction; default 2)"
    )
    p.add_argument(
        "--http-procs",
        type=int,
        default=1,
        help="processes answering HTTP on the one port and store (default 1)",
    )
    p.add_argument("--log-level", default="warning", help="uvicorn's log level (default warning)")
    p.set_defaults(func=run)


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def run(args) -> int:
    from torchmsa.errors import ArgumentError
    from torchmsa.serve.server import serve

    tokens = args.token or (
        [os.environ["TORCHMSA_TOKEN"]] if os.environ.get("TORCHMSA_TOKEN") else None
    )
    if not 0 <= args.port <= 65535:
        raise ArgumentError(f"Invalid value for `--port`: {args.port}; give 0..65535")
    for name in ("cpu_workers", "max_bytes", "max_seqs"):
        if getattr(args, name) < 1:
            flag = "--" + name.replace("_", "-")
            raise ArgumentError(f"Invalid value for `{flag}`: {getattr(args, name)}; give >= 1")
    if not _loopback(args.host) and not tokens:
        print(
            f"torchmsa: warning: serving on {args.host} without --token: anyone who reaches "
            f"this port can submit, read and delete jobs",
            file=sys.stderr,
        )
    return serve(
        args.host,
        args.port,
        args.data,
        args.db,
        tokens,
        device=args.device,
        cpu_workers=args.cpu_workers,
        max_bytes=args.max_bytes,
        max_seqs=args.max_seqs,
        cap_bytes=int(args.cap_gb * (1 << 30)),
        log_level=args.log_level,
        http_procs=args.http_procs,
    )
