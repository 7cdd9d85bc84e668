"""Choosing the device and the backend (numba CPU code or Triton kernels) for an operation."""

from __future__ import annotations

import importlib.util
import os

import torch

from torchmsa._triton.host import to_device
from torchmsa.config import MemoryBudget
from torchmsa.errors import ArgumentError, DeviceError

__all__ = [
    "resolve_device",
    "resolve_backend",
    "interpreter_enabled",
    "to_device",
    "budget_bytes",
    "synchronize",
    "BACKENDS",
]

BACKENDS = ("auto", "cpu", "triton")


def interpreter_enabled() -> bool:
    """True when Triton kernels run in Triton's interpreter (``TRITON_INTERPRET=1``)."""
    return os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")


def resolve_device(device) -> torch.device:
    """Turn ``"auto"``, ``"cpu"``, ``"cuda"``, ``"cuda:N"`` or a ``torch.device`` into a device.

    ``"auto"`` is the current CUDA device when one is usable, else the CPU. An explicit CUDA
    device that does not exist raises :class:`~torchmsa.errors.DeviceError`; it never falls
    back silently.
    """
    if device is None or (isinstance(device, str) and device.lower() == "auto"):
        return torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError):
        raise ArgumentError(
            f"Invalid value for `device` argument: {device!r}; use 'auto', 'cpu', 'cuda' or "
            f"'cuda:N'"
        ) from None
    if dev.type == "cpu":
        return dev
    if dev.type != "cuda":
        raise DeviceError(f"device {device!r} is not supported; use 'cpu' or a CUDA device")
    if not torch.cuda.is_available():
        raise DeviceError(
            f"device {device!r} was asked for but no CUDA GPU is usable here (torch "
            f"{torch.__version__}, CUDA build: {torch.version.cuda}); use device='cpu' or 'auto'"
        )
    count = torch.cuda.device_count()
    index = 0 if dev.index is None else dev.index
    if index >= count:
        raise DeviceError(
            f"device {device!r} does not exist: this machine has {count} CUDA device(s) "
            f"(cuda:0 .. cuda:{count - 1})"
        )
    return torch.device("cuda", index)


def triton_installed() -> bool:
    """Whether the ``triton`` package can be imported (without importing it)."""
    try:
        return importlib.util.find_spec("triton") is not None
    except (ImportError, ValueError):
        return False


def resolve_backend(backend: str, device: torch.device) -> str:
    """``"cpu"`` or ``"triton"`` for work whose tensors live on ``device``.

    ``"auto"`` is Triton on CUDA devices and the CPU code elsewhere. ``"triton"`` on CPU tensors
    needs the interpreter (``TRITON_INTERPRET=1`` set before ``triton`` is imported).
    """
    if backend not in BACKENDS:
        raise ArgumentError(f"Invalid value for `backend` argument: {backend!r}; use {BACKENDS}")
    if backend == "auto":
        if device.type != "cuda":
            return "cpu"
        if not triton_installed():
            raise DeviceError(
                f"work on {device} needs the triton package, which is not installed: "
                "pip install 'torchmsa[gpu]', or use device='cpu'"
            )
        return "triton"
    if backend == "triton" and not triton_installed():
        raise DeviceError(
            "backend='triton' needs the triton package, which is not installed: "
            "pip install 'torchmsa[gpu]', or use backend='cpu'"
        )
    if backend == "triton" and device.type != "cuda" and not interpreter_enabled():
        raise DeviceError(
            "backend='triton' on CPU tensors needs Triton's interpreter: set TRITON_INTERPRET=1 "
            "before importing torchmsa, or use backend='cpu'"
        )
    return backend


def budget_bytes(budget: MemoryBudget | int | None, device: torch.device) -> int:
    """Bytes a stage on ``device`` may plan for: ``budget`` itself when it is a number, else
    ``budget.limit(device)`` (``None``: the default :class:`~torchmsa.config.MemoryBudget`)."""
    if budget is None:
        budget = MemoryBudget()
    if isinstance(budget, MemoryBudget):
        return budget.limit(device)
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 0:
        raise ArgumentError(
            f"Invalid value for `budget` argument: {budget!r}; use a MemoryBudget or bytes"
        )
    return budget


def synchronize(device) -> None:
    """Wait for the work queued on ``device`` when it is a CUDA device (timings, warm-ups)."""
    if str(device).startswith("cuda"):
        torch.cuda.synchronize(device)
