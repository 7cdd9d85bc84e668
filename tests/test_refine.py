import numpy as np
import pytest
import torch

from torchmsa.alphabet import PROTEIN, encode
from torchmsa.config import ExecutionPolicy, MemoryBudget, RefineConfig
from torchmsa.constants import OCC_SHIFT
from torchmsa.cpu.rules.path_score import path_score
from torchmsa.pipeline import profile_scoring
from torchmsa.progressive import quantize_weights
from torchmsa.refine import partitions, refine
from torchmsa.refine.evaluate import State, evaluate_partitions
from torchmsa.refine.host import HostEdges
from torchmsa.tree import build_tree

GAP = PROTEIN.gap_code


def _codes(rows):
    return torch.tensor(
        np.stack([[GAP if ch == "-" else encode(ch, PROTEIN)[0][0] for ch in r] for r in rows]),
        dtype=torch.uint8,
    )


def _rows(codes):
    letters = PROTEIN.letters + "-"
    return ["".join(letters[c] for c in row) for row in codes.tolist()]


def _stages(fn, *args, **kwargs):
    """``fn(*args, **kwargs)`` and how often each ``torchmsa.*`` stage ran in it (profiler
    events)."""
    from collections import Counter

    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        out = fn(*args, **kwargs)
    return out, Counter(e.name for e in prof.events() if e.name.startswith("torchmsa."))


def _tree(n, seed=0):
    rng = np.random.default_rng(seed)
    d = rng.random((n, n))
    d = (d + d.T) / 2
    np.fill_diagonal(d, 0)
    return build_tree(d, "upgma")


def test_partitions_are_the_distinct_tree_splits():
    for n in (3, 4, 7, 12):
        tree = _tree(n, n)
        parts = partitions(tree)
        assert len(parts) == 2 * n - 3
        splits = set()
        for p in parts:
            side = frozenset(int(x) for x in p)
            assert 0 < len(side) < n
            key = min(side, frozenset(range(n)) - side, key=sorted)
            assert key not in splits
            splits.add(key)
    assert partitions(_tree(2)) == []


def test_refine_repairs_a_misplaced_row_and_keeps_residues():
    core = "MKVLAAGHWTEQRDLLPSNAIFKCW"
    rows = [core + "--", core + "--", core + "--", "--" + core, core + "--"]
    codes = _codes(rows)
    tree = _tree(5, 3)
    weights = quantize_weights(tree.weights())
    scoring = profile_scoring(PROTEIN)
    new, applied = refine(codes, tree, weights, scoring, GAP, max_rounds=4, backend="cpu")
    out = _rows(new)
    assert applied >= 1
    assert [r.replace("-", "") for r in out] == [core] * 5
    assert len(set(out)) == 1
    again, _ = refine(codes, tree, weights, scoring, GAP, max_rounds=4, backend="cpu")
    assert torch.equal(new, again)


def test_refine_leaves_an_optimal_alignment_alone():
    rows = ["MKVLA-GHW", "MKVLAAGHW", "MK-LAAGHW", "MKVLAAGH-"]
    codes = _codes(rows)
    tree = _tree(4, 5)
    scoring = profile_scoring(PROTEIN)
    new, applied = refine(
        codes, tree, quantize_weights(tree.weights()), scoring, GAP, max_rounds=3, backend="cpu"
    )
    assert [r.replace("-", "") for r in _rows(new)] == [r.replace("-", "") for r in rows]
    assert len({len(r) for r in _rows(new)}) == 1
    if applied == 0:
        assert torch.equal(new, codes)


def oracle_side(rows, codes, weights, n_alpha, gap_open, terminal):
    """Plain Python: kept columns, profile, weight, gap costs and residue factors of a group."""
    width = len(codes[0])
    keep = [c for c in range(width) if any(codes[r][c] != GAP for r in rows)]
    w = sum(weights[r] for r in rows)
    prof = [[0] * n_alpha for _ in keep]
    for r in rows:
        for k, c in enumerate(keep):
            if codes[r][c] != GAP:
                prof[k][codes[r][c]] += weights[r]
    n = len(keep)
    # a row has residues on both sides of boundary b when it has residues in sub-alignment
    # columns b - 1 and b (outside the sub-alignment counts as residue)
    both = []
    for b in range(n + 1):
        total = 0
        for r in rows:
            left = b == 0 or codes[r][keep[b - 1]] != GAP
            right = b == n or codes[r][keep[b]] != GAP
            total += weights[r] if left and right else 0
        both.append(total)
    num, den = terminal
    floor = w >> OCC_SHIFT  # the occupancy floor (ops/colscores.py)
    cost = [gap_open * (max(x, floor) if x > 0 else 0) // w for x in both]
    cost = [c * num // den if b in (0, n) else c for b, c in enumerate(cost)]
    close = [c // 2 for c in cost]
    opening = [c - h for c, h in zip(cost, close)]
    res = [0] + [max(sum(p) * 256 // w, 256 >> OCC_SHIFT) for p in prof]
    return keep, prof, w, opening, close, res


def _each_edge(host, codes, rows):
    return [host.evaluate(codes, rows[k : k + 1]) for k in range(len(rows))]


@pytest.mark.parametrize("evaluator", ["batched", "numba", "numba-lone"])
def test_partition_evaluation_matches_a_plain_python_oracle(evaluator):
    from tests import oracles
    from torchmsa.consistency import Library

    rng = np.random.default_rng(11)
    n, width = 6, 14
    codes = rng.integers(0, 20, (n, width))
    codes[rng.random((n, width)) < 0.3] = GAP
    codes[0, :] = np.where(codes[0] == GAP, 3, codes[0])  # no all-gap column
    codes[3, :] = GAP  # an empty row
    weights = [int(x) for x in rng.integers(1, 40, n)]
    weights[2] = 400  # columns without row 2 fall under the occupancy floor of its groups
    residues = [[c for c in range(width) if codes[r, c] != GAP] for r in range(n)]
    ent = []
    for _ in range(40):
        x, y = sorted(rng.choice([0, 1, 2, 4, 5], 2, replace=False))
        i, j = int(rng.integers(len(residues[x]))), int(rng.integers(len(residues[y])))
        ent.append((int(x), i, int(y), j, int(rng.integers(1, 65))))
    cols = [torch.tensor(v) for v in zip(*ent)]
    lib = Library(*cols, dist=np.zeros((n, n)))
    sides = torch.tensor(
        [[r in s for r in range(n)] for s in ({0}, {1, 2}, {3}, {0, 3, 5}, {1, 2, 3, 4, 5})]
    )
    w_t = torch.tensor(weights)
    lib_val = lib.w * w_t[lib.x] * w_t[lib.y]
    rows = torch.arange(len(sides))
    floored = 0
    for cw, extend in ((0, None), (9, None), (9, 1.5)):
        scoring = profile_scoring(PROTEIN, gap_extend=extend)
        mat = scoring.matrix.tolist()
        st = State(
            torch.tensor(codes, dtype=torch.uint8),
            w_t,
            GAP,
            scoring.matrix.shape[0],
            lib if cw else None,
            lib_val,
        )
        if evaluator == "batched":
            diffs, w_a, w_b, ops = evaluate_partitions(st, sides, scoring, "cpu", cw)
        else:
            # numba-lone: one edge per call, its scores and tile over the threads
            policy = ExecutionPolicy(threaded_edge_cells=-1 if evaluator == "numba-lone" else 0)
            host = HostEdges(sides, w_t, scoring, GAP, lib if cw else None, cw, policy)
            t = torch.tensor(codes, dtype=torch.uint8)
            if evaluator == "numba":
                diffs, w_a, w_b, ops = host.evaluate(t, rows)
            else:
                each, stages = _stages(_each_edge, host, t, rows)
                assert stages["torchmsa.refine_host_edge"] == len(rows)
                diffs, w_a, w_b, ops = ([e[i][0] for e in each] for i in range(4))
        for k, side in enumerate(sides.tolist()):
            rows_a = [r for r in range(n) if side[r]]
            rows_b = [r for r in range(n) if not side[r]]
            args = (codes.tolist(), weights, 20, scoring.gap_open, scoring.terminal)
            ka, pa, wa, oa, ca, ra = oracle_side(rows_a, *args)
            kb, pb, wb, ob, cb, rb = oracle_side(rows_b, *args)
            cons = [[0] * len(kb) for _ in ka]
            for x, i, y, j, w in ent:
                if side[x] == side[y]:
                    continue
                cx, cy = residues[x][i], residues[y][j]
                a_col, b_col = (cx, cy) if side[x] else (cy, cx)
                cons[ka.index(a_col)][kb.index(b_col)] += w * weights[x] * weights[y]
            # column divisors: the occupancy floor of ops/colscores.py
            da = [max(min(wa, sum(p) << OCC_SHIFT), 1) for p in pa]
            db = [max(min(wb, sum(p) << OCC_SHIFT), 1) for p in pb]
            floored += sum(d < wa for d in da) + sum(d < wb for d in db)
            S = [
                [
                    sum(pa[i][p] * mat[p][q] * pb[j][q] for p in range(20) for q in range(20))
                    // (da[i] * db[j])
                    + cw * cons[i][j] // (wa * wb)
                    for j in range(len(kb))
                ]
                for i in range(len(ka))
            ]
            ext = scoring.gap_extend
            best, *_ = oracles.align(S, oa, ca, ob, cb, ext, "global", ra, rb)
            old = [0 if (c in ka and c in kb) else 1 if c in ka else 2 for c in range(width)]
            arrays = [np.asarray(v, dtype=np.int32) for v in (oa, ca, ob, cb, ra, rb)]
            S_np = np.asarray(S, dtype=np.int32).reshape(len(ka), len(kb))
            now = path_score(S_np, *arrays, ext, np.asarray(old, np.uint8), width)
            assert (w_a[k], w_b[k]) == (wa, wb)
            assert diffs[k] == best - now
            new = ops[k].numpy()
            assert path_score(S_np, *arrays, ext, new, new.size) == best
    assert floored  # the oracle's floor was exercised


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_numba_edge_evaluation_equals_the_batched_one(seed):
    """Every edge of a tree, with and without a library: the same gains, weights and paths;
    the batch's consistency in one step (seed 0) or, under a tiny memory budget, in batches and
    consistency steps of one edge (seeds 1, 2)."""
    from torchmsa.consistency import Library

    rng = np.random.default_rng(seed)
    n, width = 12, 60
    codes = rng.integers(0, 20, (n, width))
    codes[rng.random((n, width)) < 0.4] = GAP
    codes[:, rng.random(width) < 0.3] = GAP  # gappy regions
    codes[1, :] = GAP  # an empty row: its leaf edge has a group without columns
    codes[0] = np.where((codes == GAP).all(0), 5, codes[0])  # no all-gap column
    tree = _tree(n, seed)
    parts = partitions(tree)
    sides = torch.zeros(len(parts), n, dtype=torch.bool)
    for k, p in enumerate(parts):
        sides[k, torch.tensor(p, dtype=torch.int64)] = True
    weights = quantize_weights(tree.weights())
    weights[3] *= 60  # a heavy row puts the others' columns under the occupancy floor
    residues = [np.flatnonzero(codes[r] != GAP) for r in range(n)]
    ent = []
    for _ in range(300):
        x, y = sorted(rng.choice([r for r in range(n) if r != 1], 2, replace=False))
        i, j = rng.integers(len(residues[x])), rng.integers(len(residues[y]))
        ent.append((int(x), int(i), int(y), int(j), int(rng.integers(1, 65))))
    lib = Library(*(torch.tensor(v) for v in zip(*ent)), dist=np.zeros((n, n)))
    scoring = profile_scoring(PROTEIN)
    t = torch.tensor(codes, dtype=torch.uint8)
    budget = MemoryBudget(host_bytes=1) if seed else None
    for cw in (0, 16):
        used = lib if cw else None
        lib_val = lib.w * weights[lib.x] * weights[lib.y]
        st = State(t, weights, GAP, scoring.matrix.shape[0], used, lib_val)
        want, stages = _stages(evaluate_partitions, st, sides, scoring, "cpu", cw, budget=budget)
        assert stages["torchmsa.refine_batch"] == 1
        host = HostEdges(sides, weights, scoring, GAP, used, cw)
        got = host.evaluate(t, torch.arange(len(sides)))
        assert got[:3] == want[:3]
        assert all(torch.equal(a, b) for a, b in zip(got[3], want[3]))
        for threaded in (2**62, -1):  # each edge alone, on one thread or spread over them
            policy = ExecutionPolicy(threaded_edge_cells=threaded)
            host = HostEdges(sides, weights, scoring, GAP, used, cw, policy)
            for k in range(len(sides)):
                one = host.evaluate(t, torch.tensor([k]))
                assert [x[0] for x in one[:3]] == [x[k] for x in want[:3]]
                assert torch.equal(one[3][0], want[3][k])
        assert any(d > 0 for d in want[0])  # some edge gains: the paths are not all the old


@pytest.mark.parametrize("seed", [0, 1])
def test_numba_path_merge_equals_the_tensor_one(seed):
    """``apply_path`` (host codes) and the tensor merge give the same alignment for random
    groups and paths, one group's rows empty included."""
    from torchmsa.constants import OP_LEFT, OP_MATCH, OP_UP
    from torchmsa.cpu.rules.apply_path import apply_path
    from torchmsa.ops.rules.apply_path import apply_path as apply_path_tensors

    rng = np.random.default_rng(seed)
    n, width = 9, 40
    codes = rng.integers(0, 20, (n, width)).astype(np.uint8)
    codes[rng.random((n, width)) < 0.5] = GAP
    codes[2] = GAP
    side = rng.random(n) < 0.4
    side[2] = True
    side[0], side[1] = True, False
    cols_a = int((codes[side] != GAP).any(0).sum())
    cols_b = int((codes[~side] != GAP).any(0).sum())
    # a random path consuming exactly the kept columns of both groups
    steps = [OP_UP] * cols_a + [OP_LEFT] * cols_b
    rng.shuffle(steps)
    path = []
    for op in steps:  # fuse some UP, LEFT neighbours into matches
        if path and {path[-1], op} == {OP_UP, OP_LEFT} and rng.random() < 0.5:
            path[-1] = OP_MATCH
        else:
            path.append(op)
    ops = np.array(path, np.uint8)
    got = apply_path(codes, side, ops, GAP)
    want = apply_path_tensors(
        torch.from_numpy(codes), torch.from_numpy(side), torch.from_numpy(ops), GAP
    )
    assert np.array_equal(got, want.numpy())
    assert got.shape == (n, len(path))
    for r in range(n):  # every row keeps its residues in order
        assert np.array_equal(got[r][got[r] != GAP], codes[r][codes[r] != GAP])


def test_entries_by_row_lists_every_entry_under_both_rows_in_order():
    """Against a plain-Python listing: row r holds the entries where it is x, then those where
    it is y, each half in library order."""
    from torchmsa.cpu.refine import entries_by_row

    rng = np.random.default_rng(3)
    n, e = 9, 200
    x = rng.integers(0, n - 2, e)
    y = x + rng.integers(1, n - x, e)
    lib = np.stack([x, rng.integers(0, 50, e), y, rng.integers(0, 50, e)])
    val = rng.integers(1, 1000, e)
    by_row, row_ptr = entries_by_row(lib, val, n)
    assert row_ptr[0] == 0 and row_ptr[-1] == 2 * e
    for r in range(n):
        want = [(y[k], lib[1, k], lib[3, k], val[k]) for k in range(e) if x[k] == r]
        want += [(x[k], lib[3, k], lib[1, k], val[k]) for k in range(e) if y[k] == r]
        got = [tuple(by_row[:, t]) for t in range(row_ptr[r], row_ptr[r + 1])]
        assert got == want


def test_refine_rounds_follow_ups_and_policies():
    """Each round is a stage of its own; follow-ups add edges within a round; the placement
    policy and a tiny memory budget change nothing."""
    rng = np.random.default_rng(4)
    core = "MKVLAAGHWTEQRDLLPSNAIFKCWGG"
    rows = []
    for _ in range(8):
        cut = int(rng.integers(0, 4))
        rows.append("-" * cut + core + "-" * (3 - cut))
    codes = _codes(rows)
    tree = _tree(8, 2)
    weights = quantize_weights(tree.weights())
    scoring = profile_scoring(PROTEIN)

    def run(**kwargs):
        return refine(codes, tree, weights, scoring, GAP, max_rounds=3, backend="cpu", **kwargs)

    (new, applied), stages = _stages(run)
    assert stages["torchmsa.refine"] == 1 and 1 <= stages["torchmsa.refine_round"] <= 3
    assert applied >= 1 and [r.replace("-", "") for r in _rows(new)] == [core] * 8
    (alone, applied_alone), stages = _stages(run, config=RefineConfig(follow_ups=0))
    assert applied_alone <= stages["torchmsa.refine_round"]  # one edge a round at most
    assert [r.replace("-", "") for r in _rows(alone)] == [core] * 8
    for policy in (
        ExecutionPolicy(host_cells=-1, host_edge_cells=-1, threaded_edge_cells=-1),
        ExecutionPolicy(host_cells=1 << 62, host_edge_cells=1 << 62, max_batch_cells=1),
    ):
        again, n = run(policy=policy, budget=MemoryBudget(host_bytes=1))
        assert torch.equal(again, new) and n == applied
