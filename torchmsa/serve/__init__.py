"""GMSA for real: a lab's MSA service where many users' jobs share the machine.

* :class:`~torchmsa.serve.store.Store`: the persistent job queue, inputs, results and the
  shared caches (SQLite by default, PostgreSQL for several hosts).
* :class:`~torchmsa.serve.worker.Worker`: runs the queue, one per GPU: identical jobs once,
  stored alignments from the cache, first trees from cached distances, GPU-worthy jobs as one
  ``align_many`` batch while small ones run on CPU worker processes.
* :mod:`~torchmsa.serve.app` / :mod:`~torchmsa.serve.server`: ``torchmsa serve``'s HTTP side;
  :mod:`~torchmsa.serve.procs`: its workers, each in a process of its own.

The names below load on first use, so ``import torchmsa.serve`` stays light.
"""

from __future__ import annotations

import importlib

__all__ = [
    "Store",
    "JobInfo",
    "Worker",
    "CostModel",
    "LimitError",
    "InputTooLarge",
    "TooManySequences",
    "JobNotFound",
    "JobNotDone",
]

_WHERE = {
    "Store": "torchmsa.serve.store",
    "JobInfo": "torchmsa.serve.store",
    "Worker": "torchmsa.serve.worker",
    "CostModel": "torchmsa.serve.costs",
    "LimitError": "torchmsa.serve.jobs",
    "InputTooLarge": "torchmsa.serve.jobs",
    "TooManySequences": "torchmsa.serve.jobs",
    "JobNotFound": "torchmsa.serve.jobs",
    "JobNotDone": "torchmsa.serve.jobs",
}


def __getattr__(name: str):
    if name in _WHERE:
        return getattr(importlib.import_module(_WHERE[name]), name)
    raise AttributeError(f"module 'torchmsa.serve' has no attribute {name!r}")
