"""Many families over GPUs and hosts: processes started by ``torchrun`` (issue #42).

One command on one host or on several (``torchrun --nnodes N --nproc-per-node G ...`` on
each) starts one process per GPU (a *rank*). ``torchmsa batch`` and
:func:`torchmsa.align_many` then split their families between the ranks by estimated cost
(:mod:`~torchmsa.distributed.partition`: longest first, each to the least loaded rank), each
rank aligns its share on its own GPU (``cuda:LOCAL_RANK``) or on the CPU, and the results
come back to rank 0 (the command line: rank 0 writes every output) or to every rank (the
API), in input order. A family that fails is reported; the others finish.

* :mod:`~torchmsa.distributed.world`: the launcher's variables (:class:`World`), whether a
  call spreads (:func:`wanted`), each rank's device and backend (NCCL on GPUs, gloo on CPUs).
* :mod:`~torchmsa.distributed.session`: the process group, messages between the ranks, and
  their liveness (:class:`DistributedError` when a rank dies or hangs).
* :mod:`~torchmsa.distributed.many`: ``align_many`` over the ranks (:class:`JobsFailed`).

The output does not depend on the number of ranks: a family's alignment is a function of
its sequences and the configuration only (not of the device, the batch it shares or the
process that runs it), and outputs are placed by input index. Decision record 0039.
"""

from torchmsa.distributed.many import JobsFailed, align_over_ranks, compact
from torchmsa.distributed.partition import cost_rule, family_cost, partition, text_shape
from torchmsa.distributed.session import DEFAULT_TIMEOUT_S, DistributedError, Session, session
from torchmsa.distributed.world import World, backend_for, rank_device, wanted

__all__ = [
    "DEFAULT_TIMEOUT_S",
    "DistributedError",
    "JobsFailed",
    "Session",
    "World",
    "align_over_ranks",
    "backend_for",
    "compact",
    "cost_rule",
    "family_cost",
    "partition",
    "rank_device",
    "session",
    "text_shape",
    "wanted",
]
