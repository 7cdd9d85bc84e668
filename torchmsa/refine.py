"""Iterative refinement by tree-dependent partitioning, evaluated in batches (seed 000, stage 4).

Every tree edge splits the sequences in two groups. Removing one group's all-gap columns gives
two sub-alignments; realigning them with the profile DP can only raise their group-to-group score
(the current alignment is one of the DP's paths). The gain of an edge is the DP optimum minus
the score of the current path, times the groups' weight product so that gains of different
edges are in the same (weighted sum-of-pairs) units.

A round evaluates every edge in one batched DP call, applies the best gain, then re-evaluates and
applies the next candidates one by one against the updated alignment; rounds repeat until no
edge gains or the round cap is reached.
"""

from __future__ import annotations

import numpy as np
import torch

from torchmsa.consistency import partition_tile
from torchmsa.cpu import dp as cpu_dp
from torchmsa.cpu.dp import GLOBAL, OP_LEFT, OP_UP
from torchmsa.cpu.groups import group_profile
from torchmsa.ops.colscores import column_scores
from torchmsa.ops.profile import profile_align
from torchmsa.progressive import ProfileScoring, open_costs, residue_factors, split_cost

__all__ = ["refine", "partitions"]

FOLLOW_UPS = 8


def partitions(tree) -> list[np.ndarray]:
    """Leaf sets of one side of every distinct tree edge (one child of the root is skipped)."""
    n = tree.n_leaves
    if n < 3:
        return []
    under = tree.leaves_under()
    root_kids = set(int(c) for c in tree.children[-1])
    skip = max(root_kids)
    out = [np.array([leaf]) for leaf in range(n) if leaf != skip]
    out += [np.asarray(under[k]) for k in range(n - 1) if n + k not in (skip, tree.root)]
    return out


def _group(codes_np, rows, weights_np, gap, n_alpha, device):
    keep, prof, both, w = group_profile(codes_np, rows.cpu().numpy(), weights_np, gap, n_alpha)
    return (
        torch.from_numpy(keep).to(device),
        torch.from_numpy(prof).to(device),
        int(w),
        torch.from_numpy(both).to(device),
    )


class _Candidate:
    """One edge's two groups, scores and costs against the current alignment."""

    def __init__(self, codes, codes_np, rows_a, weights, weights_np, scoring, gap, cons=None):
        n_alpha = scoring.matrix.shape[0]
        rows_b = torch.ones(codes.shape[0], dtype=torch.bool, device=codes.device)
        rows_b[rows_a] = False
        self.rows_a, self.rows_b = rows_a, torch.nonzero(rows_b).squeeze(1)
        dev = codes.device
        self.keep_a, prof_a, self.w_a, both_a = _group(
            codes_np, self.rows_a, weights_np, gap, n_alpha, dev
        )
        self.keep_b, prof_b, self.w_b, both_b = _group(
            codes_np, self.rows_b, weights_np, gap, n_alpha, dev
        )
        mat = scoring.matrix.to(device=codes.device, dtype=torch.float64)
        self.S = column_scores(prof_a, prof_b, mat, self.w_a, self.w_b)
        if cons is not None:
            side_a = torch.zeros(codes.shape[0], dtype=torch.bool, device=dev)
            side_a[rows_a] = True
            self.S += partition_tile(
                cons.lib,
                cons.weight,
                side_a,
                cons.res_col,
                cons.seq_off,
                self.keep_a,
                self.keep_b,
                self.w_a,
                self.w_b,
                weights,
            )
        self.open_a, self.close_a, self.res_a = self._costs(both_a, prof_a, self.w_a, scoring)
        self.open_b, self.close_b, self.res_b = self._costs(both_b, prof_b, self.w_b, scoring)
        ka, kb = self.keep_a, self.keep_b
        live = ka | kb
        old = torch.where(ka & kb, 0, torch.where(ka, OP_UP, OP_LEFT))[live].to(torch.uint8)
        self.old = int(
            cpu_dp.path_score(
                self.S.cpu().numpy(),
                self.open_a.cpu().numpy(),
                self.close_a.cpu().numpy(),
                self.open_b.cpu().numpy(),
                self.close_b.cpu().numpy(),
                self.res_a.cpu().numpy(),
                self.res_b.cpu().numpy(),
                scoring.gap_extend,
                old.cpu().numpy(),
                old.numel(),
            )
        )

    @staticmethod
    def _costs(both, prof, w, scoring):
        """The group's (opening, closing, residue factor) per boundary, as in progression."""
        ends = torch.zeros_like(both, dtype=torch.bool)
        ends[0] = ends[-1] = True
        g_open, g_close = split_cost(open_costs(both, torch.full_like(both, w), ends, scoring))
        res = torch.zeros_like(g_open)
        res[1:] = residue_factors(prof.sum(1), torch.full_like(both[1:], w))
        return g_open, g_close, res


def _align_batch(cands, ext, backend):
    device = cands[0].S.device
    n = torch.tensor([c.S.shape[0] for c in cands], dtype=torch.int64)
    m = torch.tensor([c.S.shape[1] for c in cands], dtype=torch.int64)
    s_off = torch.cumsum(n * m, 0) - n * m
    a_off = torch.cumsum(n + 1, 0) - (n + 1)
    b_off = torch.cumsum(m + 1, 0) - (m + 1)
    S = torch.cat([c.S.reshape(-1) for c in cands])
    info, ops, ops_off = profile_align(
        S,
        s_off.to(device),
        n.to(torch.int32).to(device),
        m.to(torch.int32).to(device),
        torch.cat([c.open_a for c in cands]),
        torch.cat([c.close_a for c in cands]),
        a_off.to(device),
        torch.cat([c.open_b for c in cands]),
        torch.cat([c.close_b for c in cands]),
        b_off.to(device),
        ext,
        GLOBAL,
        torch.cat([c.res_a for c in cands]),
        torch.cat([c.res_b for c in cands]),
        backend=backend,
    )
    info, ops, ops_off = info.cpu(), ops.cpu(), ops_off.cpu()
    return [(int(info[k, 0]), ops[ops_off[k] : ops_off[k] + info[k, 1]]) for k in range(len(cands))]


def _apply(codes, cand, ops, gap):
    ops = ops.to(codes.device)
    width = ops.numel()
    out = torch.full((codes.shape[0], width), gap, dtype=codes.dtype, device=codes.device)
    pos = torch.arange(width, device=codes.device)
    pos_a, pos_b = pos[ops != OP_LEFT], pos[ops != OP_UP]
    out[cand.rows_a[:, None], pos_a[None, :]] = codes[cand.rows_a][:, cand.keep_a]
    out[cand.rows_b[:, None], pos_b[None, :]] = codes[cand.rows_b][:, cand.keep_b]
    return out


class _Cons:
    """A job's library with the residue layout of its current alignment."""

    def __init__(self, lib, weight, gap):
        self.lib, self.weight, self.gap = lib, weight, gap

    def update(self, codes):
        residue = codes != self.gap
        counts = residue.sum(1)
        self.seq_off = torch.cat([counts.new_zeros(1), torch.cumsum(counts, 0)])
        cols = torch.arange(codes.shape[1], device=codes.device).expand_as(codes)
        self.res_col = cols[residue]
        return self


def refine(
    codes: torch.Tensor,
    tree,
    weights: torch.Tensor,
    scoring: ProfileScoring,
    gap: int,
    max_rounds: int = 8,
    backend: str = "auto",
    library=None,
    consistency_weight: int = 0,
) -> tuple[torch.Tensor, int]:
    """Refine ``codes`` (``uint8 [N, C]``); returns the new codes and the edges applied.

    Arguments:
        codes: the alignment.
        tree: the guide tree whose edges give the partitions.
        weights: ``int64 [N]`` quantized sequence weights.
        scoring: the profile scoring (the objective).
        gap: the gap code.
        max_rounds: at most this many rounds (each: one batch over all edges plus follow-ups).
        backend: DP backend.
        library: optional :class:`torchmsa.consistency.Library` of the job: its consistency
            (times ``consistency_weight``) joins the objective (accurate mode).
    """
    groups = [
        torch.tensor(np.array(g), dtype=torch.int64, device=codes.device) for g in partitions(tree)
    ]
    weights = weights.to(codes.device)
    cons = _Cons(library, consistency_weight, gap) if library is not None else None
    applied = 0
    for _ in range(max_rounds):
        if not groups:
            break
        codes_np, weights_np = codes.cpu().numpy(), weights.cpu().numpy()
        now = cons.update(codes) if cons is not None else None
        cands = [
            _Candidate(codes, codes_np, g, weights, weights_np, scoring, gap, now) for g in groups
        ]
        results = _align_batch(cands, scoring.gap_extend, backend)
        gains = [(score - c.old) * c.w_a * c.w_b for c, (score, _) in zip(cands, results)]
        order = [
            k
            for k in np.argsort(-np.asarray(gains, dtype=np.float64), kind="stable")
            if gains[k] > 0
        ]
        if not order:
            break
        codes = _apply(codes, cands[order[0]], results[order[0]][1], gap)
        applied += 1
        for k in order[1 : 1 + FOLLOW_UPS]:
            now = cons.update(codes) if cons is not None else None
            cand = _Candidate(
                codes, codes.cpu().numpy(), groups[k], weights, weights_np, scoring, gap, now
            )
            score, ops = _align_batch([cand], scoring.gap_extend, backend)[0]
            if score > cand.old:
                codes = _apply(codes, cand, ops, gap)
                applied += 1
    return codes, applied
