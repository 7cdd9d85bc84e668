"""Each profile-merge rule: the torch function (many profiles at once, ``torchmsa.ops.rules``)
against its numba twin (one profile at a time, ``torchmsa.cpu.rules``) and plain Python."""

import numpy as np
import pytest
import torch

from torchmsa.constants import OP_LEFT, OP_MATCH, OP_UP, RES_ONE, RES_SHIFT
from torchmsa.cpu.rules import boundary_weights as nb_boundaries
from torchmsa.cpu.rules import column_scores as nb_scores
from torchmsa.cpu.rules import consistency_tile as nb_tile
from torchmsa.cpu.rules import facing as nb_facing
from torchmsa.cpu.rules import gap_costs as nb_gaps
from torchmsa.cpu.rules import path_columns as nb_columns
from torchmsa.cpu.rules import path_score as nb_path
from torchmsa.cpu.rules import residue_factors as nb_res
from torchmsa.ops.rules import (
    boundary_weights,
    column_scores,
    consistency_tile,
    facing,
    gap_costs,
    path_columns,
    path_score,
    residue_factors,
)

SHIFTS = [0, 5, 9]


def _profiles(rng, count, n_alpha=20, sparse=0.6):
    """``count`` random profiles: ``(prof int64 [n, A], boundary weights int64 [n + 1], w)``,
    some empty, some with columns under the occupancy floor."""
    out = []
    for k in range(count):
        n = 0 if k == 1 else int(rng.integers(1, 9))
        w = int(rng.integers(1, 5000))
        prof = rng.integers(0, w // 4 + 1, (n, n_alpha))
        prof[rng.random((n, n_alpha)) < sparse] = 0
        prof[:, 0] += rng.integers(1, 3, n)  # every column holds a residue
        both = rng.integers(0, w + 1, n + 1)
        both[rng.random(n + 1) < 0.3] = 0
        both[rng.random(n + 1) < 0.2] = 1  # below the floor
        out.append((prof.astype(np.int64), both.astype(np.int64), w))
    return out


@pytest.mark.parametrize("occ_shift", SHIFTS)
@pytest.mark.parametrize("terminal", [(1, 1), (1, 2), (3, 4)])
def test_gap_costs(occ_shift, terminal):
    rng = np.random.default_rng(occ_shift + terminal[1])
    profs = _profiles(rng, 6)
    both = torch.from_numpy(np.concatenate([b for _, b, _ in profs]))
    group_w = torch.tensor([w for _, b, w in profs for _ in b])
    ends = torch.tensor([k in (0, len(b) - 1) for _, b, _ in profs for k in range(len(b))])
    opening, closing = gap_costs.gap_costs(both, group_w, ends, 1100, terminal, occ_shift)
    at = 0
    for _, b, w in profs:
        o, c = nb_gaps.gap_costs(b, w, 1100, *terminal, occ_shift)
        cost = [1100 * (max(x, w >> occ_shift) if x > 0 else 0) // w for x in b.tolist()]
        cost = [
            x * terminal[0] // terminal[1] if k in (0, len(b) - 1) else x
            for k, x in enumerate(cost)
        ]
        want_o = [x - x // 2 for x in cost]
        want_c = [x // 2 for x in cost]
        assert o.tolist() == want_o == opening[at : at + len(b)].tolist()
        assert c.tolist() == want_c == closing[at : at + len(b)].tolist()
        at += len(b)


@pytest.mark.parametrize("occ_shift", SHIFTS)
def test_residue_factors(occ_shift):
    rng = np.random.default_rng(occ_shift)
    profs = _profiles(rng, 6, sparse=0.95)
    col_weight = torch.from_numpy(np.concatenate([p.sum(1) for p, _, _ in profs])).double()
    group_w = torch.tensor([w for p, _, w in profs for _ in range(len(p))])
    got = residue_factors.residue_factors(col_weight, group_w, occ_shift)
    at = 0
    for p, _, w in profs:
        twin = nb_res.residue_factors(p, w, occ_shift)
        want = [max(int(x) * RES_ONE // w, RES_ONE >> occ_shift) for x in p.sum(1)]
        assert twin.tolist() == [0] + want
        assert got[at : at + len(p)].tolist() == want
        at += len(p)


@pytest.mark.parametrize("occ_shift", SHIFTS)
@pytest.mark.parametrize("seed", range(3))
def test_column_scores(occ_shift, seed):
    rng = np.random.default_rng(seed)
    mat = rng.integers(-1200, 3000, (20, 20)).astype(np.int64)
    mat = mat + mat.T
    (pa, _, wa), (pb, _, wb) = _profiles(rng, 3, sparse=0.8)[::2]
    got = column_scores.column_scores(
        torch.from_numpy(pa).double(),
        torch.from_numpy(pb).double(),
        torch.from_numpy(mat).double(),
        wa,
        wb,
        occ_shift,
    )
    twin = nb_scores.column_scores(pa, pb, mat, wa, wb, occ_shift)
    threaded = nb_scores.column_scores_threaded(pa, pb, mat, wa, wb, occ_shift, 3)
    da = [max(min(wa, int(r) << occ_shift), 1) for r in pa.sum(1)]
    db = [max(min(wb, int(r) << occ_shift), 1) for r in pb.sum(1)]
    assert nb_scores.occupancy_divisors(pa, wa, occ_shift).tolist() == da
    d_t = column_scores.occupancy_divisors(torch.from_numpy(pa.sum(1)).double(), wa, occ_shift)
    assert d_t.tolist() == da
    want = [
        [int(pa[i] @ mat @ pb[j]) // (da[i] * db[j]) for j in range(len(pb))]
        for i in range(len(pa))
    ]
    assert got.tolist() == twin.tolist() == threaded.tolist() == want


@pytest.mark.parametrize("seed", range(3))
def test_consistency_tile(seed):
    rng = np.random.default_rng(seed)
    shapes = [(4, 7), (1, 1), (6, 3)]
    sizes = [n * m for n, m in shapes]
    s_off = np.cumsum(sizes) - sizes
    S = rng.integers(-500, 500, sum(sizes)).astype(np.int32)
    denom = rng.integers(1, 10**6, len(shapes))
    pair = rng.integers(0, len(shapes), 200)
    i = np.array([rng.integers(0, shapes[p][0]) for p in pair])
    j = np.array([rng.integers(0, shapes[p][1]) for p in pair])
    value = rng.integers(1, 10**7, 200)
    got = torch.from_numpy(S.copy())
    cell = torch.from_numpy(s_off[pair] + i * np.array([m for _, m in shapes])[pair] + j)
    consistency_tile.add_tile(got, cell, torch.from_numpy(value), 37, torch.from_numpy(denom[pair]))
    for p, (n, m) in enumerate(shapes):
        tile = np.zeros((n, m), np.int64)
        sel = pair == p
        np.add.at(tile, (i[sel], j[sel]), value[sel])
        twin = S[s_off[p] : s_off[p] + n * m].reshape(n, m).copy()
        nb_tile.add_tile(twin, tile, 37, int(denom[p]))
        want = [
            [int(S[s_off[p] + a * m + b]) + int(tile[a, b]) * 37 // int(denom[p]) for b in range(m)]
            for a in range(n)
        ]
        assert twin.tolist() == want
        assert got[s_off[p] : s_off[p] + n * m].view(n, m).tolist() == want


def test_facing():
    rng = np.random.default_rng(0)
    cost = rng.integers(0, 1 << 20, 100)
    res = rng.integers(0, RES_ONE + 1, 100)
    got = facing.facing(torch.from_numpy(cost).int(), torch.from_numpy(res).int())
    want = [(int(c) * int(r)) >> RES_SHIFT for c, r in zip(cost, res)]
    assert got.tolist() == want
    assert [nb_facing.facing(int(c), int(r)) for c, r in zip(cost, res)] == want


def _path(rng, n, m):
    steps = [OP_UP] * n + [OP_LEFT] * m
    rng.shuffle(steps)
    path = []
    for op in steps:  # fuse some UP, LEFT neighbours into matches
        if path and {path[-1], op} == {OP_UP, OP_LEFT} and rng.random() < 0.6:
            path[-1] = OP_MATCH
        else:
            path.append(op)
    return np.array(path, np.uint8)


@pytest.mark.parametrize("seed", range(4))
def test_path_scores(seed):
    rng = np.random.default_rng(seed)
    shapes = [(5, 8), (0, 3), (7, 1), (6, 6)]
    paths = [_path(rng, n, m) for n, m in shapes]
    sizes = [n * m for n, m in shapes]
    S = torch.from_numpy(rng.integers(-3000, 3000, sum(sizes)).astype(np.int32))
    s_off = torch.tensor(np.cumsum(sizes) - sizes)
    costs = {}
    for side, k in (("a", 0), ("b", 1)):
        count = [s[k] for s in shapes]
        bnd = sum(c + 1 for c in count)
        off = torch.tensor(np.cumsum([c + 1 for c in count]) - [c + 1 for c in count])
        opening = torch.from_numpy(rng.integers(0, 3000, bnd).astype(np.int32))
        closing = torch.from_numpy(rng.integers(0, 3000, bnd).astype(np.int32))
        res = torch.from_numpy(rng.integers(RES_ONE >> 5, RES_ONE + 1, bnd).astype(np.int32))
        res[off] = 0
        costs[side] = (off, opening, closing, res)
    # one pair at a time: the rule scores whole rows, each row one path
    for p, (n, m) in enumerate(shapes):
        path = paths[p]
        op = torch.from_numpy(path.astype(np.int64))[None]
        ia = torch.cumsum(op != OP_LEFT, 1) - (op != OP_LEFT).long()
        jb = torch.cumsum(op != OP_UP, 1) - (op != OP_UP).long()
        one_a, one_b = ((c[0][p : p + 1], *c[1:]) for c in (costs["a"], costs["b"]))
        got = path_score.path_scores(
            S, s_off[p : p + 1], op, ia, jb, torch.tensor([m]), one_a, one_b, 250
        )
        arrays = []
        for (off, *halves), size in ((costs["a"], n + 1), (costs["b"], m + 1)):
            lo = int(off[p])
            arrays += [x[lo : lo + size].numpy() for x in halves]
        oa, ca, ra, ob, cb, rb = arrays
        block = S[int(s_off[p]) : int(s_off[p]) + n * m].numpy().reshape(n, m)
        want = nb_path.path_score(block, oa, ca, ob, cb, ra, rb, 250, path, len(path))
        assert int(got[0]) == int(want), p


@pytest.mark.parametrize("seed", range(3))
def test_path_columns_and_boundary_weights(seed):
    rng = np.random.default_rng(seed)
    shapes = [(4, 6), (0, 3), (5, 0), (7, 7), (1, 1)]
    paths = [_path(rng, n, m) for n, m in shapes]
    n_all, m_all = [s[0] for s in shapes], [s[1] for s in shapes]
    widths = [len(p) for p in paths]
    # the torch rule: every path padded to n + m steps, one after another
    ops, step, valid = [], [], []
    for p, (n, m) in zip(paths, shapes):
        ops += p.tolist() + [OP_MATCH] * (n + m - len(p))
        step += list(range(n + m))
        valid += [True] * len(p) + [False] * (n + m - len(p))
    K = sum(n_all) + sum(m_all)
    slot = path_columns.path_columns(
        torch.tensor(ops, dtype=torch.uint8),
        torch.tensor(step),
        torch.tensor(valid),
        sum(n_all),
        K,
    )
    first_off = np.cumsum(n_all) - n_all
    second_off = sum(n_all) + np.cumsum(m_all) - m_all
    maps = []
    for k, (p, (n, m)) in enumerate(zip(paths, shapes)):
        map_a, map_b = np.empty(n, np.int64), np.empty(m, np.int64)
        nb_columns.path_columns(p, len(p), map_a, map_b)
        want_a = [t for t, op in enumerate(p) if op != OP_LEFT]
        want_b = [t for t, op in enumerate(p) if op != OP_UP]
        assert map_a.tolist() == want_a == slot[first_off[k] : first_off[k] + n].tolist()
        assert map_b.tolist() == want_b == slot[second_off[k] : second_off[k] + m].tolist()
        maps.append((map_a, map_b))
    # boundary weights: children first of every pair, then second, as a level lays them out
    kids = [(k, 0) for k in range(len(shapes))] + [(k, 1) for k in range(len(shapes))]
    both, first, c, n_b, width, out_off = [], [], [], [], [], []
    w_off = np.cumsum([w + 1 for w in widths]) - [w + 1 for w in widths]
    weights = {}
    for pair, side in kids:
        cols = shapes[pair][side]
        weights[pair, side] = rng.integers(0, 1000, cols + 1)
        for b in range(cols + 1):
            both.append(int(weights[pair, side][b]))
            first.append((first_off if side == 0 else second_off)[pair])
            c.append(b)
            n_b.append(cols)
            width.append(widths[pair])
            out_off.append(w_off[pair])
    out = torch.zeros(int(w_off[-1] + widths[-1] + 2), dtype=torch.int64)
    boundary_weights.merged_boundaries(
        torch.tensor(both),
        slot,
        *(torch.tensor(x) for x in (first, c, n_b, width, out_off)),
        out,
    )
    for pair, width_p in enumerate(widths):
        twin = np.zeros(width_p + 1, np.int64)
        for side in (0, 1):
            cols = shapes[pair][side]
            nb_boundaries.merged_boundaries(
                weights[pair, side], maps[pair][side], cols, width_p, twin, 0
            )
        lo = int(w_off[pair])
        assert out[lo : lo + width_p + 1].tolist() == twin.tolist()
