"""Writing alignments: text in each write format, names and headers checked so that nothing is
changed silently, and files replaced whole (a temporary file in the same folder, renamed)."""

from __future__ import annotations

import contextlib
import gzip
import io as _io
import os
import re
import stat
import sys
import tempfile
from typing import IO, TextIO

from torchmsa.errors import ArgumentError, EmptyInputError, FormatError
from torchmsa.io.formats import (
    BIOPYTHON,
    CLUSTAL_HEADERS,
    WRITE_FORMATS,
    check_format,
    output_format,
)
from torchmsa.records import bulk, header

__all__ = [
    "a3m_rows",
    "check_writable",
    "Replacement",
    "format_alignment",
    "replaceable",
    "write_alignment",
    "write_encoded",
    "write_file",
    "write_stdout",
]

CLUSTAL_NAME_MAX = 30
# Biopython's PHYLIP writer drops "[](),", and turns ":;" into "|"
PHYLIP_BANNED = "[](),:;"


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


def _stockholm_description(name: str, line: str) -> str:
    """The ``#=GS DE`` text that reads back as header ``line``, else :class:`FormatError`."""
    if line == name:
        return ""
    rest = line[len(name) + 1 :]
    if line.startswith(name + " ") and rest and rest == " ".join(rest.split()):
        return rest
    raise FormatError(
        f"stockholm cannot hold the header of sequence {name!r} exactly ({line!r}: its "
        f"description must follow the name after one space, with single spaces between words "
        f"and no other whitespace); write fasta or a3m, which keep it byte for byte"
    )


def check_writable(names, descriptions, format: str) -> None:
    """Raise :class:`FormatError`, naming the sequence, unless ``format`` can hold every name
    (and, for ``fasta``, ``a3m`` and ``stockholm``, every header line) exactly; Clustal and
    PHYLIP carry names only. The command line calls it before aligning.

    Arguments:
        names: row names (ids).
        descriptions: whole header lines, one per row (``None``: the names).
        format: one of :data:`WRITE_FORMATS`.
    """
    fmt = check_format(format, WRITE_FORMATS, "write")
    names = [str(n) for n in names]
    descriptions = names if descriptions is None else [str(d) for d in descriptions]
    every = "".join(names) + "".join(descriptions)
    breaks = "\n" in every or "\r" in every  # one scan; the loop names the first one
    for name, d in zip(names, descriptions) if breaks else ():
        for text in (name, d):
            if "\n" in text or "\r" in text:
                raise FormatError(
                    f"the name or description {text!r} of sequence {name!r} holds a line "
                    f"break, which would corrupt the {fmt} file; remove it"
                )
    if fmt not in ("fasta", "a3m"):
        _check_names(names, fmt)
    if fmt == "stockholm":
        for name, d in zip(names, descriptions):
            _stockholm_description(name, header(name, d))


def _check_names(names: list[str], fmt: str) -> None:
    seen = set()
    for name in names:
        if not name or any(c.isspace() for c in name):
            raise FormatError(
                f"{fmt} cannot hold the name {name!r} (empty or with spaces); rename it or "
                f"write fasta"
            )
        if fmt == "clustal" and len(name) > CLUSTAL_NAME_MAX:
            raise FormatError(
                f"clustal holds names of up to {CLUSTAL_NAME_MAX} characters and {name!r} has "
                f"{len(name)}; shorten it, or write stockholm, phylip or fasta"
            )
        if fmt == "clustal" and name in CLUSTAL_HEADERS:
            raise FormatError(f"clustal reads the name {name!r} as a header line; rename it")
        if fmt == "stockholm" and (name.startswith("#") or name == "//"):
            raise FormatError(f"stockholm reads the name {name!r} as markup; rename it")
        if fmt == "phylip" and any(c in PHYLIP_BANNED for c in name):
            raise FormatError(
                f"phylip cannot hold the name {name!r} (Biopython would change its "
                f"{PHYLIP_BANNED!r} characters); rename it or write fasta"
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
        FormatError: a name or header the format cannot hold (see :func:`check_writable`),
            or rows it cannot hold.
        ArgumentError: unknown format, or counts of names, rows and descriptions that differ.
    """
    fmt = check_format(format, WRITE_FORMATS, "write")
    with bulk():
        rows = [str(r) for r in rows]
        names = [str(n) for n in names]
        descriptions = _check_alignment(names, rows, descriptions, fmt, query)
        check_writable(names, descriptions, fmt)
        if fmt in ("fasta", "a3m"):
            body = a3m_rows(rows, query) if fmt == "a3m" else rows
            if fmt == "a3m":
                _check_a3m(names, rows, query)
            return "".join(
                [f">{header(n, d)}\n{r}\n" for n, d, r in zip(names, descriptions, body)]
            )
    # here: FASTA and A3M, the common cases, need no Biopython (issue #36)
    from Bio import AlignIO
    from Bio.Align import MultipleSeqAlignment
    from Bio.Seq import Seq
    from Bio.SeqRecord import SeqRecord

    if fmt == "phylip":
        rows = [r.replace(".", "-") for r in rows]  # '.' means "as the first row" in PHYLIP
    records = []
    for n, r, d in zip(names, rows, descriptions):
        rest = _stockholm_description(n, header(n, d)) if fmt == "stockholm" else ""
        records.append(SeqRecord(Seq(r), id=n, name=n, description=rest))
    handle = _io.StringIO()
    AlignIO.write(MultipleSeqAlignment(records), handle, BIOPYTHON[fmt])
    return handle.getvalue()


_PLAIN_ROW = re.compile(r"[A-Za-z.\-]*")


def _check_a3m(names: list[str], rows: list[str], query: int) -> None:
    """A3M marks insertions by lower case: a residue with no lower case (``*``) cannot be one."""
    inserts = [k for k, ch in enumerate(rows[query]) if ch in "-."]
    for name, row in zip(names, rows):
        if _PLAIN_ROW.fullmatch(row):
            continue
        odd = [row[k] for k in inserts if row[k] not in "-." and not row[k].lower().islower()]
        if odd:
            raise FormatError(
                f"a3m cannot hold {odd[0]!r} of sequence {name!r} in an insert column (A3M "
                f"marks insertions by lower case, and {odd[0]!r} has none); pick another query "
                f"row, remove it, or write fasta"
            )


def _umask() -> int:
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    return 0o022


def write_file(path: str | os.PathLike, data) -> None:
    """Write ``data`` (bytes, or any buffer such as a ``uint8`` array) to ``path`` whole or
    not at all: into a temporary file in the same folder, renamed over ``path`` once
    complete, so that a failed run leaves no partial file and ``path`` may be the input that
    was read. Devices and pipes (``/dev/null``) are written directly (:func:`replaceable`); a
    symbolic link is followed.

    Raises:
        OSError: the folder does not exist or cannot be written.
    """
    target = Replacement(path)
    if target.tmp is None:
        with open(target.real, "wb") as fh:
            fh.write(data)
        return
    try:
        with open(target.tmp, "wb") as fh:
            fh.write(data)
        target.commit()
    except BaseException:
        target.discard()
        raise


def _target(path: str | os.PathLike) -> tuple[str, os.stat_result | None]:
    """The path a write reaches (a symbolic link followed) and its status, if it exists."""
    real = os.path.realpath(os.path.expanduser(os.fspath(path)))
    try:
        return real, os.stat(real)
    except OSError:
        return real, None


def replaceable(path: str | os.PathLike) -> bool:
    """Whether a write to ``path`` goes through a temporary file renamed over it (a regular
    file, or none yet), not straight into it (a device, a pipe)."""
    old = _target(path)[1]
    return old is None or stat.S_ISREG(old.st_mode)


class Replacement:
    """The steps of :func:`write_file` apart, for writers that fill the file in parts (the
    ranks of a distributed run, each at its own offset): an empty temporary file ``tmp``
    beside ``path`` (a symbolic link followed), which :meth:`commit` renames over it with
    its permissions (or the umask's for a new file) and :meth:`discard` removes. Where
    ``path`` exists and is not a regular file (a device, a pipe), ``tmp`` is ``None`` and
    the caller writes ``real`` directly.

    Raises:
        OSError: the folder does not exist or cannot be written.
    """

    def __init__(self, path: str | os.PathLike):
        self.real, self.old = _target(path)
        self.tmp: str | None = None
        if self.old is not None and not stat.S_ISREG(self.old.st_mode):
            return
        folder, name = os.path.dirname(self.real), os.path.basename(self.real)
        fd, self.tmp = tempfile.mkstemp(prefix=f".{name}.", dir=folder)
        os.close(fd)

    def commit(self) -> None:
        os.chmod(self.tmp, stat.S_IMODE(self.old.st_mode) if self.old else 0o666 & ~_umask())
        os.replace(self.tmp, self.real)

    def discard(self) -> None:
        if self.tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(self.tmp)


def write_stdout(text) -> None:
    """``text`` on standard output as UTF-8 bytes, whatever the locale's encoding (bytes, or
    any buffer such as a ``uint8`` array, are written as they are)."""
    sys.stdout.flush()
    data = text.encode("utf-8") if isinstance(text, str) else text
    if hasattr(sys.stdout, "buffer"):
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
    else:
        sys.stdout.write(bytes(data).decode("utf-8"))
        sys.stdout.flush()


def write_alignment(
    names: list[str],
    rows: list[str],
    target: str | os.PathLike | IO[str] | TextIO,
    format: str | None = None,
    descriptions: list[str] | None = None,
    query: int = 0,
) -> None:
    """Write an alignment (see :func:`format_alignment`).

    Arguments:
        names, descriptions, query: as for :func:`format_alignment`.
        rows: gapped rows.
        target: a path (``.gz`` compresses, reproducibly: no time stamp; the file is replaced
            whole, see :func:`write_file`), ``"-"`` (standard output) or an open text or
            binary handle.
        format: one of :data:`WRITE_FORMATS`; ``None``: from the file name (``x.aln`` is
            Clustal, ``x.sto.gz`` Stockholm, see :func:`output_format`), else FASTA.

    Raises:
        FormatError: as :func:`format_alignment`, or the path cannot be written.
    """
    text = format_alignment(names, rows, output_format(target, format), descriptions, query)
    write_encoded(target, text.encode("utf-8"))


def write_encoded(target: str | os.PathLike | IO[str] | TextIO, data: bytes) -> None:
    """Write a file's UTF-8 ``data`` to ``target`` as :func:`write_alignment` writes its text:
    a path (``.gz`` compresses, reproducibly), ``"-"`` or an open text or binary handle.

    Raises:
        FormatError: the path cannot be written.
    """
    if hasattr(target, "write"):
        binary = isinstance(target, (_io.RawIOBase, _io.BufferedIOBase))
        if binary or "b" in str(getattr(target, "mode", "")):
            target.write(data)
        else:
            target.write(data.decode("utf-8"))
        return
    path = os.fsdecode(target)
    if path == "-":
        write_stdout(data)
        return
    if path.endswith(".gz"):
        buf = _io.BytesIO()
        with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0) as gz:
            gz.write(data)
        data = buf.getvalue()
    try:
        write_file(path, data)
    except OSError as exc:
        raise FormatError(
            f"cannot write {path!r}: {exc.strerror or exc}; check that its directory exists "
            f"and is writable"
        ) from None
