"""Profile column scores of a whole batch of pairs, exact, packed one pair after another.

Pairs of similar sizes share one batched matrix product (padded within :data:`PAD_SLACK`);
each value is the rule of :mod:`torchmsa.ops.rules.column_scores` (occupancy divisors, exact
floors), the same integers as scoring the pairs one by one. On the CPU the numba kernel
:func:`torchmsa.cpu.colscores.packed_column_scores` computes them instead: the dense product
spends ~24 multiply-adds per cell where a family's columns hold one or a few residue types
(a leaf exactly one), so summing over the sparser side's nonzeros is several times faster,
and it gives the same integers (the sums are exact in any order, the division is the same).
"""

from __future__ import annotations

import numpy as np
import torch

from torchmsa.constants import OCC_SHIFT
from torchmsa.cpu.colscores import packed_column_scores
from torchmsa.ops.backend import to_device
from torchmsa.ops.rules.column_scores import column_scores, occupancy_divisors

__all__ = ["column_scores", "batched_column_scores", "occupancy_divisors", "PAD_SLACK"]

PAD_SLACK = 2.0  # a bucket may hold up to this many padded cells per real cell
CPU_ALONE_CELLS = 1 << 14  # on the CPU a pair this large is scored alone (padding costs more)


def _buckets(
    cells: list[int], n: list[int], m: list[int], alone: int | None = None
) -> list[list[int]]:
    """Group pairs (largest first) so that padding stays within :data:`PAD_SLACK`; pairs of
    at least ``alone`` cells get a bucket of their own."""
    order = sorted(range(len(cells)), key=lambda p: (-cells[p], p))
    out: list[list[int]] = []
    cur: list[int] = []
    real = n_max = m_max = 0
    for p in order:
        if alone is not None and cells[p] >= alone:
            out.append([p])
            continue
        nn, mm = max(n_max, n[p]), max(m_max, m[p])
        if cur and (len(cur) + 1) * nn * mm > PAD_SLACK * (real + cells[p]) + 64:
            out.append(cur)
            cur, real, nn, mm = [], 0, n[p], m[p]
        cur.append(p)
        real += cells[p]
        n_max, m_max = nn, mm
    if cur:
        out.append(cur)
    return out


def batched_column_scores(
    prof: torch.Tensor,
    off_a: torch.Tensor,
    n: torch.Tensor,
    off_b: torch.Tensor,
    m: torch.Tensor,
    w_a: torch.Tensor,
    w_b: torch.Tensor,
    matrix: torch.Tensor,
    *,
    occ_shift: int = OCC_SHIFT,
    dense: bool = False,
):
    """Column scores of many profile pairs, packed.

    Arguments:
        prof: ``float64 [R, A]`` profile rows of every profile (integer weight sums).
        off_a, n: ``int64 [P]`` first row and row count of each pair's first profile.
        off_b, m: the same for the second profiles.
        w_a, w_b: ``int64 [P]`` the profiles' total weights.
        (These six may be tensors on any device or host arrays: the host needs them to plan
        the buckets, so host arrays save a wait for the device.)
        matrix: ``float64 [A, A]`` integer substitution scores.
        occ_shift: the occupancy floor (:func:`occupancy_divisors`).
        dense: on the CPU, the batched torch products (the GPU's way) instead of the sparse
            numba kernel: the same integers (tests compare the two).

    Returns:
        ``(S int32 [sum(n*m)], s_off int64 [P])``: pair p's ``[n_p, m_p]`` scores, row-major,
        at ``s_off[p]``; the same values as :func:`column_scores` pair by pair.
    """
    device = prof.device
    host = [
        (x.cpu().numpy() if torch.is_tensor(x) else np.asarray(x)).astype(np.int64)
        for x in (off_a, n, off_b, m, w_a, w_b)
    ]
    off_a_l, n_l, off_b_l, m_l, wa_l, wb_l = (x.tolist() for x in host)
    cells_h = host[1] * host[3]
    s_off_h = np.cumsum(cells_h) - cells_h
    total = int(cells_h.sum())
    if device.type == "cpu" and not dense:
        S = torch.empty(total, dtype=torch.int32)
        packed_column_scores(
            prof.double().contiguous().numpy(),
            matrix.double().contiguous().numpy(),
            *host,
            s_off_h,
            int(occ_shift),
            S.numpy(),
        )
        return S, torch.from_numpy(s_off_h)
    dev = to_device(np.stack([*host, s_off_h]), device)
    off_a, n, off_b, m, w_a, w_b, s_off = dev.unbind(0)
    c_l, s_off_l = cells_h.tolist(), s_off_h.tolist()
    S = torch.empty(total + 1, dtype=torch.int32, device=device)  # slot `total`: a dump
    padded = torch.cat([prof, prof.new_zeros(1, prof.shape[1])])
    sums = padded.sum(1)
    zero_row = prof.shape[0]
    pm = prof @ matrix
    pm = torch.cat([pm, pm.new_zeros(1, pm.shape[1])])
    alone = CPU_ALONE_CELLS if device.type == "cpu" else None
    for bucket in _buckets(c_l, n_l, m_l, alone):
        if len(bucket) == 1:
            p = bucket[0]
            block = column_scores(
                prof[off_a_l[p] : off_a_l[p] + n_l[p]],
                prof[off_b_l[p] : off_b_l[p] + m_l[p]],
                matrix,
                wa_l[p],
                wb_l[p],
                occ_shift,
            )
            S[s_off_l[p] : s_off_l[p] + c_l[p]] = block.view(-1)
            continue
        idx = to_device(np.asarray(bucket, np.int64), device)
        n_max, m_max = max(n_l[p] for p in bucket), max(m_l[p] for p in bucket)
        ia = torch.arange(n_max, device=device)
        ib = torch.arange(m_max, device=device)
        nb, mb = n[idx][:, None], m[idx][:, None]
        rows_a = torch.where(ia < nb, off_a[idx][:, None] + ia, zero_row)
        rows_b = torch.where(ib < mb, off_b[idx][:, None] + ib, zero_row)
        raw = torch.bmm(pm[rows_a], padded[rows_b].transpose(1, 2))
        d_a = occupancy_divisors(sums[rows_a], w_a[idx][:, None], occ_shift)
        d_b = occupancy_divisors(sums[rows_b], w_b[idx][:, None], occ_shift)
        vals = torch.floor(raw.div_(d_a[:, :, None] * d_b[:, None, :])).to(torch.int32)
        if device.type == "cuda":  # one scatter beats a launch per pair
            valid = (ia[None, :, None] < nb[:, :, None]) & (ib[None, None, :] < mb[:, None, :])
            dest = s_off[idx][:, None, None] + ia[None, :, None] * mb[:, :, None]
            dest = torch.where(valid, dest + ib[None, None, :], total)
            S[dest.view(-1)] = vals.view(-1)
        else:  # on the CPU plain copies of each pair's block are cheaper than a masked scatter
            for k, p in enumerate(bucket):
                block = vals[k, : n_l[p], : m_l[p]].reshape(-1)
                S[s_off_l[p] : s_off_l[p] + c_l[p]] = block
    return S[:total], s_off
