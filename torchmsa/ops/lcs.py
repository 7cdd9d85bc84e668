"""LCS lengths of all pairs and FAMSA's LCS distance: the dispatcher.

The guide tree ``tree="lcs"`` (single linkage on these distances) follows FAMSA (Deorowicz et
al. 2016): similarity ``LCS / indel`` with ``indel = |a| + |b| - 2 LCS``. Single linkage depends
only on the order of the distances, so any decreasing function of that similarity gives the same
tree; the one used here is ``indel / (indel + LCS)``, in ``[0, 1]`` and 0 for equal sequences.
"""

from __future__ import annotations

import torch

from torchmsa.config import MemoryBudget
from torchmsa.constants import LCS_TIE
from torchmsa.cpu import lcs as cpu_lcs
from torchmsa.ops.backend import budget_bytes, resolve_backend

__all__ = ["lcs_lengths", "lcs_distances", "lcs_single_linkage", "ROW_BLOCK_BYTES"]

ROW_BLOCK_BYTES = 64 << 20  # a block of streamed rows: int32 LCS and float64 distances


def lcs_lengths(
    codes: torch.Tensor,
    lengths: torch.Tensor,
    backend: str = "auto",
    *,
    budget: MemoryBudget | int | None = None,
) -> torch.Tensor:
    """``int32 [N, N]`` LCS lengths of every pair, on the device of ``codes``.

    Arguments:
        codes: ``uint8 [N, L]`` residue codes (positions past a sequence's length ignored).
        lengths: ``int [N]`` sequence lengths.
        backend: ``"auto"``, ``"cpu"`` (numba, ``torchmsa/cpu/lcs.py``) or ``"triton"``
            (``triton_kernels/lcs.py``); both give the same integers.
        budget: the memory the Triton backend may use (bytes or a
            :class:`~torchmsa.config.MemoryBudget`; ``None``: the default one).
    """
    if resolve_backend(backend, codes.device) == "triton":
        from torchmsa._triton import lcs as triton_lcs

        limit = budget_bytes(budget, codes.device)
        return triton_lcs.lcs_lengths(codes, lengths.to(codes.device), budget=limit)
    return cpu_lcs.lcs_lengths(codes, lengths).to(codes.device)


def lcs_distances(lcs: torch.Tensor, lengths: torch.Tensor, *, rows: int = 1024) -> torch.Tensor:
    """``float64 [N, N]`` distances from :func:`lcs_lengths`: FAMSA's ``indel / (indel +
    LCS)``, its ties broken by FAMSA's other measure, ``constants.LCS_TIE x sqrt(indel) /
    LCS`` (LCS at least 1; decision 0065).

    ``indel + LCS = |a| + |b| - LCS`` is 0 only for two empty sequences, whose distance is 0;
    an empty sequence is at distance 1 (plus its tie term) from any other. The diagonal is 0.
    The work buffers take ``rows`` rows at a time beside the result.
    """
    lens = lengths.to(device=lcs.device, dtype=torch.float64)
    n = lcs.shape[0]
    dist = torch.empty((n, n), dtype=torch.float64, device=lcs.device)
    for r0 in range(0, n, rows):
        c = lcs[r0 : r0 + rows].to(torch.float64)
        union = lens[r0 : r0 + rows, None] + lens[None, :]
        union -= c
        indel = union - c
        tie = indel.sqrt().div_(c.clamp_min_(1.0)).mul_(LCS_TIE)
        torch.div(indel, union.clamp_min_(1.0), out=dist[r0 : r0 + rows]).add_(tie)
    dist.fill_diagonal_(0.0)
    return dist


def lcs_single_linkage(
    codes: torch.Tensor,
    lengths: torch.Tensor,
    backend: str = "auto",
    *,
    block_bytes: int = ROW_BLOCK_BYTES,
) -> tuple:
    """Single linkage on :func:`lcs_distances` without the ``N x N`` matrix: the LCS rows of
    the lower triangle are made a block at a time (about ``block_bytes``) and fed to SLINK
    (:mod:`torchmsa.cpu.slink`), so memory is ``O(N)`` plus one block. The joins are those of
    :func:`torchmsa.ops.linkage.single_linkage` on the full matrix, on every backend.

    Returns:
        ``(children int64 [N-1, 2], heights float64 [N-1])`` as numpy arrays.
    """
    import numpy as np

    from torchmsa.cpu import tree as cpu_tree
    from torchmsa.cpu.slink import SlinkState, lcs_key_rows

    n = codes.shape[0]
    if n < 2:
        return cpu_tree.spanning_joins(np.empty(0), np.empty(0), np.empty(0))
    step = max(1, min(n, block_bytes // (12 * n)))
    if resolve_backend(backend, codes.device) == "triton":
        from torchmsa._triton import lcs as triton_lcs

        order, s_codes, s_lens, masks, n_words = triton_lcs.sorted_masks(
            codes, lengths.to(codes.device)
        )
        ids, lens = order.cpu().numpy(), s_lens.cpu().numpy().astype(np.int64)

        def rows(r0, r1):
            return triton_lcs.lcs_rows(s_codes, s_lens, masks, n_words, r0, r1).cpu().numpy()
    else:
        from torchmsa.cpu.lcs import host_inputs, lcs_masks
        from torchmsa.cpu.lcs_rows import lcs_rows

        host_codes, lens = host_inputs(codes, lengths)
        masks = lcs_masks(host_codes, lens)
        ids = np.arange(n, dtype=np.int64)

        def rows(r0, r1):
            return lcs_rows(host_codes, lens, masks, r0, r1)

    state = SlinkState(ids)
    for r0 in range(0, n, step):
        r1 = min(n, r0 + step)
        block = rows(r0, r1)
        dist = np.empty(block.shape, np.float64)
        lcs_key_rows(block, lens, r0, dist)
        state.add_rows(dist)
    return cpu_tree.spanning_joins(*state.edges())
