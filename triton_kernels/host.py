"""Copies from the host to a device without waiting: the launchers' inputs and offsets.

:mod:`torchmsa.ops.backend` re-exports :func:`to_device` for the torch code above; this module
sits here so that the kernel launchers need nothing from the layers above them.
"""

from __future__ import annotations

import numpy as np
import torch

__all__ = ["to_device"]


def to_device(x: np.ndarray | torch.Tensor, device: torch.device, dtype=None) -> torch.Tensor:
    """``x`` (a host array or a tensor anywhere) as a tensor on ``device``.

    A host array goes to a GPU through pinned memory, copied without waiting: torch's plain
    copy from pageable memory waits for all the work queued on the device first, so a level
    of the progressive alignment that uploads several arrays would wait for the device at
    each of them instead of once.
    """
    t = torch.as_tensor(x, dtype=dtype)
    if device.type == "cuda" and t.device.type == "cpu":
        return t.pin_memory().to(device, non_blocking=True)
    return t.to(device)
