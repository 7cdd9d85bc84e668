"""Profile-profile DP dispatcher: packed score matrices and gap costs to traceback ops."""

from __future__ import annotations

from torchmsa.cpu import dp as cpu_dp
from torchmsa.ops.backend import budget_bytes, resolve_backend

__all__ = ["profile_align"]


def profile_align(
    S,
    s_off,
    n,
    m,
    open_a,
    close_a,
    a_off,
    open_b,
    close_b,
    b_off,
    ext,
    mode,
    res_a=None,
    res_b=None,
    backend="auto",
    *,
    budget=None,
):
    """Align many profile pairs in one call; arguments and result as ``cpu/dp.profile_align``.
    ``budget`` (a :class:`~torchmsa.config.MemoryBudget` or bytes) bounds the Triton
    launches' buffers."""
    args = (S, s_off, n, m, open_a, close_a, a_off, open_b, close_b, b_off, ext, mode)
    if resolve_backend(backend, S.device) == "triton":
        from torchmsa._triton import dp as kernels

        return kernels.profile_align(*args, res_a, res_b, budget=budget_bytes(budget, S.device))
    return cpu_dp.profile_align(*args, res_a, res_b)
