"""The score of given paths under the DP's global-mode rules, for many pairs at once
(:mod:`torchmsa.cpu.rules.path_score` is the numba twin, one path at a time)."""

from __future__ import annotations

import torch

from torchmsa.constants import OP_MATCH, OP_UP
from torchmsa.ops.rules.facing import facing


def path_scores(
    S: torch.Tensor,
    s_off: torch.Tensor,
    op: torch.Tensor,
    ia: torch.Tensor,
    jb: torch.Tensor,
    m: torch.Tensor,
    costs_a: tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor],
    costs_b: tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor],
    ext: int,
) -> torch.Tensor:
    """``int64 [K]``: the score of each pair's path ``op`` through its packed scores.

    A run of gaps at one boundary pays its opening cost at the first column it faces and its
    closing cost at the last (each scaled by that column's residue factor, :mod:`.facing`);
    between two of its columns it pays ``ext``, or closing and reopening when that is cheaper,
    except in a run at the start of the path, which pays ``ext``.

    Arguments:
        S, s_off: packed ``int32`` column scores, pair k's ``[n_k, m_k]`` at ``s_off[k]``.
        op: ``[K, T]`` each path's steps (``OP_MATCH``, ``OP_UP``, ``OP_LEFT``).
        ia, jb: ``int64 [K, T]`` the columns of the first / second profile before each step.
        m: ``int64 [K]`` the second profiles' columns.
        costs_a, costs_b: each profile's ``(off, open, close, res)``: its first boundary in the
            packed ``open`` / ``close`` halves and residue factors (factor of column i at
            ``off + i + 1``).
        ext: the gap extension cost.
    """
    off_a, open_a, close_a, res_a = costs_a
    off_b, open_b, close_b, res_b = costs_b
    match = op == OP_MATCH
    s_idx = s_off[:, None] + ia * m[:, None] + jb
    if S.numel():  # unmatched steps read cell 0 and drop it
        total = torch.where(match, S[torch.where(match, s_idx, 0)].long(), 0).sum(1)
    else:  # no pair has two non-empty profiles, so no step matches
        total = torch.zeros(match.shape[0], dtype=torch.int64, device=match.device)
    start = torch.ones_like(match)
    start[:, 1:] = op[:, 1:] != op[:, :-1]
    end = torch.ones_like(match)
    end[:, :-1] = op[:, :-1] != op[:, 1:]
    lead = torch.cumsum(start.long(), 1) == 1
    up = op == OP_UP
    # an UP step faces A column ia (factor index ia + 1) inside B's boundary jb; LEFT mirrors
    ba, bb = off_a[:, None] + ia, off_b[:, None] + jb
    o = torch.where(up, open_b[bb], open_a[ba])
    c = torch.where(up, close_b[bb], close_a[ba])
    res_a, res_b = (torch.cat([r, r.new_zeros(2)]) for r in (res_a, res_b))
    fa, fb = off_a[:, None] + ia + 1, off_b[:, None] + jb + 1
    r_here = torch.where(up, res_a[fa], res_b[fb])
    r_next = torch.where(up, res_a[fa + 1], res_b[fb + 1])
    step = torch.where(lead, ext, (facing(c, r_here) + facing(o, r_next)).clamp(max=ext))
    cost = start * facing(o, r_here) + end * facing(c, r_here) + (~end) * step
    return total - torch.where(match, 0, cost).sum(1)
