"""Reading a submission off an HTTP request: the size limit (also after gzip), the text, the
sequence count, form fields and the job options, each refusal an :class:`ApiError` with the
status and one-line message the API answers with."""

from __future__ import annotations

import zlib
from collections.abc import Iterable

from starlette.requests import Request

from torchmsa.config import MODES, TREES
from torchmsa.serve.jobs import OPTIONS  # job options a request may set

__all__ = [
    "ApiError",
    "OPTIONS",
    "gunzip_limited",
    "parse_options",
    "read_limited",
    "replayed",
    "submission_text",
]

_NUMBERS = ("gap_open", "gap_extend")
_CHOICES = {"mode": MODES, "tree": TREES, "seqtype": ("auto", "protein", "dna", "rna")}


class ApiError(Exception):
    """An HTTP error with the one-line message the JSON body carries."""

    def __init__(self, status: int, message: str, headers: dict | None = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers


def _count_records(text: str) -> int:
    """FASTA records: lines that start with ``>``."""
    return text.count("\n>") + text.startswith(">")


def gunzip_limited(data: bytes, limit: int) -> bytes:
    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        out = d.decompress(data, limit + 1)
    except zlib.error as exc:
        raise ApiError(422, f"the body is damaged gzip data ({exc}); re-compress it") from None
    if len(out) > limit:
        raise ApiError(413, f"the body unpacks to more than the limit of {limit:,} bytes")
    return out


def submission_text(data: bytes, limit: int, max_seqs: int) -> str:
    if data[:2] == b"\x1f\x8b":
        data = gunzip_limited(data, limit)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ApiError(
            422, f"the sequences are not UTF-8 text ({exc.reason} at byte {exc.start}); send FASTA"
        ) from None
    if not text.strip():
        raise ApiError(422, "no sequences were given: the body is empty; send FASTA text")
    n = _count_records(text)
    if n > max_seqs:
        raise ApiError(
            413, f"{n:,} sequences exceed this server's limit of {max_seqs:,} per job; split them"
        )
    return text


async def read_limited(request: Request, limit: int) -> bytes:
    size = request.headers.get("content-length")
    if size is not None and size.isdigit() and int(size) > limit:
        raise ApiError(413, f"the body ({int(size):,} bytes) exceeds the limit of {limit:,} bytes")
    chunks, total = [], 0
    async for chunk in request.stream():
        total += len(chunk)
        if total > limit:
            raise ApiError(413, f"the body exceeds the limit of {limit:,} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def replayed(request: Request, body: bytes) -> Request:
    """A request whose body stream yields ``body`` (already read, for the form parser)."""
    sent = False

    async def receive():
        nonlocal sent
        if sent:
            return {"type": "http.disconnect"}
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return Request(request.scope, receive)


def parse_options(pairs: Iterable[tuple[str, str]]) -> dict:
    options: dict = {}
    for key, value in pairs:
        if key in ("fasta", "file"):
            continue
        if key not in OPTIONS:
            raise ApiError(422, f"unknown option {key!r}; the options are {', '.join(OPTIONS)}")
        value = str(value).strip()
        if key == "config":  # one NAME=VALUE per field, repeatable
            if value:
                options.setdefault("config", []).append(value)
            continue
        if value == "":
            continue
        if key in _NUMBERS:
            try:
                number = float(value)
            except ValueError:
                raise ApiError(
                    422, f"Invalid value for `{key}` argument: {value!r}; give a number"
                ) from None
            options[key] = int(number) if number.is_integer() else number
        else:
            allowed = _CHOICES.get(key)
            if allowed and value not in allowed:
                raise ApiError(
                    422,
                    f"Invalid value for `{key}` argument: {value!r}; expected one of "
                    f"{', '.join(allowed)}",
                )
            options[key] = value
    return options
