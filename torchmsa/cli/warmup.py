"""``torchmsa warmup``: compile every numba function and Triton kernel variant ahead, into
the on-disk caches, so that later ``torchmsa align`` processes start without compiling."""

from __future__ import annotations

__all__ = ["add_parser", "run"]


def add_parser(sub) -> None:
    from torchmsa.precompile import TASKS

    p = sub.add_parser(
        "warmup",
        help="compile every kernel ahead into the on-disk caches",
        description="Compile the numba functions (and on a GPU the Triton kernel variants) "
        "that aligning uses, in parallel processes, into numba's and Triton's on-disk caches "
        "(TORCHMSA_CACHE_DIR puts both under one folder). Run it once per machine (or "
        "image) after installing; a later align then compiles nothing (pairwise modes the "
        "pipeline does not use still compile a launch shape on first use).",
    )
    p.add_argument("--device", default="auto", help="auto (CUDA if present), cpu, cuda or cuda:N")
    p.add_argument(
        "--jobs", type=int, default=None, help="processes compiling at once (default: one per core)"
    )
    p.add_argument(
        "--task", action="append", choices=list(TASKS), help="only this task (repeatable)"
    )
    p.add_argument("-v", "--verbose", action="store_true", help="one line per task on stderr")
    p.add_argument(
        "--no-daemon",
        action="store_true",
        help="start no warm server afterwards (torchmsa daemon; TORCHMSA_DAEMON=off also)",
    )
    p.set_defaults(func=run)


def run(args) -> int:
    import sys

    from torchmsa.precompile import warmup

    report = warmup(args.device, jobs=args.jobs, tasks=args.task)
    if args.verbose:
        for t in report.tasks:
            print(
                f"  {t.name:<22} {t.seconds:7.1f} s  numba {t.numba_compiled:4d}  "
                f"triton {t.triton_compiled:4d}",
                file=sys.stderr,
            )
    print(report.summary())
    if not args.no_daemon:
        from torchmsa.cli import caller_env
        from torchmsa.daemon import client

        if client.start(caller_env()) == "started":
            print(
                "torchmsa warmup: a warm server now takes the next commands (idle limit "
                "TORCHMSA_DAEMON_IDLE, 900 s; torchmsa daemon stop ends it)"
            )
    return 0
