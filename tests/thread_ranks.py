"""Ranks that are threads of one process, for code that shares work over a session: what
such code uses of :class:`~torchmsa.distributed.Session` (``rank``, ``size``, ``leader``,
``tag``, ``say``, ``all_gather``, ``broadcast``, ``to_leader``, ``from_leader``),
meeting at barriers. One rank computes at a time (numba's parallel functions must not be
entered from two threads at once): a rank holds the process's lock except while it meets the
others."""

from __future__ import annotations

import threading


class ThreadRanks:
    """``size`` ranks; :meth:`run` calls ``work(rank_view)`` in one thread per rank and
    returns every rank's result (raising the first error)."""

    def __init__(self, size: int):
        self.size = size
        self.barrier = threading.Barrier(size, timeout=120)
        self.box: list = [None] * size
        self.lock = threading.Lock()
        self.said: list[str] = []

    def run(self, work) -> list:
        out, errors = [None] * self.size, []

        def one(r: int) -> None:
            self.lock.acquire()
            try:
                out[r] = work(_Rank(self, r))
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)
                self.barrier.abort()
            finally:
                self.lock.release()

        threads = [threading.Thread(target=one, args=(r,)) for r in range(self.size)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            raise errors[0]
        return out


class _Rank:
    def __init__(self, ranks: ThreadRanks, rank: int):
        self.ranks, self.rank, self.size = ranks, rank, ranks.size
        self.leader = rank == 0
        self.tag = f"rank {rank}/{ranks.size} (thread)"

    def say(self, line: str) -> None:
        self.ranks.said.append(line)

    def _swap(self, obj):
        self.ranks.box[self.rank] = obj
        self.ranks.lock.release()
        try:
            self.ranks.barrier.wait()
            got = list(self.ranks.box)
            self.ranks.barrier.wait()
        finally:
            self.ranks.lock.acquire()
        return got

    def all_gather(self, obj) -> list:
        return self._swap(obj)

    def broadcast(self, obj=None):
        return self._swap(obj if self.leader else None)[0]

    def to_leader(self, tensor):
        got = self._swap(tensor.clone())
        return [t.to(tensor.device) for t in got] if self.leader else None

    def from_leader(self, tensor):
        got = self._swap(tensor.clone() if self.leader else None)
        return got[0].to(tensor.device)
