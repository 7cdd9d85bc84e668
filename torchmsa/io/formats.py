"""Format names, their file extensions and aliases, and the two rules that pick a format: one
for reading (the content when it says, else the name) and one for writing (the name, else
FASTA), shared by the API and the command line."""

from __future__ import annotations

import os
import re

from torchmsa.errors import ArgumentError

__all__ = [
    "READ_FORMATS",
    "WRITE_FORMATS",
    "BIOPYTHON",
    "CLUSTAL_HEADERS",
    "check_format",
    "guess_format",
    "output_format",
]

READ_FORMATS = ("fasta", "a2m", "a3m", "stockholm", "clustal", "phylip")
WRITE_FORMATS = ("fasta", "clustal", "stockholm", "phylip", "a3m")
EXTENSIONS = {
    "fasta": (".fa", ".fasta", ".fas", ".faa", ".fna", ".ffn", ".seq", ".txt", ".mfa"),
    "a2m": (".a2m",),
    "a3m": (".a3m",),
    "stockholm": (".sto", ".stk", ".stockholm"),
    "clustal": (".aln", ".clustal", ".clw"),
    "phylip": (".phy", ".phylip"),
}
ALIASES = {
    "fa": "fasta",
    "fas": "fasta",
    "aln": "clustal",
    "clw": "clustal",
    "sto": "stockholm",
    "stk": "stockholm",
    "phy": "phylip",
    "phylip-relaxed": "phylip",
}
# the Biopython format that reads and writes each of ours
BIOPYTHON = {
    "fasta": "fasta",
    "a2m": "fasta",
    "a3m": "fasta",
    "stockholm": "stockholm",
    "clustal": "clustal",
    "phylip": "phylip-relaxed",
}
# first words Biopython's Clustal parser takes as a header: a row with such a name would start
# a new alignment when read back
CLUSTAL_HEADERS = ("CLUSTAL", "PROBCONS", "MUSCLE", "MSAPROBS", "Kalign", "Biopython")


def check_format(fmt, allowed: tuple[str, ...], what: str) -> str:
    """``fmt`` as one of ``allowed`` (case and aliases folded), else :class:`ArgumentError`."""
    key = str(fmt).strip().lower()
    key = ALIASES.get(key, key)
    if key not in allowed:
        raise ArgumentError(
            f"Invalid value for `format` argument: {fmt!r}; {what} formats are {', '.join(allowed)}"
        )
    return key


def _first_line(text: str) -> str:
    for line in text.split("\n"):
        if line.strip():
            return line.strip()
    return ""


def _by_name(path) -> str | None:
    name = os.fspath(path).lower()
    if name.endswith(".gz"):
        name = name[:-3]
    return next((fmt for fmt, exts in EXTENSIONS.items() if name.endswith(exts)), None)


def guess_format(path: str | os.PathLike, text: str | None = None) -> str:
    """Guess a file's format from its first non-blank line, else from its name.

    Arguments:
        path: the file name (``.gz`` is ignored); ``"<stdin>"`` and the like have no extension.
        text: the file's text, when it has been read.

    Returns:
        One of :data:`READ_FORMATS`; ``"fasta"`` when nothing tells.
    """
    by_name = _by_name(path)
    head = _first_line(text.lstrip("\ufeff")) if text is not None else ""
    if head.startswith("# STOCKHOLM"):
        return "stockholm"
    if head.startswith("#A3M"):
        return "a3m"
    if head.split(None, 1)[:1] and head.split(None, 1)[0] in CLUSTAL_HEADERS:
        return "clustal"
    if re.fullmatch(r"\d+\s+\d+", head):
        return "phylip"
    if head.startswith(">"):
        return by_name if by_name in ("a2m", "a3m") else "fasta"
    return by_name or "fasta"


def output_format(target, format: str | None = None) -> str:
    """The format to write ``target`` in: ``format`` when given, else the one its file name
    says (``x.aln`` Clustal, ``x.sto.gz`` Stockholm, ...), else FASTA (standard output,
    handles, unknown extensions). ``Alignment.write`` and ``torchmsa align -o`` both use it.

    Arguments:
        target: a path, ``"-"`` or an open handle.
        format: one of :data:`WRITE_FORMATS` (aliases such as ``aln`` accepted), or ``None``.

    Returns:
        One of :data:`WRITE_FORMATS`.

    Raises:
        ArgumentError: ``format`` is not a write format.
    """
    if format is not None:
        return check_format(format, WRITE_FORMATS, "write")
    if hasattr(target, "write") or not isinstance(target, (str, bytes, os.PathLike)):
        return "fasta"
    by_name = _by_name(os.fsdecode(target))
    return by_name if by_name in WRITE_FORMATS else "fasta"
