"""What every ``torchmsa`` verb shares: the argument parser class, number, scoring and
input-limit options, and writing text to a file (replaced whole) or stdout."""

from __future__ import annotations

import argparse

from torchmsa.errors import ArgumentError

__all__ = ["Parser", "number", "add_scoring", "add_limits", "limits", "emit"]


class Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one ``torchmsa: error:`` line, exit 2 (every
    verb's too: subparsers would otherwise print their own prog, ``torchmsa align: error:``)."""

    def error(self, message: str):
        message = " ".join(message.split())
        self.exit(2, f"torchmsa: error: {message} (see {self.prog} --help)\n")


def number(text: str) -> float:
    """An argparse type: an int where the text is integral, else a float."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    return int(value) if value.is_integer() else value


def _count(text: str) -> int:
    """An argparse type: a positive whole number; ``4GiB``, ``500M``, ``1e6`` accepted."""
    units = {"k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}
    key = text.strip().lower().removesuffix("ib").removesuffix("b")
    scale = units.get(key[-1:], 1)
    try:
        value = float(key[:-1] if scale > 1 else key) * scale
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a count: {text!r} (e.g. 1000000 or 2GiB)") from None
    if not value >= 1 or value != value or value > 2**62:
        raise argparse.ArgumentTypeError(f"not a positive count: {text!r}")
    return int(value)


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


def add_distributed(p: argparse.ArgumentParser, what: str) -> None:
    """``--distributed auto|on|off``: whether ``what`` is spread over torchrun's ranks."""
    p.add_argument(
        "--distributed",
        default="auto",
        choices=["auto", "on", "off"],
        help=f"{what} between the ranks that torchrun started (auto: when there are several)",
    )


def add_limits(p: argparse.ArgumentParser) -> None:
    """``--max-input-bytes`` and ``--max-sequences`` (:class:`torchmsa.io.InputLimits`)."""
    p.add_argument(
        "--max-input-bytes",
        type=_count,
        metavar="N",
        help="stop reading an input past N bytes, e.g. 8GiB (default: 4GiB)",
    )
    p.add_argument(
        "--max-sequences",
        type=_count,
        metavar="N",
        help="refuse an input of more than N sequences (default: 100000000)",
    )


def limits(args):
    """The :class:`torchmsa.io.InputLimits` that :func:`add_limits`'s options give."""
    from torchmsa.io import InputLimits

    given = {
        "max_input_bytes": getattr(args, "max_input_bytes", None),
        "max_sequences": getattr(args, "max_sequences", None),
    }
    return InputLimits(**{k: v for k, v in given.items() if v is not None})


def emit(text, target: str) -> None:
    """``text`` (a ``str``, or bytes or a ``uint8`` array as they are) to ``target`` as
    UTF-8: ``"-"`` is standard output; a file is replaced whole once the text is complete (it
    may be the input)."""
    from torchmsa.io import write_file, write_stdout

    data = text.encode("utf-8") if isinstance(text, str) else text
    if target == "-":
        write_stdout(data)
        return
    try:
        write_file(target, data)
    except OSError as exc:
        raise ArgumentError(
            f"cannot write {target!r}: {exc.strerror or exc}; check that its directory exists "
            f"and is writable"
        ) from None
