"""The ``torchmsa`` command: one module per verb (``align``, ``pairwise``, ``score``,
``view``), each with ``add_parser(sub)`` and ``run(args)``.

User errors print one line (``torchmsa: error: ...``) on stderr and exit with status 2; no
traceback.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
from typing import NoReturn

from torchmsa.errors import TorchMSAError

__all__ = ["main", "run_command", "caller_env", "build_parser", "exit_with", "allocator_default"]

EXAMPLES = """examples:
  torchmsa align seqs.fasta -o aln.fasta
  torchmsa align seqs.fasta.gz --format clustal --mode accurate -o -
  torchmsa align seqs.fasta --config consistency.weight=16 --config tree.lcs_min_n=1000
  cat seqs.fasta | torchmsa align - --tree-out guide.nwk > aln.fasta
  torchmsa pairwise query.fasta targets.fasta --mode local
  torchmsa local query.fasta genome.fasta.gz -k 100 -o hits.tsv
  torchmsa score test.fasta reference.fasta --core core.txt
  torchmsa align --add new.fasta existing.aln -o out.fasta [--keeplength]
  torchmsa merge a.aln b.aln -o merged.fasta
  torchmsa view aln.fasta -o aln.html --color zappo --tree
  torchmsa batch families/ -o aligned/
  torchmsa serve --port 8765 &  torchmsa submit seqs.fasta --wait -o aln.fasta
  torchmsa warmup        # once per machine: a later align compiles nothing
"""


VERBS = (
    "align", "merge", "pairwise", "local", "score", "batch", "serve", "submit", "status", "fetch",
    "warmup", "daemon",
)  # fmt: skip


def build_parser() -> argparse.ArgumentParser:
    """The ``torchmsa`` parser with every verb's subparser."""
    import importlib

    from torchmsa import __version__
    from torchmsa.cli.common import Parser
    from torchmsa.view.cli import add_parser as add_view

    parser = Parser(
        prog="torchmsa",
        description="Multiple sequence alignment on CUDA GPUs (Triton) and CPUs.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"torchmsa {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    for verb in VERBS:
        importlib.import_module(f"torchmsa.cli.{verb}").add_parser(sub)
    add_view(sub)
    return parser


ALLOCATOR = "expandable_segments:True"
_CALLER_ENV: dict[str, str] = {}
_OWN_PROCESS = [False]  # True in the `torchmsa` script's process (run_command runs it here)


def allocator_default() -> None:
    """Torch's CUDA allocator with expandable segments, in this process, unless the user set
    ``PYTORCH_CUDA_ALLOC_CONF`` or ``torchrun`` started it: a buffer freed and a larger one
    allocated then reuse the same memory, where fixed segments keep both (at 10^6 sequences
    the node pool's rebuilds left 7 GiB reserved above the 35 GiB allocated; decision 0050).
    Torch reads the variable at its first CUDA allocation, so the command sets it before
    any; the API leaves the user's process as it is."""
    if "WORLD_SIZE" not in os.environ:
        os.environ.setdefault("PYTORCH_CUDA_ALLOC_CONF", ALLOCATOR)


@functools.cache
def _parser() -> argparse.ArgumentParser:
    """One parser per process (12 ms to build; a warm server runs many commands)."""
    return build_parser()


def main(argv: list[str] | None = None) -> int:
    """Run the ``torchmsa`` command; returns its exit status (0, 2 on any user error)."""
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version and usage errors end here
        return exc.code if isinstance(exc.code, int) else 2
    _CALLER_ENV.clear()
    _CALLER_ENV.update(os.environ)
    allocator_default()
    if args.command is None:
        verbs = ", ".join((*VERBS, "view"))
        print(f"torchmsa: error: give a command: {verbs} (see torchmsa --help)", file=sys.stderr)
        return 2
    try:
        return args.func(args)
    except (TorchMSAError, ValueError) as exc:
        return _fail(" ".join(str(exc).split()))
    except MemoryError:
        return _fail(
            "out of memory; free memory or raise `ulimit -v`, lower --max-input-bytes, or "
            "align fewer sequences at a time"
        )
    except KeyboardInterrupt:
        print("torchmsa: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        _silence_stdout()
        return 0


def _fail(message: str) -> int:
    print(f"torchmsa: error: {message}", file=sys.stderr)
    return 2


def _silence_stdout() -> None:
    """Point stdout at /dev/null, so that flushing it at exit raises no second BrokenPipeError
    (``torchmsa align x.fa | head``)."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass


def exit_with(status: int) -> NoReturn:
    """End the process with ``status`` (the ``torchmsa`` script and ``python -m torchmsa``).

    The objects alive now are left out of the interpreter's last garbage collection
    (``gc.freeze``): with torch and numba loaded it walks millions of them, about 0.3 s of a
    2.2 s ``torchmsa align`` on 2 cores (issue #36). Exit handlers, threads and the standard
    streams end as before; only a finalizer of an object caught in a reference cycle may not
    run, which Python never promises at exit (the outputs are written and closed by now).
    """
    import gc

    gc.freeze()
    sys.exit(status)


def run_command(argv: list[str]) -> int:
    """``torchmsa ARGV`` as the command's process runs it: on this environment's warm server
    when one takes it; where none is alive, on one it starts for this command, which stays warm
    for the next; else (the server is busy, or did not start) here, after which a server is
    started for the next command if none is (``torchmsa/daemon``, decisions 0058 and 0062;
    ``TORCHMSA_DAEMON=off`` turns all of it off)."""
    from torchmsa.daemon import client, where

    env = dict(os.environ)
    code = client.forward(argv, env)
    if code is None:
        code = client.forward_first(argv, env)
    if code is not None:
        return code
    _OWN_PROCESS[0] = True
    code = main(argv)
    if where.routed(argv, env):
        try:
            client.start(env)
        except OSError:
            pass  # no folder for it: the next command runs here too
    return code


def freeze_loaded() -> None:
    """In a command's own process (not a warm server's, nor a program that calls
    :func:`main`): what is loaded by now lives as long as the process, so it leaves the
    garbage collector's sight, and the full collections Python starts while the command runs
    walk only what the command makes (about 0.1 s of a 2 s ``torchmsa align`` on two cores).
    A server freezes what it loaded itself (decision 0062)."""
    if _OWN_PROCESS[0]:
        import gc

        gc.freeze()


def caller_env() -> dict[str, str]:
    """The environment the current command was called with (before it set torch's
    allocator variable): what a server it starts must see."""
    return dict(_CALLER_ENV) or dict(os.environ)


def _entry() -> None:
    exit_with(run_command(sys.argv[1:]))
