"""Many families over GPUs and hosts: processes started by ``torchrun`` (issue #42).

One command on one host or on several (``torchrun --nnodes N --nproc-per-node G ...`` on
each) starts one process per GPU (a *rank*). ``torchmsa batch`` and
:func:`torchmsa.align_many` then cut their families into chunks by estimated cost
(:mod:`~torchmsa.distributed.partition`), costliest first, which the ranks claim as they
become free (:mod:`~torchmsa.distributed.claims`); each rank aligns what it claims on its
own GPU (``cuda:LOCAL_RANK``) or on the CPU, and the results come back to rank 0 (the
command line: rank 0 writes every output) or to every rank (the API), in input order. A
family that fails is reported; the others finish.

* :mod:`~torchmsa.distributed.world`: the launcher's variables (:class:`World`), whether a
  call spreads (:func:`wanted`), each rank's device and backend (NCCL on GPUs, gloo on CPUs).
* :mod:`~torchmsa.distributed.session`: the process group, messages between the ranks, and
  their liveness (:class:`DistributedError` when a rank dies or hangs).
* :mod:`~torchmsa.distributed.claims`: the chunks (:func:`guided`) and their claims
  (:class:`Claims`, a store served by rank 0).
* :mod:`~torchmsa.distributed.many`: ``align_many`` over the ranks (:class:`JobsFailed`).

The output does not depend on the number of ranks: a family's alignment is a function of
its sequences and the configuration only (not of the device, the batch it shares or the
process that runs it), and outputs are placed by input index. Decision records 0039 and
0063.
"""

from torchmsa.distributed.claims import Claims, guided
from torchmsa.distributed.many import JobsFailed, align_over_ranks, compact
from torchmsa.distributed.partition import cost_rule, family_cost, text_shape
from torchmsa.distributed.session import DEFAULT_TIMEOUT_S, DistributedError, Session, session
from torchmsa.distributed.world import World, backend_for, rank_device, wanted

__all__ = [
    "Claims",
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
    "guided",
    "rank_device",
    "session",
    "text_shape",
    "wanted",
]
