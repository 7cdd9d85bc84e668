"""Named pipeline stages.

Each stage is a ``torch.profiler.record_function`` range named ``torchmsa.<stage>``, visible in
any torch profile of a call (opened only while a profiler runs), and, while a listener is
registered (:func:`listen`: the CLI's ``-v`` through
:class:`~torchmsa.pipeline.progress.StageTimes`), its wall time goes to the listener. The
``-v`` timings used to come from a torch profiler session, which records every tensor
operation: at 10^5 sequences reading those events back took 26 s of a 34 s run on an H100
machine.
"""

from __future__ import annotations

import contextlib
import threading
import time

__all__ = ["stage", "listen", "unlisten"]

_lock = threading.Lock()
_listeners: list = []


@contextlib.contextmanager
def stage(name: str):
    """The block as stage ``name``: a profiler range, timed for the listeners if any."""
    import torch

    if not _listeners and not torch.autograd._profiler_enabled():
        # no one looks: a range costs about 10 us to open and close, 3 ms of a 50-sequence
        # align's 150 (its 340 stages) on two cores
        yield
        return
    with torch.profiler.record_function(f"torchmsa.{name}"):
        if not _listeners:
            yield
            return
        start = time.perf_counter()
        try:
            yield
        finally:
            took = time.perf_counter() - start
            with _lock:
                for listener in _listeners:
                    listener(name, start, took)


def listen(listener) -> None:
    """Call ``listener(name, start, seconds)`` as each stage ends, from any thread, until
    :func:`unlisten`."""
    with _lock:
        _listeners.append(listener)


def unlisten(listener) -> None:
    with _lock:
        _listeners.remove(listener)
