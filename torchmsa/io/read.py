"""Reading sequences and alignments: our own FASTA-family parser, Biopython for the rest."""

from __future__ import annotations

import io as _io
import operator
from typing import TYPE_CHECKING

from torchmsa.errors import EmptyInputError, FormatError, InputLimitError, TorchMSAError
from torchmsa.io.formats import BIOPYTHON, READ_FORMATS, check_format, guess_format
from torchmsa.io.sources import InputLimits, read_text
from torchmsa.records import Record, bulk, header

if TYPE_CHECKING:
    from Bio.SeqRecord import SeqRecord

__all__ = ["read_sequences", "read_alignment", "parse"]

HHSUITE_ROWS = {"ss_pred", "ss_conf", "ss_dssp", "sa_dssp"}
MAX_EOF_READS = 1000
FASTA_LIKE = ("fasta", "a2m", "a3m")


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
            if self._eof_reads > MAX_EOF_READS:
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
            if fmt in FASTA_LIKE and not line.startswith(">"):
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
_SPACE_BUT_NEWLINE = (" ", "\t", "\r")


def _fasta_records(text: str, headers: int | None = None) -> list[Record]:
    """FASTA-like records: a record starts at each line that starts with ``>``; its
    description is the rest of that line exactly as given (Biopython strips trailing
    whitespace; we keep it, so that headers come out as they went in), its name the first word
    (as Biopython takes it), and its sequence the lines up to the next record with spaces,
    tabs and line ends removed. ``text`` starts with ``>`` and has ``\\n`` line ends.
    """
    with bulk():
        titles, bodies = _two_line_records(text, headers)
        if titles is None:
            parts = [chunk.partition("\n") for chunk in text[1:].split("\n>")]
            titles = [p[0] for p in parts]
            # line ends go by a plain replace; the slower translate only where other spaces are
            bodies = [p[2].replace("\n", "") for p in parts]
        if any(c in text for c in _SPACE_BUT_NEWLINE):
            bodies = [
                b.translate(_SEQUENCE_SPACE) if any(c in b for c in _SPACE_BUT_NEWLINE) else b
                for b in bodies
            ]
        names = [w[0] if w else "" for w in (t.split(None, 1) for t in titles)]
        return list(map(Record, names, titles, bodies))


def _two_line_records(text: str, headers: int | None = None):
    """``(titles, bodies)`` where every record of ``text`` is one header line and one
    sequence line (what most large files hold), from one split at line ends; else ``(None,
    None)``. The same records as the general split: every even line is a header, no odd line
    starts with ``>`` (a header) and none is missing (an empty record) or blank between
    records; the final line end is optional. A count comes first, so that other files are
    not split for nothing: as many lines as twice the ``headers`` (counted here when
    ``None``)."""
    headers = text.count("\n>") + 1 if headers is None else headers
    if text.count("\n") + 1 - text.endswith("\n") != 2 * headers:
        return None, None
    lines = text.split("\n")
    if len(lines) % 2 and lines[-1] == "":
        lines.pop()
    if len(lines) % 2:
        return None, None
    heads, bodies = lines[0::2], lines[1::2]
    if not all(map(_is_header, heads)) or any(map(_is_header, bodies)):
        return None, None
    return [h[1:] for h in heads], bodies


_is_header = operator.methodcaller("startswith", ">")


def _record(r: SeqRecord, fmt: str) -> Record:
    """A record of an alignment format Biopython reads (Stockholm, Clustal, ...)."""
    name = r.id
    if fmt == "stockholm" and r.description != name:
        description = header(name, " ".join(r.description.split()))
    else:
        description = name
    return Record(name, description, str(r.seq))


def parse(text: str, fmt: str, label: str, max_sequences: int) -> list[list[Record]]:
    """The alignments in ``text`` (one list holding every record for FASTA-like formats).

    Raises:
        FormatError, EmptyInputError: as :func:`read_sequences`.
        InputLimitError: more than ``max_sequences`` records.
    """
    text = _check_start(text, fmt, label)
    if fmt in FASTA_LIKE:
        # counted before records are built: they take several times the text's memory
        headers = text.count("\n>") + 1
        if headers > max_sequences:
            raise InputLimitError(label, "max_sequences", max_sequences)
        groups = [_fasta_records(text, headers)]
        if fmt == "a3m":
            groups = [[r for r in g if r.name not in HHSUITE_ROWS] for g in groups]
    else:
        from Bio import AlignIO  # here: FASTA, the common case, needs no Biopython (issue #36)

        handle = _GuardedText(text, label, fmt)
        try:
            groups, count = [], 0
            for aln in AlignIO.parse(handle, BIOPYTHON[fmt]):
                count += len(aln)
                if count > max_sequences:
                    raise InputLimitError(label, "max_sequences", max_sequences)
                groups.append([_record(r, fmt) for r in aln])
        except TorchMSAError:
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


def _load(source, format, limits) -> tuple[str, str, list[list[Record]]]:
    limits = InputLimits() if limits is None else limits
    label, text = read_text(source, limits)
    if format is None:
        fmt = guess_format(label, text)
    else:
        fmt = check_format(format, READ_FORMATS, "read")
    return label, fmt, parse(text, fmt, label, limits.max_sequences)


def read_sequences(
    source, format: str | None = None, *, limits: InputLimits | None = None
) -> list[Record]:
    """Read sequences (gaps are kept here and dropped at encoding).

    Arguments:
        source: a path, ``"-"`` for standard input, or an open handle.
        format: one of :data:`READ_FORMATS`; guessed from the content and name when ``None``.
        limits: how much input to take (:class:`InputLimits`; ``None``: its defaults).

    Returns:
        :class:`~torchmsa.records.Record` items in file order (every alignment of a
        multi-alignment Stockholm or Clustal file, one after the other). ``description`` is the
        whole header line as given (FASTA), ``"name DE-text"`` (Stockholm), else the name.

    Raises:
        FormatError: the file cannot be read, or not as ``format``.
        EmptyInputError: it holds no sequences.
        InputLimitError: it is larger than ``limits`` allow.
        ArgumentError: ``format`` is not a read format.
    """
    _, _, groups = _load(source, format, limits)
    return [r for g in groups for r in g]


def read_alignment(
    source, format: str | None = None, *, limits: InputLimits | None = None
) -> list[Record]:
    """Read one alignment: rows of equal length, ``.`` gaps turned into ``-``, case kept.

    A3M rows (insertions as lowercase letters, insert columns implicit) are expanded to a
    plain alignment, with gaps in the other rows at each insertion.

    Arguments:
        source: a path, ``"-"`` for standard input, or an open handle.
        format: one of :data:`READ_FORMATS`; guessed from the content and name when ``None``.
        limits: how much input to take (:class:`InputLimits`; ``None``: its defaults).

    Returns:
        The rows as :class:`~torchmsa.records.Record` items, file order.

    Raises:
        FormatError: the file cannot be read, its rows differ in length, or it holds several
            alignments.
        EmptyInputError: it holds no sequences.
        InputLimitError: it is larger than ``limits`` allow.
    """
    label, fmt, groups = _load(source, format, limits)
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
