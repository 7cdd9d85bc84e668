"""One tree level as a handful of batched tensor operations, the same on the CPU and on a GPU.

1. the children's profiles, gathered into ``float64 [sum(C), A]`` (exact: integers below 2^53);
2. column scores per node pair (:func:`~torchmsa.ops.colscores.batched_column_scores`), plus
   accurate mode's consistency tiles;
3. boundary gap costs (:mod:`torchmsa.ops.rules.gap_costs`) and residue factors
   (:mod:`torchmsa.ops.rules.residue_factors`);
4. one batched DP call (:func:`~torchmsa.ops.profile.profile_align`) for every node pair;
5. the merge: each child column's parent column comes from the traceback ops
   (:mod:`torchmsa.ops.rules.path_columns`); the parents' profiles and boundary weights are
   scatter-added from the children's (:mod:`torchmsa.ops.rules.boundary_weights`).

A level whose pairs do not fit the memory budget is split (:func:`split_level`): pairs of one
level are independent, so the parts give the same result as the whole level.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import torch

from torchmsa.config import MemoryBudget
from torchmsa.constants import GLOBAL
from torchmsa.errors import ResourceError
from torchmsa.ops.colscores import batched_column_scores
from torchmsa.ops.profile import profile_align
from torchmsa.ops.rules.boundary_weights import merged_boundaries
from torchmsa.ops.rules.gap_costs import gap_costs
from torchmsa.ops.rules.path_columns import path_columns
from torchmsa.ops.rules.residue_factors import residue_factors
from torchmsa.progressive.nodes import Nodes, excl, upload
from torchmsa.progressive.scoring import ProfileScoring
from torchmsa.stages import stage

__all__ = ["Layout", "LevelInputs", "align_level", "kid_profiles", "split_level"]

# device bytes of a batched level per DP cell (packed scores, the bucket's float64 products and
# their int32 copy, scatter indices) and per child column and residue (profiles and products)
LEVEL_CELL_BYTES = 32
LEVEL_COLUMN_BYTES = 24


class LevelInputs(NamedTuple):
    """A level's DP inputs (:func:`~torchmsa.ops.profile.profile_align`'s arguments)."""

    S: torch.Tensor  # int32 [sum(n*m)] packed column scores, pair p's at s_off[p]
    s_off: torch.Tensor  # int64 [P]
    n: torch.Tensor  # int32 [P] the first children's columns
    m: torch.Tensor  # int32 [P] the second children's
    open: torch.Tensor  # int32 [K + 2P] opening halves of every child boundary's gap cost
    close: torch.Tensor  # int32 [K + 2P] closing halves
    a_off: torch.Tensor  # int64 [P] the first children's first boundaries
    b_off: torch.Tensor  # int64 [P] the second children's
    res: torch.Tensor  # int32 [K + 2P] residue factors (column k of a child at its boundary k+1)


def align_level(
    st: Nodes,
    pairs: np.ndarray,
    scoring: ProfileScoring,
    device: torch.device,
    backend: str,
    cons=None,
    g: int = 0,
    track=None,
):
    """Aligns one level's node pairs (``int64 [P, 3]``: child, child, parent) on ``device``.

    ``cons`` (accurate mode): the :class:`~torchmsa.consistency.Consistency` whose level-``g``
    tiles join the scores; ``track``: the
    :class:`~torchmsa.progressive.columns.ColumnTracker` it reads residues' columns from.

    Returns ``(child element ids, their elements in the parents, the level's DP inputs)``, the
    first two on ``device``.
    """
    with stage("progressive_level"):
        P = len(pairs)
        kids = np.concatenate([pairs[:, 0], pairs[:, 1]])
        cols = st.cols[kids]
        kid_w = st.w[kids]
        st.fetch(kids[kids >= st.n_leaves], device)  # inner children from numba runs move here
        lay = Layout(st, kids, cols, device)
        col_off, v = lay.col_off, lay.v
        prof, both = kid_profiles(st, lay, device)
        ends = (lay.bpos == 0) | (lay.bpos == v["cols"][lay.bkid])
        group_w = v["w"][lay.bkid]
        g_open, g_close = gap_costs(
            both, group_w, ends, scoring.gap_open, scoring.terminal, scoring.occ_shift
        )
        res = torch.zeros_like(both, dtype=torch.int32)
        res[torch.arange(lay.K, device=device) + lay.kid + 1] = residue_factors(
            prof.sum(1), v["w"][lay.kid], scoring.occ_shift
        )
        n, m = cols[:P], cols[P:]
        S, s_off = batched_column_scores(
            prof,
            col_off[:P],
            n,
            col_off[P:],
            m,
            kid_w[:P],
            kid_w[P:],
            st.matrix(scoring, device),
            occ_shift=scoring.occ_shift,
        )
        if cons is not None:
            track.add_tiles(S, cons, g, kids, P, s_off, cols, kid_w)
        inputs = LevelInputs(
            S,
            s_off,
            torch.from_numpy(n.astype(np.int32)),
            torch.from_numpy(m.astype(np.int32)),
            g_open,
            g_close,
            v["bnd_off"][:P],
            v["bnd_off"][P:],
            res,
        )
        info, ops, _ = profile_align(
            S,
            s_off,
            inputs.n,
            inputs.m,
            g_open,
            g_close,
            inputs.a_off,
            g_open,
            g_close,
            inputs.b_off,
            scoring.gap_extend,
            GLOBAL,
            res,
            res,
            backend=backend,
        )
        new_col, elems, kid_elems = _merge(st, pairs, kids, cols, lay, prof, both, info, ops)
        if track is not None:
            track.move(kids, P, col_off, new_col, pairs[:, 2])
        return kid_elems, elems, inputs


def split_level(
    st: Nodes,
    pairs: np.ndarray,
    device: torch.device,
    budget: MemoryBudget,
    cap: int | None = None,
) -> list[np.ndarray]:
    """A level's pairs in parts that fit ``budget`` on ``device``, each planning at most
    ``cap`` bytes (``ExecutionPolicy.level_bytes``): a level of 10^5 pairs is no faster as
    one part of tens of GB than as parts of a few, and memory stays bounded however many
    sequences there are (issue #35)."""
    n, m = st.cols[pairs[:, 0]], st.cols[pairs[:, 1]]
    need = n * m * LEVEL_CELL_BYTES + (n + m) * st.n_alpha * LEVEL_COLUMN_BYTES
    limit = budget.limit(device)
    big = np.nonzero(need > limit)[0]
    if len(big):
        p = int(big[0])
        raise ResourceError(
            f"merging two profiles of {n[p]} and {m[p]} columns",
            int(need[p]),
            limit,
            "align fewer or shorter sequences (the widest profiles grow with both); the limit "
            f"is {budget.source(device)}",
        )
    if cap is not None:  # a part holds one pair at least, however large
        limit = min(limit, cap)
    ends = np.cumsum(need)
    parts, start = [], 0
    while start < len(pairs):
        base = ends[start - 1] if start else 0
        stop = max(start + 1, int(np.searchsorted(ends, base + limit, side="right")))
        parts.append(pairs[start:stop])
        start = stop
    return parts


class Layout:
    """A level's children laid out in order on the device: their columns ``0 .. K-1`` and
    boundaries ``0 .. K + 2P - 1``, each with its child and its place in that child. The
    inner children must live in ``device``'s pool already (their pool rows are read here).

    Only the children's own values cross from the host (``O(children)``, one copy); the
    per-column and per-boundary indices are made on the device, not as host numpy arrays of
    ``O(columns)`` copied up (``ab_versions-h100-bf10k-0a1a67e.md``).
    """

    def __init__(self, st: Nodes, kids: np.ndarray, cols: np.ndarray, device: torch.device):
        n_kids, K = len(kids), int(cols.sum())
        leaf = kids < st.n_leaves
        self.K, self.nb = K, K + n_kids
        self.col_off = excl(cols)
        self.v = upload(
            device,
            cols=cols,
            col_off=self.col_off,
            bnd_off=self.col_off + np.arange(n_kids),
            w=st.w[kids],
            leaf=leaf,
            # where a child's rows come from: a leaf's residues, an inner node's pool rows
            start=np.where(leaf, st.seq_off[np.where(leaf, kids, 0)], st.row[kids]),
            bstart=np.where(leaf, 0, st.bnd[kids]),
            elem=st.elem[kids],
        )
        v, every = self.v, torch.arange(n_kids, device=device)
        self.kid = torch.repeat_interleave(every, v["cols"], output_size=K)
        self.pos = torch.arange(K, device=device) - v["col_off"][self.kid]
        self.bkid = torch.repeat_interleave(every, v["cols"] + 1, output_size=self.nb)
        self.bpos = torch.arange(self.nb, device=device) - v["bnd_off"][self.bkid]


def kid_profiles(st: Nodes, lay: Layout, device):
    """Profiles ``float64 [K, A]`` and boundary weights ``int64 [K + 2P]`` of the level's
    children: leaves from their codes, internal nodes from their pools."""
    v = lay.v
    pool = st.pools[st.pool(device)]
    leaf = v["leaf"][lay.kid].bool()
    src = v["start"][lay.kid] + lay.pos
    # every column gathers its pool row (row 0 for a leaf's, then cleared) and a leaf's column
    # adds its weight at its residue's code
    prof = pool.prof[torch.where(leaf, 0, src)].to(torch.float64)
    prof.masked_fill_(leaf[:, None], 0.0)
    code = st.codes(device)[torch.where(leaf, src, 0)]
    weight = torch.where(leaf, v["w"][lay.kid], 0).to(torch.float64)
    prof.index_put_((torch.arange(lay.K, device=device), code), weight, accumulate=True)
    bleaf = v["leaf"][lay.bkid].bool()
    both = pool.both[torch.where(bleaf, 0, v["bstart"][lay.bkid] + lay.bpos)]
    leaf_w = torch.where(v["cols"][lay.bkid] > 0, v["w"][lay.bkid], 0)
    return prof, torch.where(bleaf, leaf_w, both)


def _merge(st, pairs, kids, cols, lay: Layout, prof, both, info, ops):
    """The parents of a level: their columns, profiles and boundary weights from the children's
    and the traceback ops; records where every child column went (``st`` element maps)."""
    device = prof.device
    P = len(pairs)
    n, m = cols[:P], cols[P:]
    W = info[:, 1].cpu().numpy().astype(np.int64)  # the level's one wait for the device
    sizes = n + m
    parents = pairs[:, 2]
    st.place(parents, W)
    p = upload(
        device,
        W=W,
        w_off=excl(W),
        wb_off=excl(W + 1),
        sizes=sizes,
        op_off=excl(sizes),
        elem=st.elem[parents],
    )
    T, K, v = int(sizes.sum()), lay.K, lay.v
    op_pair = torch.repeat_interleave(torch.arange(P, device=device), p["sizes"], output_size=T)
    t = torch.arange(T, device=device) - p["op_off"][op_pair]
    valid = t < p["W"][op_pair]
    slot = path_columns(ops[:T].to(device), t, valid, int(n.sum()), K)
    new_col = slot[:K]
    col_pair = lay.kid % P
    prof_par = torch.zeros((int(W.sum()), st.n_alpha), dtype=torch.float64, device=device)
    prof_par.index_add_(0, p["w_off"][col_pair] + new_col, prof)
    # an empty child's one boundary reads slots that it then ignores
    bk = lay.bkid
    bpair = bk % P
    nbp = int((W + 1).sum())
    both_par = torch.zeros(nbp + 1, dtype=torch.int64, device=device)
    merged_boundaries(
        both,
        slot,
        v["col_off"][bk],
        lay.bpos,
        v["cols"][bk],
        p["W"][bpair],
        p["wb_off"][bpair],
        both_par,
    )
    st.alive[kids] = False
    st.store(parents, W, prof_par.to(torch.int32), both_par[:nbp], device)
    st.w[parents] = st.w[pairs[:, 0]] + st.w[pairs[:, 1]]
    elems = p["elem"][col_pair] + new_col
    return new_col, elems, v["elem"][lay.kid] + lay.pos
