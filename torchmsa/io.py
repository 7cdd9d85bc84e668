"""Reading sequences and alignments, writing alignments. Biopython does the parsing.

Reading accepts a path, ``"-"`` (standard input) or an open handle (text or binary). Gzip input
is recognised by its magic bytes whatever the file is called. A UTF-8 byte-order mark, CRLF and
CR line ends and blank lines before the first record are accepted.

=========== ========================== ===============================================
format      read                       notes
=========== ========================== ===============================================
fasta       sequences, alignments      ``.fa .fasta .fas .faa .fna .ffn .seq .txt``
a2m / a3m   sequences, alignments      lowercase letters are insertions; in A3M
                                       insert columns are implicit, ``#`` lines before
                                       the first record and HH-suite ``ss_*`` rows are
                                       skipped
stockholm   sequences, alignments      ``.sto .stk .stockholm``; ``#=GS name DE text``
                                       is the description
clustal     sequences, alignments      ``.aln .clustal .clw``
phylip      sequences, alignments      relaxed PHYLIP: names of any length, no spaces
=========== ========================== ===============================================

The format is taken from the content when it says (``# STOCKHOLM``, a ``CLUSTAL`` header, a
PHYLIP count line, a ``>`` header), else from the file name.

Writing: ``fasta`` keeps whole header lines; ``a3m`` too, with the query's gap columns as
lowercase insertions (A3M gives case a meaning, so input case is not kept there); ``stockholm``
keeps descriptions as ``#=GS DE`` lines; ``clustal`` and ``phylip`` carry sequence ids only.
A name a format cannot hold (too long, with spaces or characters it would change, repeated
where it must be unique) raises :class:`~torchmsa.errors.FormatError`: nothing is truncated or
renamed silently.
"""

from __future__ import annotations

import gzip
import io as _io
import os
import re
import sys
import zlib
from typing import IO, TextIO

from Bio import AlignIO
from Bio.Align import MultipleSeqAlignment
from Bio.Seq import Seq
from Bio.SeqRecord import SeqRecord

from torchmsa.errors import ArgumentError, EmptyInputError, FormatError
from torchmsa.records import Record, header

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

READ_FORMATS = ("fasta", "a2m", "a3m", "stockholm", "clustal", "phylip")
WRITE_FORMATS = ("fasta", "clustal", "stockholm", "phylip", "a3m")
_EXTENSIONS = {
    "fasta": (".fa", ".fasta", ".fas", ".faa", ".fna", ".ffn", ".seq", ".txt", ".mfa"),
    "a2m": (".a2m",),
    "a3m": (".a3m",),
    "stockholm": (".sto", ".stk", ".stockholm"),
    "clustal": (".aln", ".clustal", ".clw"),
    "phylip": (".phy", ".phylip"),
}
_ALIASES = {
    "fa": "fasta",
    "fas": "fasta",
    "aln": "clustal",
    "clw": "clustal",
    "sto": "stockholm",
    "stk": "stockholm",
    "phy": "phylip",
    "phylip-relaxed": "phylip",
}
_BIOPYTHON = {
    "fasta": "fasta",
    "a2m": "fasta",
    "a3m": "fasta",
    "stockholm": "stockholm",
    "clustal": "clustal",
    "phylip": "phylip-relaxed",
}
# first words Biopython's Clustal parser takes as a header: a row with such a name would start
# a new alignment when read back
_CLUSTAL_HEADERS = ("CLUSTAL", "PROBCONS", "MUSCLE", "MSAPROBS", "Kalign", "Biopython")
_CLUSTAL_NAME_MAX = 30
# Biopython's PHYLIP writer drops "[](),", and turns ":;" into "|"
_PHYLIP_BANNED = "[](),:;"
_HHSUITE_ROWS = {"ss_pred", "ss_conf", "ss_dssp", "sa_dssp"}
_COMPRESSED = {
    b"BZh": "bzip2",
    b"\xfd7zXZ\x00": "xz",
    b"PK\x03\x04": "zip",
    b"\x28\xb5\x2f\xfd": "zstd",
}
_MAX_EOF_READS = 1000


def _check_format(fmt, allowed: tuple[str, ...], what: str) -> str:
    key = str(fmt).strip().lower()
    key = _ALIASES.get(key, key)
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


def guess_format(path: str | os.PathLike, text: str | None = None) -> str:
    """Guess a file's format from its first non-blank line, else from its name.

    Arguments:
        path: the file name (``.gz`` is ignored); ``"<stdin>"`` and the like have no extension.
        text: the file's text, when it has been read.

    Returns:
        One of :data:`READ_FORMATS`; ``"fasta"`` when nothing tells.
    """
    name = os.fspath(path).lower()
    if name.endswith(".gz"):
        name = name[:-3]
    by_name = next((fmt for fmt, exts in _EXTENSIONS.items() if name.endswith(exts)), None)
    head = _first_line(text.lstrip("\ufeff")) if text is not None else ""
    if head.startswith("# STOCKHOLM"):
        return "stockholm"
    if head.startswith("#A3M"):
        return "a3m"
    if head.split(None, 1)[:1] and head.split(None, 1)[0] in _CLUSTAL_HEADERS:
        return "clustal"
    if re.fullmatch(r"\d+\s+\d+", head):
        return "phylip"
    if head.startswith(">"):
        return by_name if by_name in ("a2m", "a3m") else "fasta"
    return by_name or "fasta"


def _read_source(source) -> tuple[str, bytes | str]:
    """``(label, content)`` of a handle, ``"-"`` (standard input) or a path."""
    if hasattr(source, "read"):
        label = str(getattr(source, "name", "<handle>"))
        try:
            return label, source.read()
        except UnicodeDecodeError as exc:
            raise FormatError(
                f"{label}: not text in the handle's encoding ({exc.reason} at byte {exc.start}); "
                f"open the file in binary mode ('rb') or pass its path"
            ) from None
    label = os.fsdecode(source)
    if label == "-":
        stdin = sys.stdin
        if stdin is None or (hasattr(stdin, "isatty") and stdin.isatty()):
            raise EmptyInputError(
                "'-' reads sequences from standard input, but nothing is piped into it; pipe "
                "a file in or give its path"
            )
        return "<stdin>", stdin.buffer.read() if hasattr(stdin, "buffer") else stdin.read()
    path = os.path.expanduser(label)
    try:
        with open(path, "rb") as fh:
            return label, fh.read()
    except IsADirectoryError:
        raise FormatError(f"{label!r} is a directory; give a sequence file inside it") from None
    except PermissionError:
        raise FormatError(f"cannot read {label!r}: permission denied; check its mode") from None
    except OSError as exc:
        shown = label if len(label) <= 60 else label[:57] + "..."
        if label.lstrip().startswith(">"):
            hint = "; to read FASTA text held in a string, pass io.StringIO(text)"
        elif "/" not in label and "." not in label:
            hint = "; to pass sequences as text, put them in a list: ['MKV...', ...]"
        else:
            hint = "; check the path" if isinstance(exc, FileNotFoundError) else ""
        what = "no such file" if isinstance(exc, FileNotFoundError) else "cannot read"
        raise FormatError(f"{what}: {shown!r} ({exc.strerror or exc}){hint}") from None


def _decode(label: str, data: bytes | str) -> str:
    """Text with gzip undone, the byte-order mark dropped and line ends turned into LF."""
    if isinstance(data, (bytes, bytearray)):
        if data[:2] == b"\x1f\x8b":
            try:
                data = gzip.decompress(data)
            except (OSError, EOFError, zlib.error) as exc:
                raise FormatError(
                    f"{label}: damaged gzip data ({exc}); check the download or re-compress it"
                ) from None
        for magic, kind in _COMPRESSED.items():
            if data.startswith(magic):
                raise FormatError(
                    f"{label}: {kind}-compressed; decompress it first (torchmsa reads plain "
                    f"and gzip files)"
                )
        if b"\x00" in data:
            line = data[: data.index(b"\x00")].count(b"\n") + 1
            raise FormatError(
                f"{label}: binary data (a NUL byte on line {line}); give a plain-text or "
                f"gzipped sequence file"
            )
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = data[: exc.start].count(b"\n") + 1
            raise FormatError(
                f"{label}: line {line} is not UTF-8 text (byte {data[exc.start]:#04x}); save "
                f"the file as ASCII or UTF-8"
            ) from None
    return data.lstrip("\ufeff").replace("\r\n", "\n").replace("\r", "\n")


class _GuardedText(_io.StringIO):
    """A text handle whose ``readline`` raises after many reads at end of file.

    Biopython's Clustal parser loops for ever on a header with nothing after it (it reads
    blank lines until one is not blank, and at end of file every read is blank).
    """

    def __init__(self, text: str, label: str, fmt: str):
        super().__init__(text)
        self._where = f"{label}: the {fmt} input"
        self._eof_reads = 0

    def readline(self, size: int | None = -1) -> str:
        line = super().readline(-1 if size is None else size)
        if not line:
            self._eof_reads += 1
            if self._eof_reads > _MAX_EOF_READS:
                raise FormatError(
                    f"{self._where} ends where more was expected (a header with nothing after "
                    f"it?); check that the file is complete"
                )
        return line


def _check_start(text: str, fmt: str, label: str) -> str:
    """Drop leading blank lines (and ``#`` lines in A3M); refuse text before a FASTA header."""
    pos, k = 0, 0
    while pos < len(text):
        end = text.find("\n", pos)
        end = len(text) if end < 0 else end
        line = text[pos:end]
        if line.strip() and not (fmt == "a3m" and line.startswith("#")):
            if fmt in ("fasta", "a2m", "a3m") and not line.startswith(">"):
                raise FormatError(
                    f"{label}: line {k + 1} ({line.strip()[:40]!r}) comes before the first '>' "
                    f"header; remove it (a {fmt} file starts with a '>' line), or pass format= "
                    f"if the file is not {fmt}"
                )
            if fmt == "clustal" and not text[end:].strip():
                raise EmptyInputError(f"{label}: a clustal header with no alignment after it")
            return text[pos:]
        pos, k = end + 1, k + 1
    if text.strip():
        raise EmptyInputError(f"{label}: no sequences found in {fmt} input (only '#' lines)")
    raise EmptyInputError(f"{label} is empty; give a file that holds sequences")


_SEQUENCE_SPACE = str.maketrans("", "", " \t\r\n")


def _fasta_records(text: str) -> list[Record]:
    """FASTA-like records as Biopython's ``SeqIO.parse(handle, "fasta")`` reads them, without
    building its per-record objects: a record starts at each line that starts with ``>``; its
    title is the rest of that line less trailing whitespace, its name the title's first word,
    and its sequence the lines up to the next record with spaces, tabs and line ends removed.
    ``text`` starts with ``>`` and has ``\n`` line ends (:func:`_check_start`, :func:`_decode`).
    """
    out = []
    for chunk in text[1:].split("\n>"):
        line, _, body = chunk.partition("\n")
        title = line.rstrip()
        words = title.split(None, 1)
        name = words[0] if words else ""
        out.append(Record(name, title or name, body.translate(_SEQUENCE_SPACE)))
    return out


def _parse(text: str, fmt: str, label: str) -> list[list[Record]]:
    """The alignments in ``text`` (one list holding every record for FASTA-like formats)."""
    text = _check_start(text, fmt, label)
    if fmt in ("fasta", "a2m", "a3m"):
        groups = [_fasta_records(text)]
        if fmt == "a3m":
            groups = [[r for r in g if r.name not in _HHSUITE_ROWS] for g in groups]
    else:
        handle = _GuardedText(text, label, fmt)
        try:
            groups = [
                [_record(r, fmt) for r in aln] for aln in AlignIO.parse(handle, _BIOPYTHON[fmt])
            ]
        except FormatError:
            raise
        except (ValueError, AssertionError, IndexError, KeyError) as exc:
            detail = " ".join(str(exc).split())[:160] or "a malformed line or unequal rows"
            raise FormatError(
                f"{label}: cannot read it as {fmt} ({detail}); check the file, or pass format= "
                f"if it is not {fmt}"
            ) from None
    groups = [g for g in groups if g]
    if not groups:
        raise EmptyInputError(f"{label}: no sequences found in {fmt} input")
    return groups


def _record(r: SeqRecord, fmt: str) -> Record:
    """A record of an alignment format Biopython reads (Stockholm, Clustal, ...)."""
    name = r.id
    if fmt == "stockholm" and r.description != name:
        description = header(name, " ".join(r.description.split()))
    else:
        description = name
    return Record(name, description, str(r.seq))


def _load(source, format) -> tuple[str, str, list[list[Record]]]:
    label, data = _read_source(source)
    text = _decode(label, data)
    if format is None:
        fmt = guess_format(label, text)
    else:
        fmt = _check_format(format, READ_FORMATS, "read")
    return label, fmt, _parse(text, fmt, label)


def read_sequences(source, format: str | None = None) -> list[Record]:
    """Read sequences (gaps are kept here and dropped at encoding).

    Arguments:
        source: a path, ``"-"`` for standard input, or an open handle.
        format: one of :data:`READ_FORMATS`; guessed from the content and name when ``None``.

    Returns:
        :class:`~torchmsa.sequences.Record` items in file order (every alignment of a
        multi-alignment Stockholm or Clustal file, one after the other). ``description`` is the
        whole header line (FASTA) or ``"name DE-text"`` (Stockholm), else the name.

    Raises:
        FormatError: the file cannot be read, or not as ``format``.
        EmptyInputError: it holds no sequences.
        ArgumentError: ``format`` is not a read format.
    """
    _, _, groups = _load(source, format)
    return [r for g in groups for r in g]


def read_alignment(source, format: str | None = None) -> list[Record]:
    """Read one alignment: rows of equal length, ``.`` gaps turned into ``-``, case kept.

    A3M rows (insertions as lowercase letters, insert columns implicit) are expanded to a
    plain alignment, with gaps in the other rows at each insertion.

    Arguments:
        source: a path, ``"-"`` for standard input, or an open handle.
        format: one of :data:`READ_FORMATS`; guessed from the content and name when ``None``.

    Returns:
        The rows as :class:`~torchmsa.sequences.Record` items, file order.

    Raises:
        FormatError: the file cannot be read, its rows differ in length, or it holds several
            alignments.
        EmptyInputError: it holds no sequences.
    """
    label, fmt, groups = _load(source, format)
    if len(groups) > 1:
        raise FormatError(
            f"{label} holds {len(groups)} {fmt} alignments; split it and read one at a time"
        )
    records = [r._replace(seq=r.seq.replace(".", "-")) for r in groups[0]]
    if fmt == "a3m":
        records = _expand_a3m(records, label)
    widths = {len(r.seq) for r in records}
    if len(widths) > 1:
        short = min(records, key=lambda r: len(r.seq))
        lower = fmt != "a3m" and any(c.islower() for r in records for c in r.seq)
        hint = "; if it is A3M, pass format='a3m'" if lower else ""
        raise FormatError(
            f"{label}: rows differ in length ({min(widths)} to {max(widths)} columns, e.g. "
            f"{short.name!r}); an alignment needs equal-length rows (is it unaligned input?)"
            f"{hint}"
        )
    return records


def _expand_a3m(records: list[Record], label: str) -> list[Record]:
    """A3M to aligned rows: every match column keeps its place, insert runs get padded."""
    split = []
    for r in records:
        # [insert_0, match_1, insert_1, ..., match_k, insert_k]
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
    n_match = [len(b) // 2 for b in split]
    if len(set(n_match)) > 1:
        k = next(i for i, n in enumerate(n_match) if n != n_match[0])
        raise FormatError(
            f"{label}: A3M row {records[k].name!r} has {n_match[k]} match columns (upper case "
            f"and '-') but {records[0].name!r} has {n_match[0]}; the file is damaged or not A3M"
        )
    width = [max(len(b[k]) for b in split) for k in range(0, len(split[0]), 2)]
    out = []
    for r, blocks in zip(records, split):
        parts = [p.ljust(width[k // 2], "-") if k % 2 == 0 else p for k, p in enumerate(blocks)]
        out.append(r._replace(seq="".join(parts)))
    return out


def a3m_rows(rows: list[str], query: int = 0) -> list[str]:
    """Rows in A3M form relative to row ``query``.

    Columns where the query has a residue are match columns (upper case, ``-`` for gaps);
    in the other columns residues become lowercase insertions and gaps are dropped.

    Arguments:
        rows: aligned rows of equal length (``-`` or ``.`` gaps).
        query: index of the row that defines the match columns.

    Returns:
        The A3M rows, same order.
    """
    match = [ch not in "-." for ch in rows[query]]
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


def _check_alignment(names, rows, descriptions, fmt: str, query: int) -> list[str]:
    if len(names) != len(rows):
        raise ArgumentError(f"{len(names)} names for {len(rows)} rows; give one name per row")
    descriptions = list(names) if descriptions is None else list(descriptions)
    if len(descriptions) != len(names):
        raise ArgumentError(
            f"{len(descriptions)} descriptions for {len(names)} rows; give one per row or None"
        )
    if not names:
        raise EmptyInputError(f"no rows to write as {fmt}")
    descriptions = [str(d) for d in descriptions]
    for text in (*names, *descriptions):
        if "\n" in text or "\r" in text:
            raise FormatError(
                f"the name or description {text!r} holds a line break, which would corrupt "
                f"the {fmt} file; remove it"
            )
    widths = {len(r) for r in rows}
    if fmt != "fasta" and len(widths) > 1:
        raise FormatError(
            f"rows differ in length ({min(widths)} to {max(widths)} columns); {fmt} needs an "
            f"alignment (write unaligned sequences as fasta)"
        )
    if fmt in ("clustal", "stockholm", "phylip") and widths == {0}:
        raise FormatError(f"{fmt} cannot hold an alignment of 0 columns; write fasta instead")
    if fmt == "a3m" and not (isinstance(query, int) and -len(rows) <= query < len(rows)):
        raise ArgumentError(
            f"Invalid value for `query` argument: {query!r}; use a row index below {len(rows)}"
        )
    return descriptions


def _check_names(names: list[str], fmt: str) -> None:
    seen = set()
    for name in names:
        if not name or any(c.isspace() for c in name):
            raise FormatError(
                f"{fmt} cannot hold the name {name!r} (empty or with spaces); rename it or "
                f"write fasta"
            )
        if fmt == "clustal" and len(name) > _CLUSTAL_NAME_MAX:
            raise FormatError(
                f"clustal holds names of up to {_CLUSTAL_NAME_MAX} characters and {name!r} has "
                f"{len(name)}; shorten it, or write stockholm, phylip or fasta"
            )
        if fmt == "clustal" and name in _CLUSTAL_HEADERS:
            raise FormatError(f"clustal reads the name {name!r} as a header line; rename it")
        if fmt == "stockholm" and (name.startswith("#") or name == "//"):
            raise FormatError(f"stockholm reads the name {name!r} as markup; rename it")
        if fmt == "phylip" and any(c in _PHYLIP_BANNED for c in name):
            raise FormatError(
                f"phylip cannot hold the name {name!r} (Biopython would change its "
                f"{_PHYLIP_BANNED!r} characters); rename it or write fasta"
            )
        if fmt in ("stockholm", "phylip") and name in seen:
            raise FormatError(
                f"{fmt} needs unique names and {name!r} occurs twice; rename it or write fasta"
            )
        seen.add(name)


def format_alignment(
    names: list[str],
    rows: list[str],
    format: str = "fasta",
    descriptions: list[str] | None = None,
    query: int = 0,
) -> str:
    """An alignment as text in one of :data:`WRITE_FORMATS`.

    Arguments:
        names: row names (ids).
        rows: gapped rows (``-`` or ``.`` gaps), equal length except for ``fasta``.
        format: the output format.
        descriptions: whole header lines, one per row (``None``: the names).
        query: for ``a3m``, the row that defines the match columns.

    Returns:
        The file's text.

    Raises:
        FormatError: a name the format cannot hold, or rows it cannot hold.
        ArgumentError: unknown format, or counts of names, rows and descriptions that differ.
    """
    fmt = _check_format(format, WRITE_FORMATS, "write")
    rows = [str(r) for r in rows]
    names = [str(n) for n in names]
    descriptions = _check_alignment(names, rows, descriptions, fmt, query)
    if fmt in ("fasta", "a3m"):
        body = a3m_rows(rows, query) if fmt == "a3m" else rows
        return "".join(f">{header(n, d)}\n{r}\n" for n, d, r in zip(names, descriptions, body))
    _check_names(names, fmt)
    if fmt == "phylip":
        rows = [r.replace(".", "-") for r in rows]  # '.' means "as the first row" in PHYLIP
    records = []
    for n, r, d in zip(names, rows, descriptions):
        rest = header(n, d)[len(n) :].strip() if fmt == "stockholm" else ""
        records.append(SeqRecord(Seq(r), id=n, name=n, description=rest))
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
    """Write an alignment (see :func:`format_alignment`).

    Arguments:
        names, rows, format, descriptions, query: as for :func:`format_alignment`.
        target: a path (``.gz`` compresses, reproducibly: no time stamp), ``"-"`` (standard
            output) or an open text or binary handle.

    Raises:
        FormatError: as :func:`format_alignment`, or the path cannot be written.
    """
    text = format_alignment(names, rows, format, descriptions, query)
    if hasattr(target, "write"):
        binary = isinstance(target, (_io.RawIOBase, _io.BufferedIOBase))
        if binary or "b" in str(getattr(target, "mode", "")):
            target.write(text.encode("utf-8"))
        else:
            target.write(text)
        return
    path = os.fsdecode(target)
    if path == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    try:
        with open(os.path.expanduser(path), "wb") as fh:
            if path.endswith(".gz"):
                with gzip.GzipFile(filename="", mode="wb", fileobj=fh, mtime=0) as gz:
                    gz.write(text.encode("utf-8"))
            else:
                fh.write(text.encode("utf-8"))
    except OSError as exc:
        raise FormatError(
            f"cannot write {path!r}: {exc.strerror or exc}; check that its directory exists "
            f"and is writable"
        ) from None
