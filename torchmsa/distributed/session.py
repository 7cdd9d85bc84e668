"""One distributed run: the process group, the rank's device, messages between the ranks
and their liveness.

:func:`session` joins the ranks (``torch.distributed.init_process_group`` from the
launcher's variables, unless the caller initialized a group already), pins the rank's GPU,
and opens a gloo group of its own for host objects, whatever the default group's backend.
Every collective on it has a timeout (``timeout_s``): one that waits longer for another rank
fails, as does one whose peer's connection drops (a rank that died); both become
:class:`DistributedError`, which names this rank and says what it was doing. On leaving,
the session's group is destroyed on every path, and the default group too when the session
made it with ``keep=False`` (the command line). With ``keep=True`` (the API) a default group
the session made stays for the next call and is destroyed at the interpreter's exit: a
process group cannot safely be made again in one process once destroyed.

While a session is open, ``TORCHMSA_DISTRIBUTED=off`` is set in the environment, so the
rank's own calls of ``align_many(distributed="auto")`` and the processes it starts (CPU
workers inherit ``RANK`` and ``WORLD_SIZE``) run locally instead of spreading again.

:meth:`Session.run` runs a rank's work, however long, while a courier thread exchanges every
``BEAT_S`` seconds each rank's state (working, done, failed) and the records its work emitted,
which rank 0 delivers as they come. A collective never waits for a rank's work, only for its
courier, so the timeout measures silence, not work. A rank whose work raises tells the others
in the next exchange; they stop with :class:`DistributedError`, as they do when a rank's
connection drops: work running in the main thread is interrupted at once (``SIGUSR1``, whose
handler is the session's while the work runs), work in another thread when it returns.
"""

from __future__ import annotations

import atexit
import datetime
import math
import os
import signal
import socket
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from torchmsa.distributed.world import OFF_VARIABLE, World, backend_for, rank_device
from torchmsa.errors import ArgumentError, DistributedError

__all__ = ["BEAT_S", "DEFAULT_TIMEOUT_S", "DistributedError", "Session", "session"]

DEFAULT_TIMEOUT_S = 600.0
BEAT_S = 0.5
WORKING, DONE, FAILED = 0, 1, 2
T = TypeVar("T")


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0][:300]}" if text else type(exc).__name__


class Session:
    """A rank's part in one distributed run (made by :func:`session`).

    Attributes:
        world: the :class:`~torchmsa.distributed.world.World`.
        device: the rank's ``torch.device``.
        group: the session's gloo process group.
        timeout_s: how long a collective waits for the other ranks.
        say: where log lines go (one string each).
    """

    def __init__(self, world: World, device, group, timeout_s: float, say: Callable[[str], None]):
        self.world = world
        self.device = device
        self.group = group
        self.timeout_s = timeout_s
        self.say = say
        self.host = socket.gethostname()

    @property
    def rank(self) -> int:
        return self.world.rank

    @property
    def size(self) -> int:
        return self.world.size

    @property
    def leader(self) -> bool:
        """Rank 0: it gathers the results (and the command line's outputs)."""
        return self.world.rank == 0

    @property
    def tag(self) -> str:
        """``rank R/W (DEVICE on HOST)``, for log lines."""
        return f"rank {self.rank}/{self.size} ({self.device} on {self.host})"

    def broken(self, what: str, exc: BaseException) -> str:
        """The message of a failed collective."""
        return (
            f"{self.tag}: {what} failed; another rank stopped or could not be reached within "
            f"{self.timeout_s:.0f} s ({_first_line(exc)}); see the other ranks' logs "
            f"(torchrun names the rank that failed first)"
        )

    def _collective(self, what: str, call: Callable[[], Any]) -> None:
        try:
            call()
        except Exception as exc:  # noqa: BLE001 - every backend error means the same here
            raise DistributedError(self.broken(what, exc)) from exc

    def all_gather(self, obj: Any) -> list:
        """Every rank's ``obj`` (picklable), in rank order, on every rank."""
        import torch.distributed as dist

        out: list = [None] * self.size
        self._collective(
            "sharing with every rank", lambda: dist.all_gather_object(out, obj, group=self.group)
        )
        return out

    def broadcast(self, obj: Any = None) -> Any:
        """Rank 0's ``obj`` on every rank (the others' ``obj`` is ignored)."""
        import torch.distributed as dist

        box = [obj if self.leader else None]
        self._collective(
            "receiving from rank 0",
            lambda: dist.broadcast_object_list(box, src=0, group=self.group),
        )
        return box[0]

    def to_leader(self, tensor):
        """Every rank's ``tensor`` (any shape, one dtype on every rank) on rank 0, in rank
        order (``None`` on the others): one ``gather`` on the default group (NCCL between
        GPUs: a collective, so no communicator of its own as a ``send`` would make), each
        rank's elements padded to the largest count."""
        import torch
        import torch.distributed as dist

        shapes = self.all_gather(tuple(tensor.shape))
        counts = [math.prod(shape) for shape in shapes]
        top = max(counts)
        flat = torch.zeros(top, dtype=tensor.dtype, device=self.device)
        if top:
            flat[: tensor.numel()] = tensor.reshape(-1).to(self.device)
        bufs = [torch.empty_like(flat) for _ in shapes] if self.leader else None
        if top:
            self._collective("gathering on rank 0", lambda: dist.gather(flat, bufs, dst=0))
        if not self.leader:
            return None
        return [b[:n].reshape(shape).to(tensor.device) for b, n, shape in zip(bufs, counts, shapes)]

    def from_leader(self, tensor):
        """Rank 0's ``tensor`` on every rank, the shape and dtype that rank 0 gives (the
        others' ``tensor`` says only where the result goes); through the default group."""
        import torch
        import torch.distributed as dist

        shape, dtype = self.broadcast((tuple(tensor.shape), tensor.dtype))
        if self.leader:
            buf = tensor.to(self.device).contiguous()
        else:
            buf = torch.empty(shape, dtype=dtype, device=self.device)
        if buf.numel():
            self._collective("receiving from rank 0", lambda: dist.broadcast(buf, src=0))
        return buf.to(tensor.device)

    def run(
        self,
        work: Callable[[Callable[[Any], None]], T],
        deliver: Callable[[Any], None] | None = None,
    ) -> T:
        """``work(emit)`` on this rank, and back once every rank's work is done.

        ``work`` calls ``emit(record)`` for each picklable record it has finished; on rank 0
        ``deliver(record)`` is called with every rank's records (its own included) as they
        arrive, from the courier thread, in no set order across ranks. Returns what ``work``
        returned.

        Raises:
            DistributedError: another rank's work failed, or a rank stopped answering (this
                rank's work is interrupted).
            Exception: what this rank's ``work`` raised (the other ranks are told).
        """
        main = threading.current_thread() is threading.main_thread()
        main = main and hasattr(signal, "SIGUSR1")
        courier = _Courier(self, deliver, threading.get_ident() if main else None)
        previous = signal.signal(signal.SIGUSR1, courier.stop_here) if main else None
        try:
            courier.start()
            try:
                result = work(courier.emit)
            except _Stopped:
                courier.join(self.timeout_s)
                raise DistributedError(courier.broken) from None
            except BaseException:
                courier.finish(FAILED)
                courier.join(self.timeout_s)
                raise
            courier.finish(DONE)
            courier.join()
        finally:
            if main:
                signal.signal(signal.SIGUSR1, previous)
        if courier.broken:
            raise DistributedError(courier.broken)
        return result


class _Stopped(BaseException):
    """Raised in the main thread (by ``SIGUSR1``) when its work is of no use any more."""


class _Courier(threading.Thread):
    """Every :data:`BEAT_S` seconds: the ranks' states summed, the emitted records gathered
    on rank 0 (see :meth:`Session.run`)."""

    def __init__(self, s: Session, deliver: Callable[[Any], None] | None, main: int | None):
        super().__init__(name="torchmsa-courier", daemon=True)
        self.s, self.deliver, self.main = s, deliver, main
        self.lock = threading.Lock()
        self.wake = threading.Event()
        self.state = WORKING  # what the other ranks are told
        self.finished = False  # the main thread's work returned or raised
        self.outbox: list = []
        self.broken: str | None = None

    def emit(self, record: Any) -> None:
        with self.lock:
            self.outbox.append(record)

    def finish(self, state: int) -> None:
        with self.lock:
            self.state = FAILED if self.state == FAILED else state
            self.finished = True
        self.wake.set()

    def run(self) -> None:
        try:
            self._rounds()
        except Exception as exc:  # noqa: BLE001 - a collective failed: the world is broken
            self.broken = self.s.broken("exchanging progress with the other ranks", exc)
        if self.broken:
            with self.lock:
                if not self.finished and self.main is not None:
                    signal.pthread_kill(self.main, signal.SIGUSR1)  # interrupts a blocking call

    def stop_here(self, signum, frame) -> None:
        """The main thread's ``SIGUSR1`` handler while it works."""
        if not self.finished and self.broken:
            raise _Stopped

    def _deliver(self, rank: int, records) -> None:
        for record in records or ():
            try:
                self.deliver(record)
            except Exception as exc:  # noqa: BLE001 - tell the others in the next round
                self.broken = (
                    f"{self.s.tag}: handling a result of rank {rank} failed ({_first_line(exc)}); "
                    f"the ranks stop"
                )
                with self.lock:
                    self.state = FAILED
                return

    def _rounds(self) -> None:
        import torch
        import torch.distributed as dist

        s = self.s
        while True:
            self.wake.wait(BEAT_S)
            self.wake.clear()
            with self.lock:
                mine, batch, self.outbox = self.state, self.outbox, []
            states = torch.zeros(s.size, dtype=torch.int64)
            states[s.rank] = mine
            dist.all_reduce(states, group=s.group)
            got: list | None = [None] * s.size if s.leader else None
            dist.gather_object(batch, got, dst=0, group=s.group)
            if self.deliver is not None and self.broken is None:
                for rank, part in enumerate(got or ()):
                    self._deliver(rank, part)
            codes = states.tolist()
            failed = [k for k, v in enumerate(codes) if v == FAILED and k != s.rank]
            if failed:
                self.broken = (
                    f"{s.tag}: rank {', '.join(map(str, failed))} stopped with an error (see "
                    f"its log); this rank stops too"
                )
                return
            if mine == FAILED or all(v == DONE for v in codes):
                return


def _destroy_default() -> None:
    import torch.distributed as dist

    if dist.is_initialized():
        _quietly(dist.destroy_process_group)


def _quietly(call: Callable, *args) -> None:
    try:
        call(*args)
    except Exception:  # noqa: BLE001, S110 - tearing down after a failure: nothing to add
        pass


@contextmanager
def session(
    world: World,
    device="auto",
    *,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    keep: bool = True,
    say: Callable[[str], None] | None = None,
) -> Iterator[Session]:
    """Join the other ranks for one distributed run (see the module docstring).

    Arguments:
        world: this process's :class:`~torchmsa.distributed.world.World`.
        device: as :func:`~torchmsa.distributed.world.rank_device` takes it.
        timeout_s: how long a collective waits for another rank.
        keep: leave a default process group this call made for later calls (destroyed at
            exit); ``False``: destroy it when the session ends.
        say: where log lines go (default: standard error).

    Raises:
        DistributedError: the ranks cannot be joined.
        DeviceError: the rank has no GPU of its own (see ``rank_device``).
    """
    import torch
    import torch.distributed as dist

    if isinstance(timeout_s, bool) or not isinstance(timeout_s, (int, float)) or timeout_s <= 0:
        raise ArgumentError(f"Invalid value for `timeout_s` argument: {timeout_s!r}; give seconds")
    if not dist.is_available():
        raise DistributedError(
            f"this torch {torch.__version__} was built without torch.distributed; install a "
            f"build with it to run over several processes"
        )
    dev = rank_device(device, world)
    timeout = datetime.timedelta(seconds=float(timeout_s))
    made = False
    if not dist.is_initialized():
        if dev.type == "cuda":
            torch.cuda.set_device(dev)
        try:
            dist.init_process_group(
                backend_for(dev), timeout=timeout, rank=world.rank, world_size=world.size
            )
        except Exception as exc:  # noqa: BLE001
            raise DistributedError(
                f"rank {world.rank} of {world.size}: could not join the other ranks "
                f"({_first_line(exc)}); start every rank with torchrun (it sets MASTER_ADDR and "
                f"MASTER_PORT), with the same --nnodes and --rdzv-endpoint on every host"
            ) from exc
        made = True
        if keep:
            atexit.register(_destroy_default)
    elif (dist.get_rank(), dist.get_world_size()) != (world.rank, world.size):
        raise DistributedError(
            f"the process group already initialized has rank {dist.get_rank()} of "
            f"{dist.get_world_size()}, but the launcher's variables say rank {world.rank} of "
            f"{world.size}; initialize it with RANK and WORLD_SIZE"
        )
    saved = os.environ.get(OFF_VARIABLE)
    os.environ[OFF_VARIABLE] = "off"
    group = None
    try:
        try:
            group = dist.new_group(backend="gloo", timeout=timeout)
        except Exception as exc:  # noqa: BLE001
            raise DistributedError(
                f"rank {world.rank} of {world.size}: could not open a gloo group beside the "
                f"default one ({_first_line(exc)})"
            ) from exc
        yield Session(world, dev, group, float(timeout_s), say or _stderr)
    finally:
        if saved is None:
            os.environ.pop(OFF_VARIABLE, None)
        else:
            os.environ[OFF_VARIABLE] = saved
        if group is not None:
            _quietly(dist.destroy_process_group, group)
        if made and not keep:
            _quietly(dist.destroy_process_group)
