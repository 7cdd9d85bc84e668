"""``torchmsa status``: a job's state on a ``torchmsa serve`` server (no id: your queue)."""

from __future__ import annotations

import json
import time

from torchmsa.cli.submit import add_client_options, client_from

__all__ = ["add_parser", "run"]


def add_parser(sub) -> None:
    p = sub.add_parser(
        "status",
        help="a server job's state (no id: your jobs)",
        description="Print a job's state, progress, timings and placement; without an id, "
        "one line per job of yours.",
    )
    p.add_argument("id", nargs="?", help="the job id (torchmsa submit printed it)")
    p.add_argument("--json", action="store_true", help="the server's JSON as it is")
    add_client_options(p)
    p.set_defaults(func=run)


def line(info: dict) -> str:
    """One line per job: id, state, progress, size, mode, placement, time or error."""
    took = ""
    if info.get("finished") and info.get("started"):
        took = f" {info['finished'] - info['started']:.2f}s"
    elif info.get("created"):
        took = f" waiting {max(0.0, time.time() - info['created']):.0f}s"
    where = f" on {info['placement']}" if info.get("placement") else ""
    error = f" error: {info['error']}" if info.get("error") else ""
    return (
        f"{info['id']}  {info['state']:<8} {100 * (info.get('progress') or 0):5.1f}%  "
        f"{info.get('n_seqs', 0)} seqs  {info.get('mode', '')}{where}{took}{error}"
    )


def run(args) -> int:
    with client_from(args) as client:
        if args.id:
            info = client.status(args.id)
            print(json.dumps(info, indent=1) if args.json else line(info))
        else:
            jobs = client.jobs()
            if args.json:
                print(json.dumps(jobs, indent=1))
            for info in [] if args.json else jobs:
                print(line(info))
    return 0
