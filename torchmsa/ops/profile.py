"""Profile-profile DP dispatcher: packed score matrices and gap costs to traceback ops."""

from __future__ import annotations

from torchmsa.cpu import dp as cpu_dp
from torchmsa.ops.backend import resolve_backend

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
):
    """Align many profile pairs in one call; arguments and result as ``cpu/dp.profile_align``."""
    impl = resolve_backend(backend, S.device)
    if impl == "triton":
        from torchmsa._triton import dp as kernels
    else:
        kernels = cpu_dp
    return kernels.profile_align(
        S, s_off, n, m, open_a, close_a, a_off, open_b, close_b, b_off, ext, mode, res_a, res_b
    )
