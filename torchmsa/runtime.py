"""Process-wide settings that keep torchmsa safe in worker processes and quiet when idle.

* **numba's threading layer** is ``"forksafe"``: TBB where the ``tbb`` package is installed,
  else numba's workqueue. Its default on Linux is GNU OpenMP, whose pool kills every child
  that a process forks once it has run a parallel loop ("fork() called from a process already
  using GNU OpenMP"), so ``DataLoader(num_workers=...)`` and fork ``Pool`` workers died or hung
  after an ``align`` in the parent. The choice is made before numba's first parallel launch
  and never overrides one the user made (``NUMBA_THREADING_LAYER``, or
  ``numba.config.THREADING_LAYER`` set in code); it does not change results.
* **The workqueue layer is not thread-safe**: two Python threads in a parallel loop at once
  abort the process. :func:`parallel_section` serialises torchmsa's calls while that layer
  runs (TBB and OpenMP need no lock).
* **A forked child** (``os.register_at_fork``) gets one torch intra-op thread: GNU OpenMP's
  thread pool does not survive ``fork``, and torch's next parallel region in the child would
  wait for the parent's threads for ever (PyTorch's ``DataLoader`` workers do the same).
* **One cache folder**: ``TORCHMSA_CACHE_DIR`` puts numba's and Triton's on-disk caches in
  its ``numba`` and ``triton`` subfolders (unless ``NUMBA_CACHE_DIR`` / ``TRITON_CACHE_DIR``
  say otherwise), for images and read-only installs; ``torchmsa warmup`` fills them.
* **numba loads when first used**: where numba is not imported yet, the layer is chosen the
  moment it is (an import hook on ``sys.meta_path``, :class:`_OnNumbaImport`), so that
  ``import torchmsa`` and the commands that compile nothing do not pay its 0.3 s import
  (issue #36); numba reads the layer only at its first parallel launch.
* **Idle threads sleep**: ``OMP_WAIT_POLICY=PASSIVE`` unless the user set it. OpenMP reads it
  when it loads, so it applies where :mod:`torchmsa` is imported before torch.

:func:`configure` runs when this module is imported; :func:`describe` says what is in effect.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading

__all__ = [
    "SAFE_LAYER", "configure", "describe", "parallel_section", "in_forked_child", "usable_cores",
]  # fmt: skip

SAFE_LAYER = "forksafe"

_state = {"layer_requested": None, "layer_source": None, "forked_child": False}
_lock = threading.RLock()
_registered = False


def configure() -> None:
    """Apply the settings above (idempotent)."""
    global _registered
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    _cache_folders()
    if "numba" in sys.modules:
        _choose_layer()
    elif not any(isinstance(f, _OnNumbaImport) for f in sys.meta_path):
        sys.meta_path.insert(0, _OnNumbaImport())
    if not _registered and hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=_after_fork_in_child)
        _registered = True


def _cache_folders() -> None:
    root = os.environ.get("TORCHMSA_CACHE_DIR")
    if not root:
        return
    root = os.path.abspath(os.path.expanduser(root))  # one folder whatever the working dir
    os.environ.setdefault("NUMBA_CACHE_DIR", os.path.join(root, "numba"))
    os.environ.setdefault("TRITON_CACHE_DIR", os.path.join(root, "triton"))
    numba = sys.modules.get("numba")  # imported before torchmsa: its config has been read
    if numba is not None and not numba.config.CACHE_DIR:
        numba.config.CACHE_DIR = os.environ["NUMBA_CACHE_DIR"]


def _choose_layer() -> None:
    import numba

    if os.environ.get("NUMBA_THREADING_LAYER"):
        _state.update(layer_requested=os.environ["NUMBA_THREADING_LAYER"], layer_source="env")
    elif str(numba.config.THREADING_LAYER).lower() != "default":
        _state.update(layer_requested=numba.config.THREADING_LAYER, layer_source="user")
    elif _launched_layer() is not None:
        _state.update(layer_requested=_launched_layer(), layer_source="launched before torchmsa")
    else:
        numba.config.THREADING_LAYER = SAFE_LAYER
        _state.update(layer_requested=SAFE_LAYER, layer_source="torchmsa")


class _OnNumbaImport:
    """Runs :func:`_choose_layer` right after numba's own module has run, whoever imports it;
    then leaves ``sys.meta_path``. A finder by its ``find_spec`` alone: ``importlib.abc``
    would import ``importlib.resources`` and ``tempfile`` with it, a third of the light
    command's imports (what a command served by the warm server loads)."""

    def find_spec(self, name, path=None, target=None):
        if name != "numba":
            return None
        import importlib.util

        with contextlib.suppress(ValueError):
            sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            _choose_layer()

        spec.loader.exec_module = exec_module
        return spec


def _launched_layer() -> str | None:
    """The threading layer numba runs, or ``None`` before its first parallel launch."""
    import numba

    try:
        return numba.threading_layer()
    except ValueError:
        return None


def _after_fork_in_child() -> None:
    global _lock
    _lock = threading.RLock()  # a thread of the parent may have held it
    _state["forked_child"] = True
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(1)


def usable_cores() -> int:
    """CPU cores this process may use (its affinity, not the machine's count)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # no affinity on this platform
        return os.cpu_count() or 1


def in_forked_child() -> bool:
    """Whether this process was forked from one that had imported torchmsa."""
    return bool(_state["forked_child"])


@contextlib.contextmanager
def parallel_section():
    """Hold torchmsa's process-wide lock for the block unless numba's threading layer is
    thread-safe (TBB or OpenMP); before the first parallel launch it is held, as the layer
    is not known yet. Re-entrant."""
    layer = _launched_layer()
    if layer in ("tbb", "omp"):
        yield
        return
    with _lock:
        yield


def describe() -> dict:
    """What is in effect: the threading layer asked for and by whom, the one running (``None``
    before the first parallel launch), ``OMP_WAIT_POLICY``, and whether this is a forked
    child."""
    running = _launched_layer()  # imports numba first, where it was not: the layer is chosen
    return {
        "threading_layer_requested": _state["layer_requested"],
        "threading_layer_source": _state["layer_source"],
        "threading_layer": running,
        "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"),
        "forked_child": in_forked_child(),
    }


configure()
