"""Work handed out as the ranks come for it: guided self-scheduling through a store on rank 0.

:func:`guided` cuts the items, costliest first, into chunks of falling cost: each about
``1 / (2 R)`` of the cost not yet cut (guided self-scheduling, Polychronopoulos and Kuck 1987,
with the halving of factoring, Hummel et al. 1992), so the first chunks are large and the last
hold one small item each. Rank 0 puts the chunks in a ``torch.distributed.TCPStore`` that it
serves (:class:`Claims`); a rank that is free claims the next chunk with the store's atomic
``add``. A rank whose items ran longer than estimated claims fewer, so the ranks end within
about one small chunk of each other whatever the cost model's errors, where shares fixed in
advance (the LPT partition this replaced) are off by those errors (decision 0063). Which rank
aligns an item changes nothing in its alignment.

A chunk is any picklable object; its bytes go into the store in pieces of at most
:data:`PIECE` bytes (the store refuses a value over 8 MiB) and are deleted once claimed.
"""

from __future__ import annotations

import datetime
import math
import os
import pickle
import socket
from collections.abc import Iterator, Sequence
from typing import Any

from torchmsa.errors import ArgumentError, DistributedError

__all__ = ["PIECE", "Claims", "guided"]

PIECE = 4 << 20


def guided(costs: Sequence[float], ranks: int) -> list[list[int]]:
    """Chunks of item indices for ``ranks`` ranks: items by falling cost (ties by index),
    cut where a chunk's cost reaches ``1 / (2 ranks)`` of the cost left (see the module
    docstring). Every index is in one chunk; the chunks are the same on every rank that
    computes them from the same costs.

    >>> guided([5, 1, 1, 1, 1, 1, 1, 1, 1, 1], 2)
    [[0], [1, 2, 3], [4, 5], [6], [7], [8], [9]]
    >>> guided([0, 0], 3)
    [[0], [1]]
    """
    if isinstance(ranks, bool) or not isinstance(ranks, int) or ranks < 1:
        raise ArgumentError(f"Invalid value for `ranks` argument: {ranks!r}; give 1 or more")
    costs = [float(c) for c in costs]
    if not all(math.isfinite(c) and c >= 0 for c in costs):
        raise ArgumentError("Invalid value for `costs` argument: give finite numbers, 0 or more")
    left = sum(costs)
    chunks: list[list[int]] = []
    chunk: list[int] = []
    cost = 0.0
    for i in sorted(range(len(costs)), key=lambda i: (-costs[i], i)):
        chunk.append(i)
        cost += costs[i]
        if cost >= left / (2 * ranks):
            chunks.append(chunk)
            left, chunk, cost = left - cost, [], 0.0
    if chunk:
        chunks.append(chunk)
    return chunks


class Claims:
    """The chunks of one distributed run, claimed by whichever rank comes first.

    Every rank of the session makes one, rank 0 with the chunks (or the exception that stops
    the run: every rank then raises it), the others with ``None``; iterating gives the
    chunks this rank claims, in claim order, until none is left. Rank 0 serves the store:
    it must :meth:`close` only after every rank is done claiming (after the run's last
    collective).

    Arguments:
        session: a :class:`~torchmsa.distributed.session.Session` (``leader``,
            ``broadcast``, ``timeout_s`` and ``broken`` are used).
        chunks: rank 0's list of chunks, or an exception; ``None`` on the other ranks.
    """

    def __init__(self, session, chunks: list | BaseException | None):
        import torch.distributed as dist

        self.session, self.claimed = session, 0
        timeout = datetime.timedelta(seconds=session.timeout_s)
        self._server = None
        where: Any = None
        if session.leader:
            where = chunks
            if not isinstance(chunks, BaseException):
                host = os.environ.get("MASTER_ADDR") or socket.gethostname()
                try:
                    self._server = dist.TCPStore(
                        host, 0, None, True, timeout=timeout, wait_for_workers=False
                    )
                    for k, chunk in enumerate(chunks):
                        _put(self._server, f"chunk/{k}", pickle.dumps(chunk))
                    where = (host, self._server.port, len(chunks))
                except Exception as exc:  # noqa: BLE001 - every rank stops with it
                    where = DistributedError(session.broken("serving the work", exc))
        where = session.broadcast(where)
        if isinstance(where, BaseException):
            raise where
        host, port, self.count = where
        if self._server is not None:
            self.store = self._server
        else:
            try:
                self.store = dist.TCPStore(host, port, None, False, timeout=timeout)
            except Exception as exc:  # noqa: BLE001
                raise DistributedError(session.broken("reaching rank 0's work", exc)) from exc

    def __iter__(self) -> Iterator[Any]:
        while True:
            try:
                k = self.store.add("next", 1) - 1
                if k >= self.count:
                    return
                chunk = pickle.loads(_take(self.store, f"chunk/{k}"))
            except Exception as exc:  # noqa: BLE001 - a store error means rank 0 is gone
                raise DistributedError(self.session.broken("claiming work", exc)) from exc
            self.claimed += 1
            yield chunk

    def close(self) -> None:
        """Stop serving (rank 0); the other ranks drop their connection."""
        self.store = self._server = None


def _put(store, key: str, data: bytes) -> None:
    pieces = max(1, -(-len(data) // PIECE))
    for p in range(pieces):
        store.set(f"{key}/{p}", data[p * PIECE : (p + 1) * PIECE])
    store.set(f"{key}/n", str(pieces))


def _take(store, key: str) -> bytes:
    pieces = int(store.get(f"{key}/n"))
    data = b"".join(store.get(f"{key}/{p}") for p in range(pieces))
    for p in range(pieces):
        store.delete_key(f"{key}/{p}")
    return data
