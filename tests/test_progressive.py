"""The level-batched progressive pass against a plain-Python merge of one node at a time."""

from collections import Counter

import numpy as np
import pytest
import torch

from tests import oracles
from tests.test_refine import oracle_side
from torchmsa.alphabet import PROTEIN
from torchmsa.config import ExecutionPolicy, MemoryBudget
from torchmsa.constants import OCC_SHIFT
from torchmsa.pipeline import profile_scoring
from torchmsa.progressive import Forest, ResidueTable, progressive_align
from torchmsa.progressive.host import HostRun, run_on_host
from torchmsa.progressive.level import align_level, split_level
from torchmsa.progressive.nodes import Nodes, ranges, upload
from torchmsa.tree import build_tree

GAP = PROTEIN.gap_code
CPU = torch.device("cpu")


def _numba_cells(cells, **fields) -> ExecutionPolicy:
    """Levels and pairs of at most ``cells`` DP cells run in numba (-1: none, 1 << 40: all)."""
    return ExecutionPolicy(cpu_level_cells=cells, cpu_pair_cells=cells, **fields)


def _stages(fn):
    """``fn()`` and how often each ``torchmsa.*`` stage ran in it (profiler events)."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        out = fn()
    return out, Counter(e.name for e in prof.events() if e.name.startswith("torchmsa."))


@pytest.fixture
def poisoned_empty(monkeypatch):
    """``torch.empty`` returns buffers full of garbage (flash-linear-attention's habit): code
    that reads memory it never wrote gives wrong alignments."""
    real = torch.empty

    def empty(*args, **kwargs):
        out = real(*args, **kwargs)
        return out.fill_(-7777 if out.dtype not in (torch.bool, torch.uint8) else 77)

    monkeypatch.setattr(torch, "empty", empty)


def _oracle(seqs, tree, weights, scoring, record=None, library=(), cw=0):
    """Rows of the alignment: each node's children merged by the plain DP oracle; ``record``
    (a dict) gets each node's DP inputs. ``library`` entries ``(x, i, y, j, w)`` add
    ``cw * sum(w * weight_x * weight_y) // (w_a * w_b)`` to the scores of the columns that hold
    residue i of x and residue j of y when x and y meet."""
    mat = scoring.matrix.tolist()
    n_alpha = len(mat)
    aln = {i: [list(s)] for i, s in enumerate(seqs)}
    rows_of = {i: [i] for i in range(len(seqs))}
    for k, (a, b) in enumerate(np.asarray(tree.children).tolist()):
        codes_a, codes_b = aln.pop(a), aln.pop(b)
        sides = []
        for codes, rows in ((codes_a, rows_of[a]), (codes_b, rows_of[b])):
            w = [weights[r] for r in rows]
            if not codes[0]:  # no columns: every sequence of the node is empty
                sides.append(([], [], sum(w), [0], [0], [0]))  # its one boundary: weight 0
                continue
            args = (n_alpha, scoring.gap_open, scoring.terminal)
            sides.append(oracle_side(range(len(rows)), codes, w, *args))
        (ka, pa, wa, oa, ca, ra), (kb, pb, wb, ob, cb, rb) = sides
        da = [min(wa, sum(p) << OCC_SHIFT) for p in pa]  # the occupancy floor's divisors
        db = [min(wb, sum(p) << OCC_SHIFT) for p in pb]
        S = [
            [
                sum(pa[i][p] * mat[p][q] * pb[j][q] for p in range(n_alpha) for q in range(n_alpha))
                // (da[i] * db[j])
                for j in range(len(kb))
            ]
            for i in range(len(ka))
        ]

        def column(codes, rows, x, i):
            row = codes[rows.index(x)]
            return [c for c in range(len(row)) if row[c] != GAP][i]

        cons = [[0] * len(kb) for _ in ka]
        for x, i, y, j, w in library:
            if x in rows_of[b] and y in rows_of[a]:
                x, i, y, j = y, j, x, i
            if x in rows_of[a] and y in rows_of[b]:
                ca_, cb_ = column(codes_a, rows_of[a], x, i), column(codes_b, rows_of[b], y, j)
                cons[ca_][cb_] += w * weights[x] * weights[y]
        S = [[v + cw * c // (wa * wb) for v, c in zip(r, cr)] for r, cr in zip(S, cons)]
        _, ops, _, _ = oracles.align(S, oa, ca, ob, cb, scoring.gap_extend, "global", ra, rb)
        if record is not None:
            record[len(seqs) + k] = (S, oa, ca, ra, ob, cb, rb)
        merged = [[] for _ in range(len(codes_a) + len(codes_b))]
        i = j = 0
        for op in ops:
            for r, row in enumerate(codes_a):
                merged[r].append(row[i] if op != 2 else GAP)
            for r, row in enumerate(codes_b):
                merged[len(codes_a) + r].append(row[j] if op != 1 else GAP)
            i, j = i + (op != 2), j + (op != 1)
        node = len(seqs) + k
        aln[node] = merged
        rows_of[node] = rows_of.pop(a) + rows_of.pop(b)
    (root,) = aln
    out = [None] * len(seqs)
    for r, row in zip(rows_of[root], aln[root]):
        out[r] = row
    return out


def _family(rng, n, length, empty=False):
    root = rng.integers(0, 20, length)
    seqs = []
    for k in range(n):
        s = [int(c) if rng.random() > 0.3 else int(rng.integers(0, 20)) for c in root]
        cut = sorted(rng.integers(0, length, 2))
        kind = rng.random()  # an inner deletion, or a missing start, or a missing end
        s = s[: cut[0]] + s[cut[1] :] if kind < 0.4 else s[cut[0] :] if kind < 0.7 else s[: cut[1]]
        seqs.append([] if empty and k == 1 else s)
    return seqs


def _run(jobs, scoring, backend="cpu", consistency=None, policy=None, budget=None):
    """``progressive_align`` over several jobs at once; each job's rows."""
    seqs = [s for job, _, _ in jobs for s in job]
    width = max(1, max(len(s) for s in seqs))
    codes = torch.full((len(seqs), width), GAP, dtype=torch.uint8)
    for r, s in enumerate(seqs):
        codes[r, : len(s)] = torch.tensor(s, dtype=torch.uint8)
    lengths = torch.tensor([len(s) for s in seqs])
    table = ResidueTable.from_batch(codes, lengths)
    forest = Forest.from_trees([t for _, t, _ in jobs], [len(j) for j, _, _ in jobs])
    weights = torch.tensor([w for _, _, ws in jobs for w in ws])
    cons = None if consistency is None else consistency(forest)
    widths = progressive_align(
        table, lengths, forest, weights, scoring, backend, None, cons, policy=policy, budget=budget
    )
    out, first = [], 0
    for (job, _, _), w in zip(jobs, widths):
        out.append(table.codes_matrix(first, len(job), w, GAP).tolist())
        first += len(job)
    return out


def _codes(seqs):
    width = max(1, max(len(s) for s in seqs))
    codes = torch.full((len(seqs), width), GAP, dtype=torch.uint8)
    for r, s in enumerate(seqs):
        codes[r, : len(s)] = torch.tensor(s, dtype=torch.uint8)
    return codes, torch.tensor([len(s) for s in seqs])


def _tree(rng, n):
    d = rng.random((n, n))
    d = (d + d.T) / 2
    np.fill_diagonal(d, 0)
    return build_tree(d, str(rng.choice(["upgma", "single", "nj"])))


# cpu_level_cells -1: every level as batched tensor operations; 1 << 40: every level node by
# node in numba (cpu/merge.py); 60: both, small levels in numba between larger ones
PATHS = [-1, 60, 1 << 40]


@pytest.mark.parametrize("cells", PATHS)
@pytest.mark.parametrize("pool_rows", [1024, 4])
@pytest.mark.parametrize("fill", [False, True], ids=["empty", "garbage"])
def test_progressive_matches_the_plain_python_merges(request, pool_rows, cells, fill):
    # a tiny pool forces it to drop consumed nodes and grow many times; pools are not cleared,
    # so buffers full of garbage must give the same alignments (nothing read before written)
    if fill:
        request.getfixturevalue("poisoned_empty")
    policy = _numba_cells(cells, pool_rows=pool_rows)
    rng = np.random.default_rng(5)
    scoring = profile_scoring(PROTEIN)
    jobs = []
    for n, length, empty in ((7, 12, False), (1, 9, False), (9, 10, True), (2, 6, False)):
        seqs = _family(rng, n, length, empty)
        tree = _tree(rng, n) if n > 1 else None
        jobs.append((seqs, tree, [int(w) for w in rng.integers(1, 5000, n)]))
    got, stages = _stages(lambda: _run(jobs, scoring, policy=policy))
    for (seqs, tree, weights), rows in zip(jobs, got):
        want = [list(s) for s in seqs] if tree is None else _oracle(seqs, tree, weights, scoring)
        assert rows == want
    assert stages["torchmsa.progressive_pass"] == 1
    if cells in (-1, 1 << 40):  # every level on one path
        assert (stages["torchmsa.progressive_host"] > 0) == (cells > 0)
        assert (stages["torchmsa.progressive_level"] > 0) == (cells < 0)


@pytest.mark.parametrize("cells", PATHS)
@pytest.mark.parametrize("lone", [0, 1 << 62], ids=["threaded", "serial"])
def test_chain_tree_of_many_levels(cells, lone):
    # lone 0: every numba level of one pair computes its scores on all threads
    policy = _numba_cells(cells, lone_pair_cells=lone)
    # single linkage on equal distances chains: one node per level, as in large families
    rng = np.random.default_rng(8)
    scoring = profile_scoring(PROTEIN)
    seqs = _family(rng, 12, 8)
    tree = build_tree(np.ones((12, 12)) - np.eye(12), "single")
    assert len(tree.levels()) == 11
    weights = [int(w) for w in rng.integers(1, 100, 12)]
    record = {}
    (rows,), stages = _stages(lambda: _run([(seqs, tree, weights)], scoring, policy=policy))
    assert rows == _oracle(seqs, tree, weights, scoring, record)
    batched = stages["torchmsa.progressive_level"]
    if cells >= 0:  # levels in numba make no batched DP calls
        assert batched < len(tree.levels()) and (cells < 1 << 40 or not batched)
        return
    assert batched == len(tree.levels())
    # every merge's scores, gap costs and residue factors, not only the end result: the
    # batched levels one by one
    codes, lengths = _codes(seqs)
    forest = Forest.from_trees([tree], [12])
    st = Nodes(
        ResidueTable.from_batch(codes, lengths),
        lengths,
        forest,
        torch.tensor(weights),
        scoring.matrix.shape[0],
    )
    for ids in forest.levels:
        pairs = np.concatenate([forest.children[ids - 12], ids[:, None]], 1)
        *_, inputs = align_level(st, pairs, scoring, CPU, "cpu")
        S, s_off, n, m, opening, closing, a_off, b_off, res = inputs
        for p, node in enumerate(ids.tolist()):
            want_s, oa, ca, ra, ob, cb, rb = record[node]
            n_p, m_p, lo = int(n[p]), int(m[p]), int(s_off[p])
            assert S[lo : lo + n_p * m_p].view(n_p, m_p).tolist() == [list(r) for r in want_s]
            for flat, off, size, want in (
                (opening, a_off, n_p, oa),
                (closing, a_off, n_p, ca),
                (opening, b_off, m_p, ob),
                (closing, b_off, m_p, cb),
                (res, a_off, n_p, ra),
                (res, b_off, m_p, rb),
            ):
                assert flat[int(off[p]) : int(off[p]) + size + 1].tolist() == list(want)


def test_numba_runs_are_cut_where_their_reserved_rows_would_pass_the_limit():
    """Down a chain every parent's bound is the leaves' lengths summed, so one long run would
    reserve rows quadratic in the chain's length; cut runs keep each reservation near
    ``run_rows`` and give the same alignment."""
    rng = np.random.default_rng(9)
    scoring = profile_scoring(PROTEIN)
    seqs = _family(rng, 16, 10)
    tree = build_tree(np.ones((16, 16)) - np.eye(16), "single")
    weights = [int(w) for w in rng.integers(1, 100, 16)]
    job = [(seqs, tree, weights)]
    whole, stages = _stages(lambda: _run(job, scoring, policy=_numba_cells(1 << 40)))
    assert stages["torchmsa.progressive_host"] == 1
    cut, stages = _stages(lambda: _run(job, scoring, policy=_numba_cells(1 << 40, run_rows=60)))
    assert cut == whole == [_oracle(seqs, tree, weights, scoring)]
    assert stages["torchmsa.progressive_host"] > 3
    # the runs themselves: each reserves at most run_rows, unless it holds a single level
    codes, lengths = _codes(seqs)
    forest = Forest.from_trees([tree], [16])
    for run_rows, most in ((1 << 62, None), (60, 60)):
        st = Nodes(
            ResidueTable.from_batch(codes, lengths), lengths, forest, torch.tensor(weights), 20
        )
        run = HostRun(st, ExecutionPolicy(run_rows=run_rows), 1 << 62)
        reserved = []
        for ids in forest.levels:
            pairs = np.concatenate([forest.children[ids - 16], ids[:, None]], 1)
            assert run.small(pairs)
            if run.full_with(pairs):
                reserved.append((run.rows, len(run.levels)))
                run.align(scoring)
            run.add(pairs)
        reserved.append((run.rows, len(run.levels)))
        run.align(scoring)
        if most is None:
            assert len(reserved) == 1 and reserved[0][0] > 500  # bounds summed down the chain
        else:
            assert len(reserved) > 3
            assert all(rows <= most or n_levels == 1 for rows, n_levels in reserved)


def test_ranges_and_upload():
    starts, sizes = np.array([5, 0, 9]), np.array([2, 0, 3])
    assert ranges(starts, sizes).tolist() == [5, 6, 9, 10, 11]
    assert ranges(starts, np.zeros(3, np.int64)).tolist() == []
    v = upload(torch.device("cpu"), a=np.arange(3), b=np.array([True, False]), c=[])
    assert v["a"].tolist() == [0, 1, 2] and v["b"].tolist() == [1, 0] and v["c"].numel() == 0


@pytest.mark.parametrize("cells", PATHS)
def test_consistency_tiles_join_the_progressive_scores(cells):
    # accurate mode: library entries between the two groups add to their columns' scores, in
    # the batched levels and the numba merges
    from torchmsa.consistency import Consistency, Library

    policy = _numba_cells(cells)
    rng = np.random.default_rng(3)
    scoring = profile_scoring(PROTEIN)
    seqs = _family(rng, 6, 14, empty=True)
    tree = _tree(rng, 6)
    weights = [int(w) for w in rng.integers(1, 300, 6)]
    library = []
    for _ in range(60):
        x, y = (int(v) for v in sorted(rng.choice([0, 2, 3, 4, 5], 2, replace=False)))
        i, j = int(rng.integers(len(seqs[x]))), int(rng.integers(len(seqs[y])))
        library.append((x, i, y, j, int(rng.integers(1, 65))))
    lib = Library(*[torch.tensor(v) for v in zip(*library)], dist=np.zeros((6, 6)))
    job = [(seqs, tree, weights)]
    with_cons = _run(
        job,
        scoring,
        consistency=lambda f: Consistency([lib], [tree], [6], f, 400),
        policy=policy,
    )
    assert with_cons[0] == _oracle(seqs, tree, weights, scoring, library=library, cw=400)
    assert with_cons != _run(job, scoring, policy=policy)  # the library changed the alignment


def _library(rng, seqs, count):
    from torchmsa.consistency import Library

    live = [r for r, s in enumerate(seqs) if s]
    ent = []
    for _ in range(count if len(live) > 1 else 0):
        x, y = (int(v) for v in sorted(rng.choice(live, 2, replace=False)))
        i, j = int(rng.integers(len(seqs[x]))), int(rng.integers(len(seqs[y])))
        ent.append((x, i, y, j, int(rng.integers(1, 65))))
    n = len(seqs)
    cols = (
        [torch.tensor(v, dtype=torch.int64) for v in zip(*ent)]
        if ent
        else [torch.zeros(0, dtype=torch.int64)] * 5
    )
    return Library(*cols, dist=np.zeros((n, n)))


@pytest.mark.parametrize("seed", range(3))
def test_numba_merges_with_consistency_equal_the_batched_levels(seed):
    # several jobs, each with its library; the numba path must run and change nothing
    from torchmsa.consistency import Consistency

    rng = np.random.default_rng(200 + seed)
    scoring = profile_scoring(PROTEIN)
    jobs, libs = [], []
    for n in (25, 9, 2):
        seqs = _family(rng, n, 30, empty=seed == 0)
        jobs.append((seqs, _tree(rng, n), [int(w) for w in rng.integers(1, 9000, n)]))
        libs.append(_library(rng, seqs, 40 * n))
    trees, sizes = [t for _, t, _ in jobs], [len(j) for j, _, _ in jobs]

    def run(policy):
        return _run(
            jobs,
            scoring,
            consistency=lambda f: Consistency(libs, trees, sizes, f, 16),
            policy=policy,
        )

    got, host_runs = {}, 0
    for cells in PATHS:
        got[cells], stages = _stages(lambda c=cells: run(_numba_cells(c)))
        host_runs += stages["torchmsa.progressive_host"]
    lone = run(_numba_cells(60, lone_pair_cells=0))  # one-pair levels on all threads
    assert got[-1] == got[60] == got[1 << 40] == lone
    assert host_runs > 0
    assert got[-1] != _run(jobs, scoring)  # the libraries changed the alignments


@pytest.mark.parametrize("seed", range(4))
def test_numba_merges_equal_the_batched_levels(seed):
    # larger families than the oracle can take, ragged ends, gap costs that depend on them
    rng = np.random.default_rng(100 + seed)
    scoring = profile_scoring(PROTEIN, gap_open=6.0)
    jobs = []
    for n in (30, 17, 2):
        seqs = _family(rng, n, 40, empty=seed == 0)
        jobs.append((seqs, _tree(rng, n), [int(w) for w in rng.integers(1, 9000, n)]))
    got = {cells: _run(jobs, scoring, policy=_numba_cells(cells)) for cells in PATHS}
    assert got[-1] == got[60] == got[1 << 40]


def test_extreme_policies_and_budgets_give_the_same_alignments():
    # placement and batching never change a result: everything on the host, everything
    # batched, tiny pools, runs of one level, levels split pair by pair
    rng = np.random.default_rng(41)
    scoring = profile_scoring(PROTEIN)
    jobs = []
    for n in (21, 8, 1, 3):
        seqs = _family(rng, n, 25, empty=n == 8)
        tree = _tree(rng, n) if n > 1 else None
        jobs.append((seqs, tree, [int(w) for w in rng.integers(1, 3000, n)]))
    want = _run(jobs, scoring)
    for policy, budget in (
        (_numba_cells(1 << 40, run_rows=1, pool_rows=1, lone_pair_cells=0), None),
        (_numba_cells(-1, pool_rows=1), MemoryBudget(host_bytes=1 << 16)),
        (_numba_cells(200, cpu_device_pair_cells=50), MemoryBudget(host_bytes=1 << 40)),
    ):
        assert _run(jobs, scoring, policy=policy, budget=budget) == want


def test_numba_and_batched_merges_store_the_same_profiles():
    # every node's profile and boundary weights, not only the alignment they lead to
    rng = np.random.default_rng(21)
    scoring = profile_scoring(PROTEIN, gap_open=6.0)
    seqs = _family(rng, 24, 30, empty=True)
    tree = _tree(rng, 24)
    codes, lengths = _codes(seqs)
    forest = Forest.from_trees([tree], [24])
    weights = torch.from_numpy(rng.integers(1, 9000, 24))
    states = []
    for numba in (False, True):
        table = ResidueTable.from_batch(codes, lengths)
        # a pool large enough that nothing is dropped
        st = Nodes(table, lengths, forest, weights, scoring.matrix.shape[0], pool_rows=1 << 16)
        for level in forest.levels:
            pairs = np.concatenate([forest.children[level - 24], level[:, None]], 1)
            if numba:
                bound = st.cols.copy()
                bound[pairs[:, 2]] = bound[pairs[:, 0]] + bound[pairs[:, 1]]
                run_on_host(st, [pairs], bound, scoring)
            else:
                align_level(st, pairs, scoring, CPU, "cpu")
        states.append(st)
    a, b = states
    assert np.array_equal(a.cols, b.cols) and np.array_equal(a.w, b.w)
    for node in range(24, 47):
        k = int(a.cols[node])
        pa = a.pools[0].prof[a.row[node] : a.row[node] + k]
        pb = b.pools[0].prof[b.row[node] : b.row[node] + k]
        assert torch.equal(pa, pb), node
        ba = a.pools[0].both[a.bnd[node] : a.bnd[node] + k + 1]
        bb = b.pools[0].both[b.bnd[node] : b.bnd[node] + k + 1]
        assert torch.equal(ba, bb), node


def test_levels_split_to_fit_memory_give_the_same_alignment():
    rng = np.random.default_rng(31)
    scoring = profile_scoring(PROTEIN)
    seqs = _family(rng, 20, 30)
    tree = _tree(rng, 20)
    jobs = [(seqs, tree, [int(w) for w in rng.integers(1, 500, 20)])]
    batched = _numba_cells(-1)
    whole = _run(jobs, scoring, policy=batched)
    # room for a few pairs of 30-column profiles at a time: the first levels are split
    budget = MemoryBudget(host_bytes=2 * 30 * 30 * 32 + 10**5)
    split, stages = _stages(lambda: _run(jobs, scoring, policy=batched, budget=budget))
    assert split == whole
    assert stages["torchmsa.progressive_level"] > len(tree.levels())
    codes, lengths = _codes(seqs)
    forest = Forest.from_trees([tree], [20])
    st = Nodes(
        ResidueTable.from_batch(codes, lengths),
        lengths,
        forest,
        torch.ones(20),
        scoring.matrix.shape[0],
    )
    first = np.concatenate([forest.children[forest.levels[0] - 20], forest.levels[0][:, None]], 1)
    parts = split_level(st, first, CPU, budget)
    assert len(parts) > 1 and np.array_equal(np.concatenate(parts), first)
    (whole_level,) = split_level(st, first, CPU, MemoryBudget(host_bytes=1 << 40))
    assert np.array_equal(whole_level, first)
    # the policy's cap cuts a level the budget would hold whole, one pair a part at least
    capped = split_level(st, first, CPU, MemoryBudget(host_bytes=1 << 40), cap=1)
    assert [len(p) for p in capped] == [1] * len(first)
    assert np.array_equal(np.concatenate(capped), first)


def test_a_merge_larger_than_memory_is_a_resource_error():
    from torchmsa.errors import ResourceError

    rng = np.random.default_rng(2)
    seqs = _family(rng, 3, 20)
    job = [(seqs, _tree(rng, 3), [1, 1, 1])]
    tiny = MemoryBudget(host_bytes=1000)
    with pytest.raises(ResourceError, match="merging two profiles of.*host_bytes"):
        _run(job, profile_scoring(PROTEIN), policy=_numba_cells(-1), budget=tiny)


AMINO = list("ACDEFGHIKLMNPQRSTVWY")


def _mutate(rng, seq: str, p: float) -> str:
    return "".join(str(rng.choice(AMINO)) if rng.random() < p else c for c in seq)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_two_long_sequences_align_to_each_other_among_many_short_ones(seed):
    # Two long sequences (x, a domain, y) among 200 copies of the domain alone: their x and y
    # columns hold under 1% of the weight of the profiles that meet, below the occupancy floor
    # of ops/colscores.py. Without the floor those columns score 0 or -1 whatever their
    # residues and the long sequences' x and y go astray.
    import torchmsa

    rng = np.random.default_rng(seed)
    dom, x, y = ("".join(rng.choice(AMINO, k)) for k in (60, 80, 80))
    long1 = _mutate(rng, x, 0.25) + _mutate(rng, dom, 0.2) + _mutate(rng, y, 0.25)
    long2 = _mutate(rng, x, 0.25)[5:] + _mutate(rng, dom, 0.2) + _mutate(rng, y, 0.25)[:-7]
    seqs = {"long1": long1, "long2": long2}
    seqs.update((f"s{k}", _mutate(rng, dom, 0.35)) for k in range(200))
    aln = torchmsa.align(seqs, device="cpu")
    rows = dict(zip(aln.names, aln.rows))
    pairs, i, j = set(), 0, 0
    for a, b in zip(rows["long1"], rows["long2"]):
        if a != "-" and b != "-":
            pairs.add((i, j))
        i, j = i + (a != "-"), j + (b != "-")
    truth = {(k, k - 5) for k in range(5, len(long1) - 7)}
    assert len(pairs & truth) >= 0.95 * len(truth)
