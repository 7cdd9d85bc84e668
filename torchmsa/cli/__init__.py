"""The ``torchmsa`` command: one module per verb (``align``, ``pairwise``, ``score``,
``view``), each with ``add_parser(sub)`` and ``run(args)``.

User errors print one line (``torchmsa: error: ...``) on stderr and exit with status 2; no
traceback.
"""

from __future__ import annotations

import argparse
import sys

from torchmsa.errors import TorchMSAError

__all__ = ["main", "build_parser"]

EXAMPLES = """examples:
  torchmsa align seqs.fasta -o aln.fasta
  torchmsa align seqs.fasta.gz --format clustal --mode accurate -o -
  torchmsa align seqs.fasta --config consistency.weight=16 --config tree.lcs_min_n=1000
  cat seqs.fasta | torchmsa align - --tree-out guide.nwk > aln.fasta
  torchmsa pairwise query.fasta targets.fasta --mode local
  torchmsa score test.fasta reference.fasta --core core.txt
  torchmsa view aln.fasta -o aln.html --color zappo --tree
"""


VERBS = ("align", "pairwise", "score")


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
