"""What the host can give: the memory available to a new allocation, ``ulimit -v`` included.

:class:`torchmsa.config.MemoryBudget` turns it into the bytes a stage may plan for.
"""

from __future__ import annotations

import os

__all__ = ["host_available", "address_space_used"]


def host_available() -> int | None:
    """Bytes of host memory available to a new allocation: Linux's ``MemAvailable``, capped
    by an address-space limit (``ulimit -v``) when one is set; else the free physical pages;
    ``None`` where the system does not say."""
    avail = None
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    avail = int(line.split()[1]) * 1024
                    break
    except OSError:
        pass
    if avail is None:
        try:
            avail = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (ValueError, OSError, AttributeError):
            avail = None
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
        if soft != resource.RLIM_INFINITY:
            used = address_space_used()
            room = max(0, soft - used)
            avail = room if avail is None else min(avail, room)
    except (ImportError, ValueError, OSError):
        pass
    return avail


def address_space_used() -> int:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0
