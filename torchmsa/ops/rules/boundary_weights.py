"""Children's boundary weights in their parents (:mod:`torchmsa.cpu.rules.boundary_weights`
is the numba twin, one child at a time)."""

from __future__ import annotations

import torch


def merged_boundaries(
    both: torch.Tensor,
    new_col: torch.Tensor,
    first: torch.Tensor,
    c: torch.Tensor,
    n: torch.Tensor,
    width: torch.Tensor,
    out_off: torch.Tensor,
    out: torch.Tensor,
) -> None:
    """Adds every child boundary's weight to its parent's ``out`` (``int64``; its last entry
    takes what is dropped): a boundary keeps its weight where the columns on both sides of it
    (or the profile's end) stay adjacent in the parent.

    Arguments, per child boundary (``[B]``):
        both: its weight.
        new_col: ``int64`` the parent column of every child column (:mod:`.path_columns`;
            at least one entry more than there are columns).
        first: where its child's columns start in ``new_col``.
        c: its index within its child (``0 .. n``).
        n: its child's columns.
        width: its parent's columns.
        out_off: where its parent's boundaries start in ``out``.
    """
    last = c == n
    here = new_col[(first + torch.minimum(c, n - 1)).clamp_min(0)] + last
    before = torch.where(c == 0, 0, new_col[first + (c - 1).clamp_min(0)] + 1)
    keep = (here == before) & (~last | (here == width)) & (n > 0)
    out.index_add_(0, torch.where(keep, out_off + here, out.numel() - 1), both)
