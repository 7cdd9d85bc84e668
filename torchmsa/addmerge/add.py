"""The batched core of ``add``: every new sequence aligned to the reference profile, many
sequences per DP call (:func:`~torchmsa.ops.profile.profile_align`: Triton on a GPU, numba on
the CPU), batches sized to the memory budget, then one layout of all residues."""

from __future__ import annotations

import numpy as np
import torch

from torchmsa.addmerge.place import Placed, insertion_widths, layout, place_paths
from torchmsa.addmerge.profile import ReferenceProfile, packed_scores, sequence_costs
from torchmsa.config import ExecutionPolicy, MemoryBudget
from torchmsa.constants import GLOBAL
from torchmsa.errors import ResourceError
from torchmsa.ops.profile import profile_align
from torchmsa.progressive import ProfileScoring
from torchmsa.stages import stage

__all__ = ["ADD_CELL_BYTES", "add_codes", "batches"]

# device bytes per DP cell of a batch: the gathered scores with their padding and mask, the
# packed scores (the DP's own buffers are planned by its dispatcher from the same budget)
ADD_CELL_BYTES = 16


def batches(cells: np.ndarray, limit: int) -> list[tuple[int, int]]:
    """Consecutive ranges of ``cells`` (sequences in length order) of at most ``limit`` cells
    each (one sequence at least)."""
    ends = np.cumsum(cells)
    out, start = [], 0
    while start < len(cells):
        base = ends[start - 1] if start else 0
        stop = max(start + 1, int(np.searchsorted(ends, base + limit, side="right")))
        out.append((start, stop))
        start = stop
    return out


def add_codes(
    ref_codes: torch.Tensor,
    ref: ReferenceProfile,
    codes: torch.Tensor,
    lengths: torch.Tensor,
    scoring: ProfileScoring,
    gap: int,
    backend: str,
    *,
    keep_length: bool = False,
    fragments: bool = False,
    policy: ExecutionPolicy | None = None,
    budget: MemoryBudget | None = None,
    progress=None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The alignment of the reference rows and the new sequences, and which residues stay.

    Arguments:
        ref_codes: ``uint8 [R, C]`` the reference alignment (kept column for column).
        ref: its profile (:func:`~torchmsa.addmerge.profile.reference_profile`).
        codes, lengths: ``uint8 [K, Lmax]`` and ``int [K]`` the new sequences.
        scoring: the profile scoring; gap: the gap code; backend: DP backend.
        keep_length: drop the residues that fall between reference columns.
        fragments: the new sequences' end gaps are free.
        policy, budget: ``policy.max_batch_cells`` and the budget cap a batch's DP cells.
        progress: optional callable ``progress(done, total)`` over the new sequences.

    Returns:
        ``(codes uint8 [R + K, W], kept bool [sum L])``: reference rows first, and for every
        new residue (sequence order) whether it is in the result.
    """
    policy = ExecutionPolicy() if policy is None else policy
    budget = MemoryBudget() if budget is None else budget
    device = ref_codes.device
    width = ref_codes.shape[1]
    n_new = codes.shape[0]
    lens = lengths.cpu().numpy().astype(np.int64)
    order = np.argsort(lens, kind="stable")
    cells = np.maximum(lens[order], 1) * max(width, 1)
    limit = budget.limit(device)
    mem_cells = max(1, limit // ADD_CELL_BYTES)
    max_cells = min(policy.max_batch_cells, mem_cells)
    if len(cells) and int(cells[-1]) > mem_cells:
        raise ResourceError(
            f"aligning a sequence of {int(lens[order[-1]])} residues to {width} reference columns",
            int(cells[-1]) * ADD_CELL_BYTES,
            limit,
            f"add fewer columns or shorter sequences; the limit is {budget.source(device)}",
        )
    placed: list[Placed] = []
    done = 0
    with stage("add_paths"):
        for lo, hi in batches(cells, max_cells):
            placed.append(
                _align_batch(ref, codes, lengths, order[lo:hi], width, scoring, backend, fragments)
            )
            done += hi - lo
            if progress is not None:
                progress(done, n_new)
    with stage("add_layout"):
        return _assemble(ref_codes, placed, codes, lengths, width, gap, keep_length)


def _align_batch(ref, codes, lengths, idx, width, scoring, backend, fragments) -> Placed:
    device = ref.table.device
    sel = torch.from_numpy(idx).to(codes.device)
    lens = lengths[sel].to(device=device, dtype=torch.int64)
    lmax = int(lens.max()) if lens.numel() else 0
    batch = codes[sel, :lmax].to(device)
    S, s_off = packed_scores(ref.table, batch, lens)
    open_b, close_b, res_b, b_off = sequence_costs(lens, scoring, fragments)
    n_pairs = len(idx)
    n = torch.full((n_pairs,), width, dtype=torch.int32)
    a_off = torch.zeros(n_pairs, dtype=torch.int64, device=device)
    info, ops, ops_off = profile_align(
        S,
        s_off,
        n,
        lens.to(torch.int32).cpu(),
        ref.open,
        ref.close,
        a_off,
        open_b,
        close_b,
        b_off,
        scoring.gap_extend,
        GLOBAL,
        ref.res,
        res_b,
        backend=backend,
    )
    ops = torch.as_tensor(ops).to(device)
    ops_off = torch.as_tensor(ops_off).to(device)
    n_ops = torch.as_tensor(info)[:, 1].to(device)
    return place_paths(ops, ops_off, n_ops, sel.to(device), width)


def _assemble(ref_codes, placed, codes, lengths, width, gap, keep_length):
    device = ref_codes.device
    n_ref = ref_codes.shape[0]
    n_new = codes.shape[0]
    if keep_length:
        widths = torch.zeros(width + 1, dtype=torch.int64, device=device)
    else:
        widths = insertion_widths(placed, width, device)
    if placed:
        every = Placed(*(torch.cat([getattr(p, f) for p in placed]) for f in Placed._fields))
    else:
        empty = torch.zeros(0, dtype=torch.int64, device=device)
        every = Placed(empty, empty, empty, empty, empty)
    # residues by (sequence, position): batches ran in length order
    order = torch.argsort(every.seq, stable=True)
    every = Placed(*(t[order] for t in every))
    ref_cols, res_cols = layout(every, widths, width)
    total = width + int(widths.sum())
    out = torch.full((n_ref + n_new, total), gap, dtype=torch.uint8, device=device)
    out[:n_ref, ref_cols] = ref_codes
    lens = lengths.to(device=device, dtype=torch.int64)
    valid = torch.arange(codes.shape[1], device=device)[None, :] < lens[:, None]
    residues = codes.to(device)[valid]  # sequence order, then position
    kept = res_cols >= 0
    out[n_ref + every.seq[kept], res_cols[kept]] = residues[kept]
    return out, kept
