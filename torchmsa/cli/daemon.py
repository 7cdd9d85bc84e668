"""``torchmsa daemon``: start, stop or list the warm servers that run ``align``, ``merge``,
``pairwise``, ``local`` and ``score`` for later commands (``torchmsa/daemon``)."""

from __future__ import annotations

import sys

__all__ = ["add_parser", "run"]


def add_parser(sub) -> None:
    p = sub.add_parser(
        "daemon",
        help="start, stop or list the warm server later commands run on",
        description="A command that finds no warm server runs itself, then starts one for "
        "the next command of the same installation and environment; that one skips the "
        "seconds of loading torch, numba, Triton and CUDA. A server runs one command at a "
        "time (a command arriving meanwhile runs itself) and ends after TORCHMSA_DAEMON_IDLE "
        "seconds without one (900). TORCHMSA_DAEMON=off neither uses nor starts servers.",
    )
    p.add_argument("action", choices=["start", "stop", "status"], help="what to do")
    p.add_argument(
        "--wait", type=float, default=120.0, help="start: seconds to wait until it is ready"
    )
    p.add_argument("--all", action="store_true", help="stop: every server of this user")
    p.set_defaults(func=run)


def run(args) -> int:
    from torchmsa.cli import caller_env
    from torchmsa.daemon import client, where

    env = caller_env()
    if args.action == "start":
        state = client.start(env, wait=args.wait, force=True)
        if state == "off":
            print(
                "torchmsa daemon: servers are off here (TORCHMSA_DAEMON=off, torchrun, or a "
                "cache or server folder given as a relative path)"
            )
            return 0
        print(f"torchmsa daemon: {state} ({where.paths(where.key(env), env).log})")
        return 0 if state in ("started", "running") else 1
    if args.action == "stop":
        n = client.stop(env, every=args.all)
        print(f"torchmsa daemon: stopped {n} server{'s' if n != 1 else ''}")
        return 0
    rows = client.servers(env)
    if not rows:
        print("torchmsa daemon: no server is running")
    for r in rows:
        state = "ready" if r["ready"] else "starting"
        mine = "this environment" if r["mine"] else "another environment or installation"
        print(f"{r['key']}  pid {r['pid']}  {state}  {mine}", file=sys.stdout)
    return 0
