"""Where ``add`` puts each new residue: from the paths against the reference to columns of the
result, with the reference's columns kept in order.

A path step either takes a reference column with a residue (a match), a reference column with
a gap, or a residue against no reference column (an insertion at the boundary before the next
reference column). Insertions at one boundary, from every new sequence, share a block of new
columns as wide as the longest of them; inside a block a sequence's residues are not aligned
to other sequences' (as in A3M and hmmalign): at the N-terminal boundary they are flush right,
at the C-terminal one flush left, and inside the alignment the first half of a run is flush
left and the second half flush right, so residues next to reference columns stay next to them.
"""

from __future__ import annotations

from typing import NamedTuple

import torch

from torchmsa.constants import OP_LEFT, OP_UP

__all__ = ["Placed", "place_paths", "insertion_widths", "layout"]


class Placed(NamedTuple):
    """The residues of some new sequences, in sequence order then residue order."""

    seq: torch.Tensor  # int64 [T] the sequence (index into the call's new sequences)
    col: torch.Tensor  # int64 [T] the matched reference column, or -1 for an insertion
    bnd: torch.Tensor  # int64 [T] an insertion's boundary (0 .. C), else -1
    rank: torch.Tensor  # int64 [T] an insertion's place in its run
    run: torch.Tensor  # int64 [T] its run's length


def place_paths(
    ops: torch.Tensor,
    ops_off: torch.Tensor,
    n_ops: torch.Tensor,
    seq: torch.Tensor,
    width: int,
) -> Placed:
    """The residues of the paths ``ops`` (pair p's ``n_ops[p]`` steps at ``ops_off[p]``,
    the reference of ``width`` columns first), pair p being new sequence ``seq[p]``."""
    device = ops.device
    n_ops = n_ops.to(device=device, dtype=torch.int64)
    ops_off = ops_off.to(device=device, dtype=torch.int64)
    n_pairs = n_ops.numel()
    total = int(n_ops.sum())
    pair = torch.repeat_interleave(torch.arange(n_pairs, device=device), n_ops, output_size=total)
    first = torch.cumsum(n_ops, 0) - n_ops
    idx = torch.arange(total, device=device)
    flat = ops[ops_off[pair] + idx - first[pair]]
    is_ref = flat != OP_LEFT
    ref_before = torch.cumsum(is_ref, 0) - is_ref.long() - pair * width
    # the last step before each that took a reference column (the pair's start - 1 if none)
    last_ref = torch.cummax(torch.where(is_ref, idx, first[pair] - 1), 0).values
    rank = idx - last_ref - 1
    insert = flat == OP_LEFT
    key = pair * (width + 1) + ref_before
    runs = torch.zeros(n_pairs * (width + 1), dtype=torch.int64, device=device)
    runs.scatter_reduce_(0, key[insert], rank[insert] + 1, "amax")
    take = flat != OP_UP
    seq_t = seq.to(device=device, dtype=torch.int64)[pair[take]]
    ins_t = insert[take]
    return Placed(
        seq_t,
        torch.where(ins_t, -1, ref_before[take]),
        torch.where(ins_t, ref_before[take], -1),
        torch.where(ins_t, rank[take], 0),
        torch.where(ins_t, runs[key[take]], 0),
    )


def insertion_widths(placed: list[Placed], width: int, device) -> torch.Tensor:
    """``int64 [C + 1]``: each boundary's block width, the longest run there."""
    out = torch.zeros(width + 1, dtype=torch.int64, device=device)
    for p in placed:
        ins = p.bnd >= 0
        out.scatter_reduce_(0, p.bnd[ins].to(device), p.run[ins].to(device), "amax")
    return out


def layout(placed: Placed, widths: torch.Tensor, width: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``(ref_cols int64 [C], res_cols int64 [T])``: the result's column of every reference
    column and of every placed residue (``-1``: dropped, an insertion where ``widths`` is 0
    there, as ``keep_length`` makes every width)."""
    device = widths.device
    incl = torch.cumsum(widths, 0)
    ref_cols = torch.arange(width, device=device) + incl[:width]
    col, bnd = placed.col.to(device), placed.bnd.to(device)
    rank, run = placed.rank.to(device), placed.run.to(device)
    b = bnd.clamp_min(0)
    start = b + incl[b] - widths[b]
    block = widths[b]
    left = start + rank
    right = start + block - run + rank
    inner = torch.where(rank < (run + 1) // 2, left, right)
    at = torch.where(b == 0, right, torch.where(b == width, left, inner))
    at = torch.where(block > 0, at, -1)
    res_cols = torch.where(bnd >= 0, at, ref_cols[col.clamp_min(0)] if width else col)
    return ref_cols, res_cols
