"""Where this process stands among the ranks that ``torchrun`` started, and its device.

``torchrun`` (``python -m torch.distributed.run``) sets ``RANK``, ``WORLD_SIZE``,
``LOCAL_RANK``, ``LOCAL_WORLD_SIZE``, ``GROUP_RANK`` (the host's index), ``MASTER_ADDR`` and
``MASTER_PORT`` in every process it starts, on one host or many (the same command with
``--nnodes``). :meth:`World.from_env` reads them; :func:`wanted` decides whether a call runs
over the ranks; :func:`rank_device` gives each rank its GPU (``cuda:LOCAL_RANK``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from torchmsa.errors import ArgumentError, DeviceError

__all__ = ["OFF_VARIABLE", "World", "wanted", "rank_device", "backend_for"]

# set to "off" (a rank does this for the processes it starts, and for itself while it aligns
# its share): ``distributed="auto"`` then runs in the process alone
OFF_VARIABLE = "TORCHMSA_DISTRIBUTED"
_REQUIRED = ("RANK", "WORLD_SIZE", "LOCAL_RANK")
_OFF = ("0", "off", "false", "no")


@dataclass(frozen=True)
class World:
    """This process among the ranks.

    Attributes:
        rank: 0 .. ``size - 1``; rank 0 gathers results and writes outputs.
        size: the number of ranks (``WORLD_SIZE``).
        local_rank: the rank's index on its host (``LOCAL_RANK``): its GPU.
        local_size: ranks on this host (``LOCAL_WORLD_SIZE``).
        node: the host's index (``GROUP_RANK``).
    """

    rank: int
    size: int
    local_rank: int = 0
    local_size: int = 1
    node: int = 0

    def __post_init__(self) -> None:
        if not (self.size >= 1 and 0 <= self.rank < self.size):
            raise ArgumentError(
                f"rank {self.rank} of a world of {self.size} ranks does not exist; check RANK "
                f"and WORLD_SIZE (torchrun sets both)"
            )
        if not (0 <= self.local_rank < max(1, self.local_size)):
            raise ArgumentError(
                f"local rank {self.local_rank} of {self.local_size} on this host does not "
                f"exist; check LOCAL_RANK and LOCAL_WORLD_SIZE (torchrun sets both)"
            )

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> World | None:
        """The world that a launcher's variables describe, or ``None`` when ``RANK``,
        ``WORLD_SIZE`` and ``LOCAL_RANK`` are not all set (not launched by ``torchrun``).

        >>> World.from_env({"RANK": "1", "WORLD_SIZE": "4", "LOCAL_RANK": "1"})
        World(rank=1, size=4, local_rank=1, local_size=2, node=0)
        >>> World.from_env({}) is None
        True
        """
        env = os.environ if environ is None else environ
        if not all(env.get(k) for k in _REQUIRED):
            return None
        rank, size, local = (_int(env, k) for k in _REQUIRED)
        local_size = _int(env, "LOCAL_WORLD_SIZE") if env.get("LOCAL_WORLD_SIZE") else local + 1
        node = _int(env, "GROUP_RANK") if env.get("GROUP_RANK") else 0
        return cls(rank, size, local, local_size, node)

    def __str__(self) -> str:
        return f"rank {self.rank}/{self.size}"


def _int(env: Mapping[str, str], name: str) -> int:
    try:
        return int(env[name])
    except ValueError:
        raise ArgumentError(
            f"Invalid value for environment variable {name}: {env[name]!r}; expected a whole "
            f"number (torchrun sets it)"
        ) from None


def _initialized() -> World | None:
    """The world of a process group the caller set up without torchrun's variables."""
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()):
        return None
    import torch

    # without LOCAL_RANK, the GPU the caller made current is the rank's own
    gpu = torch.cuda.current_device() if torch.cuda.is_available() else 0
    local = int(os.environ.get("LOCAL_RANK") or gpu)
    return World(dist.get_rank(), dist.get_world_size(), local, local + 1)


def wanted(distributed: str | bool, environ: Mapping[str, str] | None = None) -> World | None:
    """The world a call spreads its work over, or ``None`` to run in this process alone.

    ``"auto"``: the launcher's world when it has more than one rank (and
    ``TORCHMSA_DISTRIBUTED`` is not ``off``); ``True``: the launcher's world, or else the
    process group the caller initialized (a world of one included); ``False``: none.

    >>> wanted("auto", {"RANK": "0", "WORLD_SIZE": "1", "LOCAL_RANK": "0"}) is None
    True
    >>> wanted(True, {"RANK": "0", "WORLD_SIZE": "1", "LOCAL_RANK": "0"}).size
    1
    """
    if distributed is False:
        return None
    if distributed is not True and distributed != "auto":
        raise ArgumentError(
            f"Invalid value for `distributed` argument: {distributed!r}; use 'auto', True or False"
        )
    env = os.environ if environ is None else environ
    world = World.from_env(env)
    if distributed == "auto":
        if env.get(OFF_VARIABLE, "").lower() in _OFF:
            return None
        return world if world is not None and world.size > 1 else None
    if world is None and environ is None:
        world = _initialized()
    if world is None:
        raise ArgumentError(
            "distributed=True, but this process was not started by torchrun (RANK, WORLD_SIZE "
            "and LOCAL_RANK are unset) and no torch.distributed process group is initialized; "
            "launch it with `torchrun --nproc-per-node N ...`, or pass distributed=False"
        )
    return world


def rank_device(device, world: World):
    """The ``torch.device`` a rank works on: ``"auto"`` and ``"cuda"`` give
    ``cuda:LOCAL_RANK`` (``"auto"``: the CPU when no GPU is usable); anything else is taken
    as given (:func:`torchmsa.ops.backend.resolve_device`).

    Raises:
        DeviceError: a GPU asked for where the rank has none of its own.
    """
    import torch

    from torchmsa.ops.backend import resolve_device

    spec = device
    if isinstance(spec, torch.device) and spec.type == "cuda" and spec.index is None:
        spec = "cuda"
    if spec is None or (isinstance(spec, str) and spec.lower() in ("auto", "cuda")):
        if not torch.cuda.is_available():
            return resolve_device("cpu" if spec is None or spec.lower() == "auto" else spec)
        count = torch.cuda.device_count()
        if world.local_rank >= count:
            raise DeviceError(
                f"rank {world.rank} (local rank {world.local_rank} on its host) has no GPU of "
                f"its own: this host has {count} CUDA device(s); start at most {count} "
                f"processes per host (torchrun --nproc-per-node {count}), or use device='cpu'"
            )
        return torch.device("cuda", world.local_rank)
    return resolve_device(spec)


def backend_for(device) -> str:
    """The process group's backend: NCCL for GPU tensors (gloo beside it for host objects)
    when the rank works on a GPU, else gloo."""
    return "cpu:gloo,cuda:nccl" if device.type == "cuda" else "gloo"
