"""What every ``torchmsa`` verb shares: the argument parser class, number and scoring
options, and writing text to a file or stdout."""

from __future__ import annotations

import argparse
import sys

from torchmsa.errors import ArgumentError

__all__ = ["Parser", "number", "add_scoring", "emit"]


class Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one ``torchmsa: error:`` line, exit 2."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def number(text: str) -> float:
    """An argparse type: an int where the text is integral, else a float."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    return int(value) if value.is_integer() else value


def add_scoring(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument(
        "--matrix",
        help=f"substitution matrix name, e.g. BLOSUM62, PAM250, NUC.4.4 "
        f"(default: per alphabet, {what})",
    )
    p.add_argument("--gap-open", type=number, help="gap opening cost (a positive number)")
    p.add_argument("--gap-extend", type=number, help="gap extension cost (<= gap open)")
    p.add_argument(
        "--seqtype",
        default="auto",
        choices=["auto", "protein", "dna", "rna"],
        help="sequence alphabet (default: detected)",
    )
    p.add_argument(
        "--device",
        default="auto",
        help="auto | cpu | cuda | cuda:N (default: auto = CUDA if available)",
    )


def emit(text: str, target: str) -> None:
    if target == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    try:
        with open(target, "w") as fh:
            fh.write(text)
    except OSError as exc:
        raise ArgumentError(f"cannot write {target!r}: {exc.strerror or exc}") from None
