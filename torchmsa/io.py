"""Reading sequences and alignments, writing alignments. Biopython does the parsing.

Reading accepts a path, ``"-"`` (standard input) or an open text handle; gzip input is
recognised by its magic bytes whatever the file is called. CRLF and CR line ends are accepted.

=========== ========================== ===============================================
format      read                       notes
=========== ========================== ===============================================
fasta       sequences, alignments      ``.fa .fasta .fas .faa .fna .ffn .seq .txt``
a2m / a3m   sequences, alignments      lowercase letters are insertions; in A3M
                                       insert columns are implicit
stockholm   sequences, alignments      ``.sto .stk .stockholm``
clustal     sequences, alignments      ``.aln .clustal .clw``
phylip      (write only)               relaxed PHYLIP: names of any length, no spaces
=========== ========================== ===============================================

Writing: ``fasta`` keeps whole header lines; ``a3m`` too, with the query's gap columns as
lowercase insertions (A3M gives case a meaning, so input case is not kept there); ``clustal``,
``stockholm`` and ``phylip`` carry sequence ids only, and refuse (rather than truncate or merge)
names they cannot hold.
"""

from __future__ import annotations

import gzip
import io as _io
import os
import sys
from typing import IO, TextIO

from Bio import AlignIO, SeqIO
from Bio.Align import MultipleSeqAlignment
from Bio.Seq import Seq
from Bio.SeqRecord import SeqRecord

from torchmsa.errors import ArgumentError, EmptyInputError, FormatError
from torchmsa.sequences import Record

__all__ = [
    "READ_FORMATS",
    "WRITE_FORMATS",
    "read_sequences",
    "read_alignment",
    "write_alignment",
    "format_alignment",
    "a3m_rows",
    "guess_format",
]

READ_FORMATS = ("fasta", "a2m", "a3m", "stockholm", "clustal")
WRITE_FORMATS = ("fasta", "clustal", "stockholm", "phylip", "a3m")
_EXTENSIONS = {
    "fasta": (".fa", ".fasta", ".fas", ".faa", ".fna", ".ffn", ".seq", ".txt", ".mfa"),
    "a2m": (".a2m",),
    "a3m": (".a3m",),
    "stockholm": (".sto", ".stk", ".stockholm"),
    "clustal": (".aln", ".clustal", ".clw"),
    "phylip": (".phy", ".phylip"),
}
_BIOPYTHON = {
    "fasta": "fasta",
    "a2m": "fasta",
    "a3m": "fasta",
    "stockholm": "stockholm",
    "clustal": "clustal",
    "phylip": "phylip-relaxed",
}
_CLUSTAL_NAME_MAX = 30


def _check_format(fmt: str, allowed: tuple[str, ...], what: str) -> str:
    key = fmt.lower()
    if key in ("fa", "fas"):
        key = "fasta"
    if key not in allowed:
        raise ArgumentError(f"Invalid value for `format` argument: {fmt!r}; {what} {allowed}")
    return key


def guess_format(path: str | os.PathLike, text: str | None = None) -> str:
    """Guess a format from a file name (ignoring ``.gz``), else from the text's first line."""
    name = os.fspath(path).lower()
    if name.endswith(".gz"):
        name = name[:-3]
    for fmt, exts in _EXTENSIONS.items():
        if name.endswith(exts):
            return fmt
    if text is not None:
        head = text.lstrip()[:200]
        if head.startswith("# STOCKHOLM"):
            return "stockholm"
        if head.upper().startswith(("CLUSTAL", "MUSCLE")):
            return "clustal"
    return "fasta"


def _read_text(source) -> tuple[str, str]:
    """Return ``(label, text)`` of a path, ``"-"`` or a handle, un-gzipped, line ends as LF."""
    if hasattr(source, "read"):
        data = source.read()
        label = getattr(source, "name", "<handle>")
    elif os.fspath(source) == "-":
        data = sys.stdin.buffer.read()
        label = "<stdin>"
    else:
        label = os.fspath(source)
        try:
            with open(label, "rb") as fh:
                data = fh.read()
        except FileNotFoundError:
            raise FormatError(f"no such file: {label!r}; check the path") from None
        except IsADirectoryError:
            raise FormatError(f"{label!r} is a directory, not a sequence file") from None
        except PermissionError:
            raise FormatError(f"cannot read {label!r}: permission denied") from None
    if isinstance(data, bytes):
        if data[:2] == b"\x1f\x8b":
            try:
                data = gzip.decompress(data)
            except (OSError, EOFError) as exc:
                raise FormatError(f"{label}: damaged gzip data ({exc}); re-download it") from None
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise FormatError(
                f"{label}: not a text file (byte {exc.start} is not UTF-8); give a FASTA, "
                f"Stockholm, Clustal or A2M/A3M file, optionally gzipped"
            ) from None
    return label, data.replace("\r\n", "\n").replace("\r", "\n")


def _parse(text: str, fmt: str, label: str) -> list[SeqRecord]:
    try:
        if fmt in ("stockholm", "clustal"):
            records = [r for aln in AlignIO.parse(_io.StringIO(text), _BIOPYTHON[fmt]) for r in aln]
        else:
            records = list(SeqIO.parse(_io.StringIO(text), "fasta"))
    except ValueError as exc:
        first = str(exc).strip().splitlines()[0]
        raise FormatError(
            f"{label}: cannot read it as {fmt} ({first}); check the file or name its format"
        ) from None
    if not records:
        hint = "" if text.strip() == "" or fmt != "fasta" else " (FASTA headers start with '>')"
        raise EmptyInputError(f"{label}: no sequences found in {fmt} input{hint}")
    return records


def read_sequences(source, format: str | None = None) -> list[Record]:
    """Read sequences (gaps are kept here and dropped at encoding).

    Arguments:
        source: a path, ``"-"`` for standard input, or an open handle.
        format: one of :data:`READ_FORMATS`; guessed from the name and content when ``None``.

    Returns:
        :class:`~torchmsa.sequences.Record` items in file order.
    """
    label, text = _read_text(source)
    fmt = (
        guess_format(label, text)
        if format is None
        else _check_format(format, READ_FORMATS, "read formats are")
    )
    records = _parse(text, fmt, label)
    return [Record(r.id, r.description or r.id, str(r.seq)) for r in records]


def read_alignment(source, format: str | None = None) -> list[Record]:
    """Read an alignment: rows of equal length, ``.`` gaps turned into ``-``.

    A3M rows (insertions as lowercase letters, insert columns implicit) are expanded to a
    plain alignment, with gaps in the other rows at each insertion.
    """
    label, text = _read_text(source)
    fmt = (
        guess_format(label, text)
        if format is None
        else _check_format(format, READ_FORMATS, "read formats are")
    )
    records = [
        Record(r.id, r.description or r.id, str(r.seq).replace(".", "-"))
        for r in _parse(text, fmt, label)
    ]
    if fmt == "a3m":
        records = _expand_a3m(records)
    widths = {len(r.seq) for r in records}
    if len(widths) > 1:
        short = min(records, key=lambda r: len(r.seq))
        raise FormatError(
            f"{label}: rows differ in length ({min(widths)} to {max(widths)} columns, e.g. "
            f"{short.name!r}); an alignment needs equal-length rows (is it unaligned input?)"
        )
    return records


def _expand_a3m(records: list[Record]) -> list[Record]:
    """A3M to aligned rows: every match column keeps its place, insert runs get padded."""
    split = []
    for r in records:
        blocks, cur = [], []
        for ch in r.seq:
            if ch.islower():
                cur.append(ch)
            else:
                blocks.append("".join(cur))
                cur = []
                blocks.append(ch)
        blocks.append("".join(cur))
        split.append(blocks)
    n_match = {len(b) // 2 for b in split}
    if len(n_match) > 1:
        raise FormatError("A3M rows have different numbers of match columns; the file is damaged")
    width = [max(len(b[k]) for b in split) for k in range(0, len(split[0]), 2)]
    out = []
    for r, blocks in zip(records, split):
        parts = []
        for k, piece in enumerate(blocks):
            parts.append(piece.ljust(width[k // 2], "-") if k % 2 == 0 else piece)
        out.append(Record(r.name, r.description, "".join(parts)))
    return out


def a3m_rows(rows: list[str], query: int = 0) -> list[str]:
    """Rows in A3M form relative to row ``query``.

    Columns where the query has a residue are match columns (upper case, ``-`` for gaps);
    in the other columns residues become lowercase insertions and gaps are dropped.
    """
    q = rows[query]
    match = [ch not in "-." for ch in q]
    out = []
    for row in rows:
        out.append(
            "".join(
                (ch.upper() if ch not in "-." else "-") if m else ch.lower()
                for ch, m in zip(row, match)
                if m or ch not in "-."
            )
        )
    return out


def _check_names(names: list[str], fmt: str) -> None:
    seen = set()
    for name in names:
        if any(c.isspace() for c in name) or not name:
            raise FormatError(f"{fmt} cannot hold the name {name!r}; write FASTA instead")
        if fmt == "clustal" and len(name) > _CLUSTAL_NAME_MAX:
            raise FormatError(
                f"clustal truncates names to {_CLUSTAL_NAME_MAX} characters and {name!r} is "
                f"longer; write FASTA or Stockholm instead, or shorten the names"
            )
        if fmt in ("stockholm", "phylip") and name in seen:
            raise FormatError(
                f"{fmt} needs unique names and {name!r} occurs twice; rename it or write FASTA"
            )
        seen.add(name)


def format_alignment(
    names: list[str],
    rows: list[str],
    format: str = "fasta",
    descriptions: list[str] | None = None,
    query: int = 0,
) -> str:
    """An alignment as text in one of :data:`WRITE_FORMATS`."""
    fmt = _check_format(format, WRITE_FORMATS, "write formats are")
    descriptions = descriptions or names
    if fmt in ("fasta", "a3m"):
        body = a3m_rows(rows, query) if fmt == "a3m" else rows
        return "".join(f">{d}\n{r}\n" for d, r in zip(descriptions, body))
    _check_names(names, fmt)
    records = [
        SeqRecord(Seq(r), id=n, name=n, description=d if fmt == "stockholm" and d != n else "")
        for n, r, d in zip(names, rows, descriptions)
    ]
    handle = _io.StringIO()
    AlignIO.write(MultipleSeqAlignment(records), handle, _BIOPYTHON[fmt])
    return handle.getvalue()


def write_alignment(
    names: list[str],
    rows: list[str],
    target: str | os.PathLike | IO[str] | TextIO,
    format: str = "fasta",
    descriptions: list[str] | None = None,
    query: int = 0,
) -> None:
    """Write an alignment to a path (``.gz`` compresses), ``"-"`` (stdout) or a text handle."""
    text = format_alignment(names, rows, format, descriptions, query)
    if hasattr(target, "write"):
        target.write(text)
        return
    path = os.fspath(target)
    if path == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    try:
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path, "wt") as fh:
            fh.write(text)
    except OSError as exc:
        raise FormatError(f"cannot write {path!r}: {exc.strerror or exc}") from None
