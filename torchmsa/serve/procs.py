"""The alignment workers as processes of their own (the ``spawn`` start method), one per
device, beside the HTTP process of ``torchmsa serve``.

An alignment holds the interpreter lock (numba, Python glue) and torchmsa's process-wide
parallel-section lock for most of its run; in the HTTP process it starved request handling
(``POST /jobs`` took seconds under load). Here the HTTP process only checks, stores and
answers; each worker process opens its own :class:`~torchmsa.serve.store.Store` on the same
database URL and runs :class:`~torchmsa.serve.worker.Worker` on it.

* **Wake-up**: the HTTP process sets a worker's wake event after each accepted job, so a
  worker sleeps ``poll`` seconds between claims only while nobody submits (jobs written by
  other hosts, on PostgreSQL, are seen at the next poll).
* **Signals**: a worker process ignores SIGINT and SIGTERM (Ctrl-C reaches the whole process
  group); the server stops it through the stop event: it finishes the jobs it holds and
  exits. One still running after the grace period is killed and its jobs are queued again.
* **A worker that dies** is seen within ``check`` seconds: its running jobs go back in the
  queue and a new process takes its place (after 0.5 s, doubling up to 30 s while it keeps
  dying at start).
* **A server killed with SIGKILL** leaves no worker behind: every worker process (and each of
  its CPU worker processes) exits when its parent is gone
  (:func:`~torchmsa.serve.worker.watch_parent`); a job a worker finishes after that is not
  written (:meth:`Store.complete` checks the worker), and the next server start queues the
  jobs again.
* **Priority**: worker processes run at ``nice`` +5 by default, so the HTTP process is
  scheduled first when they share few cores (it needs little CPU; the alignments are not
  slowed on an otherwise idle machine).
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import socket
import sys
import threading
import time
from dataclasses import dataclass, field

__all__ = ["WorkerProcesses", "worker_main"]

_BACKOFF_S = (0.5, 30.0)  # first restart delay, the longest
_STABLE_S = 60.0  # a worker alive this long resets the restart delay


def worker_main(spec: dict, stop, wake) -> None:
    """A worker process's body: run ``spec``'s worker until ``stop`` is set."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    from torchmsa.serve.worker import Worker, watch_parent

    watch_parent(spec["parent"])
    if spec.get("nice"):
        try:
            os.nice(spec["nice"])
        except OSError:  # not allowed here: run at the server's priority
            pass
    from torchmsa.serve.store import Store

    store = Store.open(spec["url"], **spec["store"])
    worker = Worker(
        store,
        device=spec["device"],
        cpu_workers=spec["cpu_workers"],
        poll=spec["poll"],
        name=spec["name"],
    )
    try:
        worker.warm_up()  # the cost model and warm CPU processes before the first job
        while not stop.is_set():
            wake.clear()
            if worker.run_once() == 0:
                wake.wait(spec["poll"])
    finally:
        worker.close()
        store.close()


@dataclass
class _Slot:
    """One device's worker: its current process and its history."""

    device: str
    index: int
    wake: object
    proc: multiprocessing.process.BaseProcess | None = None
    name: str = ""
    started: float = 0.0
    restarts: int = 0
    delay: float = _BACKOFF_S[0]
    restart_at: float = 0.0
    error: str | None = None
    requeued: int = 0
    history: list = field(default_factory=list)


class WorkerProcesses:
    """One worker process per device over ``store``'s database (see the module docstring).

    Arguments:
        store: the HTTP process's :class:`~torchmsa.serve.store.Store` (its URL and limits
            are the workers'; it puts back the jobs of a worker that died).
        devices: one worker per item (``"cpu"``, ``"cuda:0"``, ...); none: no workers.
        cpu_workers: CPU worker processes each worker may run small jobs on.
        poll: seconds a worker waits for a wake-up when the queue is empty.
        nice: added to the workers' niceness (0: none).
        check: seconds between the checks for dead workers.
    """

    def __init__(
        self,
        store,
        devices: list[str],
        *,
        cpu_workers: int = 1,
        poll: float = 0.25,
        nice: int = 5,
        check: float = 0.2,
    ):
        self.store = store
        self.devices = list(devices)
        self.cpu_workers = cpu_workers
        self.poll = poll
        self.nice = nice
        self.check = check
        self._ctx = multiprocessing.get_context("spawn")
        self._stop = self._ctx.Event()
        self._halt = threading.Event()
        self._lock = threading.Lock()
        self._slots = [_Slot(d, i, self._ctx.Event()) for i, d in enumerate(self.devices)]
        self._watcher: threading.Thread | None = None

    def __repr__(self) -> str:
        return f"WorkerProcesses({self.devices!r}, cpu_workers={self.cpu_workers})"

    def start(self) -> None:
        """Start every worker process and the thread that restarts dead ones."""
        if not self._slots:
            return
        with self._lock:
            for slot in self._slots:
                self._launch(slot)
        self._watcher = threading.Thread(
            target=self._watch, name="torchmsa-worker-watch", daemon=True
        )
        self._watcher.start()

    def _launch(self, slot: _Slot) -> None:
        generation = slot.restarts
        slot.name = f"{socket.gethostname()}/{os.getpid()}.{slot.index}.{generation}/{slot.device}"
        spec = {
            "url": self.store.url,
            "store": {
                "cap_bytes": self.store.cap_bytes,
                "max_bytes": self.store.max_bytes,
                "max_seqs": self.store.max_seqs,
            },
            "device": slot.device,
            "cpu_workers": self.cpu_workers,
            "poll": self.poll,
            "name": slot.name,
            "parent": os.getpid(),
            "nice": self.nice,
        }
        proc = self._ctx.Process(
            target=worker_main,
            args=(spec, self._stop, slot.wake),
            name=f"torchmsa-worker-{slot.device}",
            daemon=False,
        )
        proc.start()
        slot.proc, slot.started = proc, time.monotonic()

    def notify(self) -> None:
        """Wake every worker: a job was queued."""
        for slot in self._slots:
            slot.wake.set()

    def wakes(self) -> list:
        """The workers' wake-up events (process-shared: other HTTP processes set them)."""
        return [slot.wake for slot in self._slots]

    def _watch(self) -> None:
        while not self._halt.wait(self.check):
            with self._lock:
                if self._halt.is_set():
                    return
                for slot in self._slots:
                    self._tend(slot)

    def _tend(self, slot: _Slot) -> None:
        now = time.monotonic()
        if slot.proc is not None and not slot.proc.is_alive():
            code = slot.proc.exitcode
            lived = now - slot.started
            slot.proc.join(0)
            slot.proc = None
            slot.requeued += self.store.requeue_running(worker=slot.name)
            slot.error = f"worker process exited with {_exit_text(code)} after {lived:.1f} s"
            slot.history = [*slot.history[-9:], slot.error]
            slot.delay = _BACKOFF_S[0] if lived > _STABLE_S else slot.delay
            slot.restart_at = now + slot.delay
            slot.delay = min(_BACKOFF_S[1], 2 * slot.delay)
            print(
                f"torchmsa: worker {slot.name}: {slot.error}; its jobs are queued again, "
                f"a new worker starts in {slot.restart_at - now:.1f} s",
                file=sys.stderr,
                flush=True,
            )
        if slot.proc is None and now >= slot.restart_at:
            slot.restarts += 1
            self._launch(slot)

    def describe(self) -> list[dict]:
        """Each worker: device, alive, pid, restarts, its last error (``/health``)."""
        out = []
        for slot in self._slots:
            proc = slot.proc
            item = {
                "device": slot.device,
                "alive": bool(proc is not None and proc.is_alive()),
                "pid": None if proc is None else proc.pid,
                "restarts": slot.restarts,
                "requeued": slot.requeued,
            }
            if slot.error:
                item["error"] = slot.error
            out.append(item)
        return out

    def pids(self) -> list[int | None]:
        """The worker processes' ids, device order (``None`` while one is being restarted)."""
        return [None if s.proc is None else s.proc.pid for s in self._slots]

    def close(self, grace: float) -> bool:
        """Stop the workers: they finish the jobs they hold, ``grace`` seconds at most; one
        still running then is killed and its jobs are queued again. True when every worker
        stopped by itself."""
        self._halt.set()
        if self._watcher is not None:
            self._watcher.join(30)
        self._stop.set()
        self.notify()
        end = time.monotonic() + grace
        clean = True
        with self._lock:
            for slot in self._slots:
                if slot.proc is not None:
                    slot.proc.join(max(0.0, end - time.monotonic()))
            for slot in self._slots:
                proc = slot.proc
                if proc is not None and proc.is_alive():
                    clean = False
                    proc.kill()
                    proc.join(10)
                if proc is not None and proc.exitcode not in (0, None):
                    clean = False
                if slot.name:
                    slot.requeued += self.store.requeue_running(worker=slot.name)
        return clean


def _exit_text(code: int | None) -> str:
    if code is not None and code < 0:
        try:
            return f"signal {signal.Signals(-code).name}"
        except ValueError:
            return f"signal {-code}"
    return f"status {code}"
