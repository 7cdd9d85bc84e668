"""Reading an existing MSA (HHblits, jackhmmer, ColabFold, ...) as rows and a deletion matrix.

A3M and A2M keep their insert states out of the alignment, as AlphaFold's ``parse_a3m`` does:
lowercase letters are residues inserted relative to the match columns and are removed from the
row; ``deletion_matrix[i][j]`` counts row i's lowercase letters between its match columns j-1
and j (before column 0 for j = 0; those after the last match column are not counted). Match
columns are upper-case letters, ``-`` and ``*``; ``.`` (a gap in an insert column, A2M) is
dropped like a lowercase letter but counts as no deletion. AlphaFold's parser would keep a
``.`` as a column; HH-suite writes none in A3M.

Every other format (FASTA, Stockholm, Clustal, PHYLIP) is read as a plain alignment: every
column kept, ``.`` read as ``-``, case kept as given.
"""

from __future__ import annotations

import gzip
import io as _io
import os
import sys
import zlib
from typing import NamedTuple

import numpy as np
import torch

from torchmsa import io
from torchmsa.alphabet import INVALID, Alphabet, encode, resolve_alphabet
from torchmsa.errors import ArgumentError, EmptyInputError, FormatError

__all__ = ["MSARows", "EncodedMSA", "read_msa", "parse_a3m", "encode_rows", "encode_msa"]

INSERT_FORMATS = ("a2m", "a3m")
_SNIFF_BYTES = 1 << 16


class MSARows(NamedTuple):
    """An MSA as read: ids, header lines, aligned rows (match columns for A2M/A3M), the
    ``int32 [N, L]`` deletion matrix (``None`` for formats without insert states), the rows
    in A3M form (``None`` likewise) and the format that was read."""

    names: list[str]
    descriptions: list[str]
    rows: list[str]
    deletions: np.ndarray | None
    a3m: list[str] | None
    format: str


def parse_a3m(rows: list[str], names: list[str] | None = None) -> tuple[list[str], np.ndarray]:
    """Split A3M (or A2M) rows into match-column rows and AlphaFold's deletion matrix.

    Arguments:
        rows: the rows as written in the file (lowercase insertions, ``.`` insert gaps).
        names: the row names, for error messages.

    Returns:
        ``(match_rows, deletions)``: rows with lowercase letters and ``.`` removed, and
        ``int32 [N, L]`` insertion counts before each match column.

    Raises:
        FormatError: rows with different numbers of match columns, naming both.

    >>> parse_a3m(["MKVLA", "MKaaVL-", "-KVLAc"])[1].tolist()
    [[0, 0, 0, 0, 0], [0, 0, 2, 0, 0], [0, 0, 0, 0, 0]]
    """
    n = len(rows)
    raw = np.frombuffer("".join(rows).encode("ascii", "replace"), dtype=np.uint8)
    sizes = np.fromiter((len(r) for r in rows), dtype=np.int64, count=n)
    starts = np.concatenate([[0], np.cumsum(sizes)])
    lower = (raw >= ord("a")) & (raw <= ord("z"))
    keep = ~lower & (raw != ord("."))
    # lowercase letters before each byte of the buffer
    before = np.concatenate([[0], np.cumsum(lower, dtype=np.int64)])
    kept = np.concatenate([[0], np.cumsum(keep, dtype=np.int64)])
    width = kept[starts[1:]] - kept[starts[:-1]]
    if n and np.any(width != width[0]):
        k = int(np.flatnonzero(width != width[0])[0])
        who = names if names is not None else [f"row {i + 1}" for i in range(n)]
        raise FormatError(
            f"A3M row {who[k]!r} has {width[k]} match columns (upper case and '-') but "
            f"{who[0]!r} has {width[0]}; the file is damaged or not A3M"
        )
    L = int(width[0]) if n else 0
    pos = np.flatnonzero(keep)
    # [N, L] lowercase count before each match byte, and before each row's start
    at = before[pos].reshape(n, L)
    first = before[starts[:-1]][:, None]
    prev = np.concatenate([first, at[:, :-1]], axis=1) if L else at
    deletions = (at - prev).astype(np.int32)
    match = raw[pos].reshape(n, L)
    return [r.tobytes().decode("ascii") for r in match], deletions


def _sniff(data: bytes | str) -> str:
    """The first bytes of ``data`` as text (gzip undone), for :func:`torchmsa.io.guess_format`."""
    if isinstance(data, str):
        return data[:_SNIFF_BYTES]
    head = data[:_SNIFF_BYTES]
    if head[:2] == b"\x1f\x8b":
        try:
            head = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(head, _SNIFF_BYTES)
        except zlib.error:
            head = b""
    return head.decode("utf-8", "replace")


def _materialise(source) -> tuple[object, str, str]:
    """``(source to read, label, head text)``; a handle or stdin is read once into memory."""
    if hasattr(source, "read"):
        label = str(getattr(source, "name", "<handle>"))
        try:
            data = source.read()
        except UnicodeDecodeError as exc:
            raise FormatError(
                f"{label}: not text in the handle's encoding ({exc.reason} at byte {exc.start}); "
                f"open the file in binary mode ('rb') or pass its path"
            ) from None
    elif os.fsdecode(source) == "-":
        label = "<stdin>"
        stdin = sys.stdin
        if stdin is None or (hasattr(stdin, "isatty") and stdin.isatty()):
            raise EmptyInputError(
                "'-' reads an MSA from standard input, but nothing is piped into it; pipe a "
                "file in or give its path"
            )
        data = stdin.buffer.read() if hasattr(stdin, "buffer") else stdin.read()
    else:
        path = os.path.expanduser(os.fsdecode(source))
        try:
            with open(path, "rb") as fh:
                head = fh.read(_SNIFF_BYTES)
        except OSError:
            head = b""  # io's reader raises the error that names the path
        if head[:2] == b"\x1f\x8b":
            try:
                with gzip.open(path, "rb") as fh:
                    head = fh.read(_SNIFF_BYTES)
            except (OSError, EOFError, zlib.error):
                head = b""
        return source, os.fsdecode(source), _sniff(head)
    handle = _io.StringIO(data) if isinstance(data, str) else _io.BytesIO(data)
    handle.name = label
    return handle, label, _sniff(data)


def read_msa(source, format: str | None = None) -> MSARows:
    """Read an alignment file as :class:`MSARows`.

    Arguments:
        source: a path (``.gz`` read transparently), ``"-"`` (standard input) or an open
            text or binary handle.
        format: one of :data:`torchmsa.io.READ_FORMATS`; ``None`` guesses it from the first
            line, else from the file name (``.a3m``, ``.a2m``, ``.sto``, ...).

    Returns:
        The rows; for A2M / A3M the match columns and the deletion matrix (module docstring).

    Raises:
        FormatError: the file cannot be read as ``format``, or its rows do not align.
        EmptyInputError: it holds no sequences.
        ArgumentError: ``format`` is not a read format.
    """
    src, label, head = _materialise(source)
    fmt = io.guess_format(label, head) if format is None else str(format).strip().lower()
    if fmt not in INSERT_FORMATS:
        records = io.read_alignment(src, format=fmt)
        names = [r.name for r in records]
        return MSARows(
            names, [r.description for r in records], [r.seq for r in records], None, None, fmt
        )
    records = io.read_sequences(src, format=fmt)
    names = [r.name for r in records]
    raw = [r.seq for r in records]
    rows, deletions = parse_a3m(raw, names)
    a3m = [r.replace(".", "") for r in raw]
    return MSARows(names, [r.description for r in records], rows, deletions, a3m, fmt)


def encode_rows(rows: list[str], alphabet: Alphabet, names: list[str]) -> np.ndarray:
    """``uint8 [N, C]`` codes of aligned rows (``-`` and ``.`` are gaps, case ignored).

    Raises:
        ArgumentError: rows of different lengths, naming the first that differs.
        InvalidCharacterError: a character ``alphabet`` does not allow, naming row and place.
    """
    n = len(rows)
    widths = [len(r) for r in rows]
    if n and any(w != widths[0] for w in widths):
        k = next(i for i, w in enumerate(widths) if w != widths[0])
        raise ArgumentError(
            f"row {names[k]!r} has {widths[k]} columns but {names[0]!r} has {widths[0]}; "
            f"aligned rows must have equal lengths (for A3M text use Alignment.read)"
        )
    raw = np.frombuffer("".join(rows).encode("ascii", "replace"), dtype=np.uint8)
    codes = alphabet.lookup[raw].reshape(n, widths[0] if n else 0)
    bad = np.flatnonzero((codes == INVALID).any(axis=1))
    if bad.size:
        k = int(bad[0])
        encode(rows[k], alphabet, names[k], k)  # raises, naming the character and its place
    return codes


class EncodedMSA(NamedTuple):
    """Checked rows as :class:`~torchmsa.Alignment`'s constructor takes them."""

    names: list[str]
    descriptions: list[str]
    residues: list[str]
    codes: torch.Tensor
    alphabet: Alphabet
    deletions: torch.Tensor | None


def encode_msa(names, rows, descriptions=None, seqtype="auto", deletion_matrix=None) -> EncodedMSA:
    """Check and encode aligned rows (:meth:`torchmsa.Alignment.from_rows`'s arguments)."""
    names, rows = [str(n) for n in names], [str(r) for r in rows]
    if len(names) != len(rows) or not rows:
        raise ArgumentError(
            f"{len(names)} names for {len(rows)} rows; give one name per row (at least one)"
        )
    descriptions = list(names) if descriptions is None else [str(d) for d in descriptions]
    if len(descriptions) != len(rows):
        raise ArgumentError(
            f"{len(descriptions)} descriptions for {len(rows)} rows; give one per row or None"
        )
    alphabet = resolve_alphabet(seqtype, rows)
    codes = torch.from_numpy(encode_rows(rows, alphabet, names).copy())
    residues = [r.replace("-", "").replace(".", "") for r in rows]
    deletions = None
    if deletion_matrix is not None:
        deletions = torch.as_tensor(deletion_matrix)
        if tuple(deletions.shape) != tuple(codes.shape) or deletions.is_floating_point():
            raise ArgumentError(
                f"`deletion_matrix` must be integer counts of shape {tuple(codes.shape)} "
                f"(rows x columns); got {deletions.dtype} {tuple(deletions.shape)}"
            )
        if deletions.numel() and int(deletions.min()) < 0:
            raise ArgumentError("`deletion_matrix` holds negative counts; counts are >= 0")
        deletions = deletions.to(torch.int32)
    return EncodedMSA(names, descriptions, residues, codes, alphabet, deletions)
