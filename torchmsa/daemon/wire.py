"""The messages between the command and its server: a kind byte, a 4-byte big-endian length,
the payload.

Caller to server: ``REQUEST`` (JSON: argv, working directory, environment, umask, which of
the standard streams are terminals), then, while the command runs, ``STDIN`` (bytes the
server asked for; empty at end of input) and ``CONTROL`` (JSON: ``{"interrupt": true}`` on
Ctrl-C, ``{"broken_pipe": true}`` when the caller's standard output was closed).

Server to caller: ``ACCEPT`` or ``BUSY`` (the caller then runs the command itself), then
``OUT`` and ``ERR`` (bytes for the standard streams), ``NEED`` (4-byte size: read up to that
many bytes of standard input and send them) and finally ``EXIT`` (4-byte signed status).
"""

from __future__ import annotations

import json
import struct
import threading

__all__ = [
    "REQUEST", "STDIN", "CONTROL", "ACCEPT", "BUSY", "OUT", "ERR", "NEED", "EXIT", "CHUNK",
    "Channel", "as_int",
]  # fmt: skip

REQUEST, STDIN, CONTROL = b"Q", b"I", b"C"
ACCEPT, BUSY, OUT, ERR, NEED, EXIT = b"A", b"B", b"O", b"E", b"N", b"X"
CHUNK = 1 << 20  # the largest payload sent at once
_HEAD = struct.Struct(">cI")


class Channel:
    """One connection's framing; sends may come from several threads."""

    def __init__(self, sock):
        self.sock = sock
        self._send = threading.Lock()

    def send(self, kind: bytes, payload: bytes = b"") -> None:
        with self._send:
            for at in range(0, max(len(payload), 1), CHUNK):
                part = payload[at : at + CHUNK]
                self.sock.sendall(_HEAD.pack(kind, len(part)) + part)

    def send_json(self, kind: bytes, value) -> None:
        self.send(kind, json.dumps(value).encode("utf-8"))

    def send_int(self, kind: bytes, value: int) -> None:
        self.send(kind, struct.pack(">i", value))

    def recv(self) -> tuple[bytes | None, bytes]:
        """The next ``(kind, payload)``; ``(None, b"")`` when the other side has gone."""
        head = self._exactly(_HEAD.size)
        if head is None:
            return None, b""
        kind, size = _HEAD.unpack(head)
        payload = self._exactly(size) if size else b""
        return (None, b"") if payload is None else (kind, payload)

    def _exactly(self, size: int) -> bytes | None:
        buf = bytearray(size)
        view = memoryview(buf)
        got = 0
        while got < size:
            try:
                n = self.sock.recv_into(view[got:])
            except OSError:
                return None
            if n == 0:
                return None
            got += n
        return bytes(buf)


def as_int(payload: bytes) -> int:
    return struct.unpack(">i", payload)[0]
