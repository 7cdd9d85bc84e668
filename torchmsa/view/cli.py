"""``torchmsa view``: an alignment file as an HTML page or a PNG picture.

:func:`add_parser` adds the verb to the ``torchmsa`` command's subparsers and :func:`run`
carries it out; errors are :mod:`torchmsa.errors` types, which the command prints on one line.
"""

from __future__ import annotations

import argparse
import os
import sys

from torchmsa.errors import ArgumentError, FormatError
from torchmsa.view.schemes import SCHEMES

__all__ = ["add_parser", "run"]

EXAMPLES = """examples:
  torchmsa view aln.fasta                       # writes aln.html beside it
  torchmsa view aln.fasta -o aln.png --color zappo
  torchmsa align seqs.fasta -o aln.fasta --tree-out guide.nwk
  torchmsa view aln.fasta --tree-file guide.nwk --region 100-400 -o part.html
"""


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Add the ``view`` verb to ``subparsers`` (from ``ArgumentParser.add_subparsers``)."""
    p = subparsers.add_parser(
        "view",
        help="show an alignment as a self-contained HTML page or a PNG picture",
        description="Write an alignment as one self-contained HTML page (scroll, search names,\n"
        "switch colours; no network needed) or as a PNG overview with a conservation plot.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "input", help="alignment file (FASTA, A2M/A3M, Stockholm, Clustal, PHYLIP; .gz), '-'"
    )
    p.add_argument(
        "-o",
        "--output",
        help="out.html, out.png, or '-' (HTML on stdout); default: the input's name with "
        ".html, beside it (stdout for '-')",
    )
    p.add_argument("--color", default="clustal", choices=SCHEMES, help="colour scheme")
    p.add_argument(
        "--tree",
        action="store_true",
        help="show a tree beside the rows, in its order (a file holds none: without "
        "--tree-file, a UPGMA tree of p-distances, up to 1,000 rows)",
    )
    p.add_argument(
        "--tree-file",
        metavar="NEWICK",
        help="the tree to show, e.g. from 'torchmsa align --tree-out' (implies --tree)",
    )
    p.add_argument(
        "--consensus",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="show the consensus line (default: yes)",
    )
    p.add_argument("--region", metavar="START-END", help="columns to show, 1-based, inclusive")
    p.add_argument("--rows", metavar="NAME,...", help="rows to show, by name, in this order")
    p.add_argument("--title", help="title (default: the file name)")
    p.add_argument(
        "--max-width",
        type=int,
        default=2400,
        metavar="PIXELS",
        help="PNG: the most pixels the residues may take across (default 2400; up to 8 a "
        "residue, beyond that columns are binned)",
    )
    p.add_argument(
        "--max-height",
        type=int,
        default=2400,
        metavar="PIXELS",
        help="PNG: the most pixels the rows may take (default 2400; up to 12 a row, beyond "
        "that rows are binned)",
    )
    p.add_argument(
        "--input-format",
        choices=["fasta", "a2m", "a3m", "stockholm", "clustal", "phylip"],
        help="input format (default: from the content, else the name)",
    )
    p.set_defaults(func=run)
    return p


def _output(args) -> str:
    if args.output:
        return args.output
    if args.input == "-":
        return "-"
    base = os.fsdecode(args.input)
    if base.endswith(".gz"):
        base = base[:-3]
    return os.path.splitext(base)[0] + ".html"


def _tree(args):
    if not args.tree_file:
        return bool(args.tree)
    try:
        with open(args.tree_file, encoding="utf-8") as fh:
            return fh.read()
    except OSError as exc:
        raise FormatError(
            f"cannot read the tree {args.tree_file!r}: {exc.strerror or exc}; check the path"
        ) from None


def run(args) -> int:
    """Carry out ``torchmsa view`` for parsed ``args``; returns the exit status (0)."""
    from torchmsa.view.html import to_html
    from torchmsa.view.model import load
    from torchmsa.view.png import to_png

    out = _output(args)
    kind = "html" if out == "-" else os.path.splitext(out.lower())[1].lstrip(".")
    if kind not in ("html", "htm", "png"):
        raise ArgumentError(
            f"--output {out!r}: use a name ending in .html or .png, or '-' for HTML on stdout"
        )
    aln = load(args.input, args.input_format)
    options = dict(
        color=args.color,
        consensus=args.consensus,
        tree=_tree(args),
        region=args.region,
        rows=args.rows,
        title=args.title,
    )
    if kind == "png":
        to_png(aln, out, **options, max_width=args.max_width, max_height=args.max_height)
        return 0
    page = to_html(aln, **options)
    if out == "-":  # UTF-8 whatever the terminal's encoding, as the page declares
        if hasattr(sys.stdout, "buffer"):
            sys.stdout.flush()
            sys.stdout.buffer.write(page.encode("utf-8"))
            sys.stdout.buffer.flush()
        else:
            sys.stdout.write(page)
            sys.stdout.flush()
        return 0
    try:
        with open(out, "w", encoding="utf-8") as fh:
            fh.write(page)
    except OSError as exc:
        raise ArgumentError(f"cannot write {out!r}: {exc.strerror or exc}") from None
    return 0
