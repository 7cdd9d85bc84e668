"""Opening an input (a path, ``"-"`` or a handle) and turning it into text, in chunks that stop
at :class:`InputLimits`: gzip undone as it streams, a byte-order mark dropped, CRLF and CR line
ends made LF, and binary or other-compressed data refused at its first chunk."""

from __future__ import annotations

import os
import sys
import zlib
from dataclasses import dataclass

from torchmsa.errors import (
    ArgumentError,
    EmptyInputError,
    FormatError,
    InputLimitError,
    ResourceError,
)

__all__ = ["InputLimits", "read_text"]

CHUNK = 1 << 20
GZIP_MAGIC = b"\x1f\x8b"
COMPRESSED = {
    b"BZh": "bzip2",
    b"\xfd7zXZ\x00": "xz",
    b"PK\x03\x04": "zip",
    b"\x28\xb5\x2f\xfd": "zstd",
}


@dataclass(frozen=True, kw_only=True)
class InputLimits:
    """How much input a reader takes before it stops with :class:`InputLimitError`.

    Arguments:
        max_input_bytes: bytes of input text; for gzip input both the compressed and the
            decompressed bytes count against it (a text handle counts characters).
        max_sequences: records in the input.
    """

    max_input_bytes: int = 4 * 2**30
    max_sequences: int = 10**8

    def __post_init__(self):
        for field in ("max_input_bytes", "max_sequences"):
            value = getattr(self, field)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ArgumentError(
                    f"Invalid value for `{field}` argument: {value!r}; give a positive integer"
                )


def _binary(label: str, lines_before: int) -> FormatError:
    return FormatError(
        f"{label}: binary data (a NUL byte on line {lines_before + 1}); give a plain-text or "
        f"gzipped sequence file"
    )


def _damaged(label: str, detail) -> FormatError:
    return FormatError(
        f"{label}: damaged gzip data ({detail}); check the download or re-compress it"
    )


class _Sink:
    """Decoded bytes gathered up to the limit, NUL bytes refused as they arrive."""

    def __init__(self, label: str, limit: int):
        self.label, self.limit = label, limit
        self.data = bytearray()

    def add(self, data: bytes) -> None:
        if not data:
            return
        if b"\x00" in data:
            lines = self.data.count(b"\n") + data[: data.index(b"\x00")].count(b"\n")
            raise _binary(self.label, lines)
        if len(self.data) + len(data) > self.limit:
            raise InputLimitError(self.label, "max_input_bytes", self.limit)
        self.data += data


def _raw_chunks(handle, first: bytes, label: str, limit: int):
    """``first`` and the rest of ``handle`` in chunks, at most ``limit`` bytes in all."""
    total, chunk = 0, first
    while chunk:
        total += len(chunk)
        if total > limit:
            raise InputLimitError(label, "max_input_bytes", limit)
        yield bytes(chunk)
        chunk = handle.read(CHUNK)


def _gunzip(chunks, sink: _Sink) -> None:
    """Decompress gzip members (concatenated, zero padding between them allowed) into ``sink``,
    at most :data:`CHUNK` output bytes per step so that a bomb stops at the limit."""
    d, between = zlib.decompressobj(31), b""
    for data in chunks:
        while True:
            if d is None:
                between = (between + data).lstrip(b"\x00")
                data = b""
                if len(between) < 2:
                    break
                if between[:2] != GZIP_MAGIC:
                    raise _damaged(sink.label, "data after the end of the gzip stream")
                d, data, between = zlib.decompressobj(31), between, b""
            if not data:
                break
            try:
                sink.add(d.decompress(data, CHUNK))
            except zlib.error as exc:
                raise _damaged(sink.label, exc) from None
            data = d.unused_data if d.eof else d.unconsumed_tail
            d = None if d.eof else d
    if d is not None:
        try:
            sink.add(d.flush())
        except zlib.error as exc:
            raise _damaged(sink.label, exc) from None
        if not d.eof:
            raise _damaged(sink.label, "the file ends before the end of the gzip stream")


def _read_binary(handle, first: bytes, label: str, limits: InputLimits) -> bytearray:
    head = bytes(first)
    while 0 < len(head) < 6:
        more = handle.read(CHUNK)
        if not more:
            break
        head += more
    for magic, kind in COMPRESSED.items():
        if head.startswith(magic):
            raise FormatError(
                f"{label}: {kind}-compressed; decompress it first (torchmsa reads plain "
                f"and gzip files)"
            )
    sink = _Sink(label, limits.max_input_bytes)
    chunks = _raw_chunks(handle, head, label, limits.max_input_bytes)
    if head[:2] == GZIP_MAGIC:
        _gunzip(chunks, sink)
        for magic, kind in COMPRESSED.items():
            if sink.data.startswith(magic):
                raise FormatError(f"{label}: {kind}-compressed inside gzip; decompress it first")
    else:
        for chunk in chunks:
            sink.add(chunk)
    return sink.data


def _read_str(handle, first: str, label: str, limits: InputLimits) -> str:
    parts, size, lines, chunk = [], 0, 0, first
    while chunk:
        if "\x00" in chunk:
            raise _binary(label, lines + chunk[: chunk.index("\x00")].count("\n"))
        size += len(chunk)
        if size > limits.max_input_bytes:
            raise InputLimitError(label, "max_input_bytes", limits.max_input_bytes)
        lines += chunk.count("\n")
        parts.append(chunk)
        chunk = handle.read(CHUNK)
    return "".join(parts)


def _decode(label: str, data: bytearray | str) -> str:
    if not isinstance(data, str):
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = data[: exc.start].count(b"\n") + 1
            raise FormatError(
                f"{label}: line {line} is not UTF-8 text (byte {data[exc.start]:#04x}); save "
                f"the file as ASCII or UTF-8"
            ) from None
    return data.lstrip("\ufeff").replace("\r\n", "\n").replace("\r", "\n")


def _read_handle(handle, label: str, limits: InputLimits) -> str:
    try:
        first = handle.read(CHUNK)
        if isinstance(first, str):
            return _decode(label, _read_str(handle, first, label, limits))
        return _decode(label, _read_binary(handle, first or b"", label, limits))
    except UnicodeDecodeError as exc:
        raise FormatError(
            f"{label}: not text in the handle's encoding ({exc.reason} at byte {exc.start}); "
            f"open the file in binary mode ('rb') or pass its path"
        ) from None


def _open_error(label: str, exc: OSError) -> FormatError:
    if isinstance(exc, IsADirectoryError):
        return FormatError(f"{label!r} is a directory; give a sequence file inside it")
    if isinstance(exc, PermissionError):
        return FormatError(f"cannot read {label!r}: permission denied; check its mode")
    shown = label if len(label) <= 60 else label[:57] + "..."
    if label.lstrip().startswith(">"):
        hint = "; to read FASTA text held in a string, pass io.StringIO(text)"
    elif "/" not in label and "." not in label:
        hint = "; to pass sequences as text, put them in a list: ['MKV...', ...]"
    else:
        hint = "; check the path" if isinstance(exc, FileNotFoundError) else ""
    what = "no such file" if isinstance(exc, FileNotFoundError) else "cannot read"
    return FormatError(f"{what}: {shown!r} ({exc.strerror or exc}){hint}")


def read_text(source, limits: InputLimits | None = None) -> tuple[str, str]:
    """``(label, text)`` of a path, ``"-"`` (standard input) or an open handle (text or
    binary), read in chunks that stop at ``limits``.

    Raises:
        FormatError: the input cannot be opened, is binary, damaged gzip, compressed otherwise,
            or not UTF-8.
        EmptyInputError: ``"-"`` with nothing piped in.
        InputLimitError: the input is larger than ``limits.max_input_bytes``.
        ResourceError: memory ran out before the limit was reached.
    """
    limits = InputLimits() if limits is None else limits
    if hasattr(source, "read"):
        label = str(getattr(source, "name", "<handle>"))
        return label, _guarded(_read_handle, source, label, limits)
    label = os.fsdecode(source)
    if label == "-":
        stdin = sys.stdin
        if stdin is None or (hasattr(stdin, "isatty") and stdin.isatty()):
            raise EmptyInputError(
                "'-' reads sequences from standard input, but nothing is piped into it; pipe "
                "a file in or give its path"
            )
        handle = stdin.buffer if hasattr(stdin, "buffer") else stdin
        return "<stdin>", _guarded(_read_handle, handle, "<stdin>", limits)
    try:
        with open(os.path.expanduser(label), "rb") as fh:
            return label, _guarded(_read_handle, fh, label, limits)
    except OSError as exc:
        raise _open_error(label, exc) from None


def _available_memory() -> int:
    """Bytes this process could still allocate, as far as Linux tells (0 when unknown)."""
    found = []
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    found.append(int(line.split()[1]) * 1024)
        import resource

        soft = resource.getrlimit(resource.RLIMIT_AS)[0]
        if soft != resource.RLIM_INFINITY:
            with open("/proc/self/statm") as fh:
                found.append(soft - int(fh.read().split()[0]) * os.sysconf("SC_PAGE_SIZE"))
    except (OSError, ValueError, ImportError):
        pass
    return max(0, min(found)) if found else 0


def _guarded(read, handle, label: str, limits: InputLimits) -> str:
    try:
        return read(handle, label, limits)
    except MemoryError:
        raise ResourceError(
            f"reading {label} (up to InputLimits.max_input_bytes)",
            limits.max_input_bytes,
            _available_memory(),
            "lower the limit (command line: --max-input-bytes), free memory or raise "
            "`ulimit -v`, or split the input",
        ) from None
