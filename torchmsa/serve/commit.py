"""Group commit for ``POST /jobs``: the jobs submitted while one write is under way are
written together by the next, in one transaction.

Each request still gets its reply only after its job is persisted. At a steady rate every
write holds one job and nothing waits longer than before; under a burst, a few writes hold
them all, instead of each request queueing on SQLite's one write lock behind the others (and
behind the workers' writes) for a transaction of its own. A write starts once a pass of the
event loop has staged no more jobs, so a burst's requests that are already readable share
the first write (its thread would otherwise compete with their parsing for the interpreter,
and they would wait for a second write); the workers are woken once per write.
"""

from __future__ import annotations

import asyncio

from starlette.concurrency import run_in_threadpool

__all__ = ["GroupCommit"]


class GroupCommit:
    """Writes staged jobs (:meth:`~torchmsa.serve.store.Store.staged`) through
    :meth:`~torchmsa.serve.store.Store.insert`, many at a time (see the module docstring),
    and calls ``notify`` (wakes the workers) once per write that queued any.
    One per application, used from its event loop."""

    def __init__(self, store, notify=None):
        self.store = store
        self.notify = notify  # called once after a write that queued jobs
        self._pending: list[tuple[object, asyncio.Future]] = []
        self._task: asyncio.Task | None = None

    def __repr__(self) -> str:
        return f"GroupCommit({self.store!r}, pending={len(self._pending)})"

    async def submit(self, staged):
        """The :class:`~torchmsa.serve.store.JobInfo` of ``staged`` once it is written."""
        loop = asyncio.get_running_loop()
        done = loop.create_future()
        self._pending.append((staged, done))
        if self._task is None:
            self._task = loop.create_task(self._drain())
        return await done

    async def _drain(self) -> None:
        try:
            while self._pending:
                await self._gathered()
                batch, self._pending = self._pending, []
                await self._write(batch)
        finally:
            self._task = None

    async def _gathered(self) -> None:
        """Yield to the event loop until a pass of it stages no more jobs: the requests of a
        burst that are already readable join this write rather than wait for the next (the
        write's thread would otherwise share the interpreter with their parsing). A lone
        request waits one pass of the loop."""
        seen = -1
        while seen != len(self._pending):
            seen = len(self._pending)
            await asyncio.sleep(0)

    async def _write(self, batch) -> None:
        try:
            infos = await run_in_threadpool(self.store.insert, [s for s, _ in batch])
        except Exception as exc:  # noqa: BLE001 - each job's request hears of it
            if len(batch) > 1:  # one at a time: a failure stays with its own job
                for item in batch:
                    await self._write([item])
                return
            _settle(batch[0][1], exc=exc)
            return
        for (_, done), info in zip(batch, infos):
            _settle(done, info)
        if self.notify is not None and any(info.state == "queued" for info in infos):
            # after the replies: the requests' handlers resume (and answer) first
            asyncio.get_running_loop().call_soon(self.notify)


def _settle(done: asyncio.Future, info=None, exc: BaseException | None = None) -> None:
    if done.done():  # the request was cancelled (its client went away)
        return
    if exc is not None:
        done.set_exception(exc)
    else:
        done.set_result(info)
