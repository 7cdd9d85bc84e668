import math

import numpy as np
import pytest
import torch

import torchmsa
from tests import oracles
from torchmsa.config import ConsistencyConfig, ExecutionPolicy
from torchmsa.consistency import (
    Consistency,
    Library,
    LocalScoring,
    local_library,
    terminal_trims,
    window_scores,
)
from torchmsa.pipeline import profile_scoring
from torchmsa.pipeline.accurate import cut_ends, end_block
from torchmsa.pipeline.placement import host_job
from torchmsa.progressive import Forest, ResidueTable
from torchmsa.scoring import get_scoring
from torchmsa.sequences import SequenceBatch, segments
from torchmsa.tree import build_tree

AMINO = "ARNDCQEGHILKMFPSTWYV"
DEFAULTS = ConsistencyConfig()


def _family(seed, n=6, length=30):
    rng = np.random.default_rng(seed)
    root = "".join(rng.choice(list(AMINO), length))
    out = []
    for _ in range(n):
        s = "".join(c if rng.random() > 0.25 else rng.choice(list(AMINO)) for c in root)
        k = int(rng.integers(0, length - 5))
        out.append(s[:k] + s[k + int(rng.integers(0, 4)) :])
    return out


def _library(seqs, config=None, policy=None):
    batch = SequenceBatch.from_input(seqs, "protein")
    sc = get_scoring("protein", "BLOSUM62", 11, 1)
    mat = torch.from_numpy(sc.matrix.copy())
    lib = local_library(
        batch.codes, batch.lengths, mat, 11, 1, backend="cpu", config=config, policy=policy
    )
    return batch, lib


def _aligned_pairs(r):
    """Aligned residue pairs ``(i, j)`` of a pairwise result, in alignment order, and whether
    each pair follows the previous one without a gap between them."""
    i, j, pairs, joined, gap = r.a_range[0], r.b_range[0], [], [], True
    for a, b in zip(*r.aligned):
        if a != "-" and b != "-":
            pairs.append((i, j))
            joined.append(not gap)
            gap = False
        else:
            gap = True
        i += a != "-"
        j += b != "-"
    return pairs, joined


def _oracle_weights(pairs, joined, sa, sb, matrix, letters, config=DEFAULTS):
    """The library weight of each aligned pair, by the rule in local_library's docstring."""
    if not pairs:
        return []
    top, half = config.weight_max, config.entry_window
    num, den = config.window_ratio
    same = sum(sa[i] == sb[j] for i, j in pairs)
    ident = (same * top + len(pairs) // 2) // len(pairs)
    score = [matrix[letters.index(sa[i])][letters.index(sb[j])] for i, j in pairs]
    block, k = [], -1
    for joined_here in joined:
        k += not joined_here
        block.append(k)
    out = []
    for e in range(len(pairs)):
        win = sum(
            score[f]
            for f in range(max(0, e - half), min(len(pairs), e + half + 1))
            if block[f] == block[e]
        )
        out.append(min(top, max(0, ident + (win * num) // den - config.entry_floor)))
    return out


def test_window_scores_match_plain_python():
    rng = np.random.default_rng(5)
    for _ in range(20):
        pair, i, j = [], [], []
        for p in range(int(rng.integers(1, 5))):
            a = b = 0
            for _ in range(int(rng.integers(1, 30))):
                step = int(rng.integers(1, 3))  # 2: a gap before this pair
                a += step
                b += 1 if step == 1 else int(rng.integers(1, 3))
                pair.append(p)
                i.append(a)
                j.append(b)
        score = rng.integers(-4, 12, len(pair))
        half = int(rng.integers(0, 6))
        got = window_scores(*(torch.tensor(v) for v in (pair, i, j, score)), half).tolist()
        want = []
        for e in range(len(pair)):
            lo = e
            while lo > 0 and (pair[lo - 1], i[lo - 1] + 1, j[lo - 1] + 1) == (
                pair[lo],
                i[lo],
                j[lo],
            ):
                lo -= 1
            hi = e
            while hi + 1 < len(pair) and (pair[hi + 1], i[hi + 1], j[hi + 1]) == (
                pair[hi],
                i[hi] + 1,
                j[hi] + 1,
            ):
                hi += 1
            want.append(int(score[max(lo, e - half) : min(hi, e + half) + 1].sum()))
        assert got == want


@pytest.mark.parametrize(
    "config, policy",
    [
        (DEFAULTS, None),
        (
            ConsistencyConfig(entry_window=2, window_ratio=(1, 2), entry_floor=20, weight_max=40),
            ExecutionPolicy(local_batch_cells=1),  # one pair per call
        ),
    ],
    ids=["defaults", "other-rules"],
)
def test_library_entries_are_the_global_alignments_with_window_weights(config, policy):
    seqs = _family(0) + ["".join(np.random.default_rng(9).choice(list(AMINO), 25))]
    batch, lib = _library(seqs, config, policy)
    sc = get_scoring("protein", "BLOSUM62", 11, 1)
    letters = batch.alphabet.letters
    matrix = sc.matrix.tolist()
    n = len(seqs)
    spans, weights = {}, set()
    for x, y, ilo, ihi, jlo, jhi in lib.spans.tolist():
        spans[x, y] = (ilo, ihi, jlo, jhi)
    for x in range(n):
        for y in range(x + 1, n):
            loc = torchmsa.pairwise_align(
                seqs[x], seqs[y], mode="local", gap_open=11, gap_extend=1, device="cpu"
            )
            pairs, _ = _aligned_pairs(loc)
            if pairs:  # the local alignment's first and last aligned pair
                want_span = (pairs[0][0], pairs[-1][0], pairs[0][1], pairs[-1][1])
                assert spans.pop((x, y)) == want_span
            glob = torchmsa.pairwise_align(
                seqs[x], seqs[y], mode="semiglobal", gap_open=11, gap_extend=1, device="cpu"
            )
            pairs, joined = _aligned_pairs(glob)
            w = _oracle_weights(pairs, joined, seqs[x], seqs[y], matrix, letters, config)
            want = sorted((i, j, v) for (i, j), v in zip(pairs, w) if v > 0)
            sel = (lib.x == x) & (lib.y == y)
            got = sorted(zip(lib.i[sel].tolist(), lib.j[sel].tolist(), lib.w[sel].tolist()))
            assert got == want, (x, y)
            weights.update(v for *_, v in want)
            selfs = [
                torchmsa.pairwise_align(
                    s, s, mode="local", gap_open=11, gap_extend=1, traceback=False
                ).score
                for s in (seqs[x], seqs[y])
            ]
            want_d = min(1.0, max(0.0, 1 - loc.score / max(1, min(selfs))))
            assert lib.dist[x, y] == pytest.approx(want_d) and lib.dist[y, x] == lib.dist[x, y]
    assert not spans
    # the weights vary within alignments and some entries are left out (the unrelated sequence)
    assert len(weights) > 10 and len(lib) < sum(
        len(seqs[x]) for x in range(n) for _ in range(x + 1, n)
    )


def test_level_tiles_match_brute_force():
    seqs = _family(1, n=5)
    batch, lib = _library(seqs)
    tree = build_tree(lib.dist, "upgma", batch.names)
    forest = Forest.from_trees([tree], [len(seqs)])
    cons = Consistency([lib], [tree], [len(seqs)], forest, weight=7)
    table = ResidueTable.from_batch(batch.codes, batch.lengths)
    weights = torch.tensor([3, 5, 7, 11, 13])
    # Level 0: leaves are their own nodes, columns are residue positions.
    ids = forest.levels[0]
    kids = np.concatenate([forest.children[ids - 5][:, 0], forest.children[ids - 5][:, 1]])
    seq_kid = torch.full((5,), -1)
    seq_kid[torch.from_numpy(kids)] = torch.arange(len(kids))
    P = len(ids)
    n = batch.lengths[torch.from_numpy(kids[:P])].long()
    m = batch.lengths[torch.from_numpy(kids[P:])].long()
    s_off = torch.cumsum(n * m, 0) - n * m
    kid_w = weights[torch.from_numpy(kids)]
    got = torch.zeros(int((n * m).sum()), dtype=torch.int32)
    cons.add_level_tiles(got, 0, table, seq_kid, P, s_off, n, m, kid_w, weights)
    for p in range(P):
        a, b = int(kids[p]), int(kids[p + P])
        brute = np.zeros((int(n[p]), int(m[p])), np.int64)
        for e in range(len(lib)):
            x, y = int(lib.x[e]), int(lib.y[e])
            if {x, y} == {a, b}:
                ia, ib = (
                    (int(lib.i[e]), int(lib.j[e])) if x == a else (int(lib.j[e]), int(lib.i[e]))
                )
                brute[ia, ib] += int(lib.w[e]) * int(weights[a]) * int(weights[b])
        want = (brute * 7) // (int(weights[a]) * int(weights[b]))
        block = got[int(s_off[p]) : int(s_off[p]) + int(n[p] * m[p])].view(int(n[p]), int(m[p]))
        assert block.tolist() == want.tolist()


def test_accurate_mode_aligns_and_keeps_residues():
    seqs = _family(2, n=7, length=40)
    aln = torchmsa.align(seqs, device="cpu", mode="accurate")
    assert aln.metadata["mode"] == "accurate" and aln.metadata["library_entries"] > 0
    assert [r.replace("-", "") for r in aln.rows] == seqs
    again = torchmsa.align(seqs, device="cpu", mode="accurate")
    assert aln.rows == again.rows


def _random_library(rng, lengths, n_pairs):
    """Entries of random pairs, each a run of increasing residue pairs (a local alignment)."""
    n = len(lengths)
    cols = {k: [] for k in "xiyjw"}
    pairs = [(x, y) for x in range(n) for y in range(x + 1, n)]
    for k in rng.choice(len(pairs), n_pairs, replace=False):
        x, y = pairs[k]
        count = int(rng.integers(1, 1 + min(lengths[x], lengths[y])))
        i = np.sort(rng.choice(lengths[x], count, replace=False))
        j = np.sort(rng.choice(lengths[y], count, replace=False))
        for key, v in zip("xiyjw", (np.full(count, x), i, np.full(count, y), j, np.ones(count))):
            cols[key].append(v)
    t = {k: torch.from_numpy(np.concatenate(v).astype(np.int64)) for k, v in cols.items()}
    return Library(t["x"], t["i"], t["y"], t["j"], t["w"], np.zeros((n, n)))


def _lower_median(values):
    return sorted(values)[(len(values) - 1) // 2] if values else 0


def _medians(excess, n):
    per = {s: [] for s in range(n)}
    for (x, y), e in excess.items():
        per[x].append(e)
        per[y].append(-e)
    return [_lower_median(v) for _, v in sorted(per.items())]


def _trims_oracle(lib, codes, lengths, local, min_excess):
    spans = {}
    for x, i, y, j in zip(*(t.tolist() for t in (lib.x, lib.i, lib.y, lib.j))):
        lo_i, hi_i, lo_j, hi_j = spans.get((x, y), (i, i, j, j))
        spans[(x, y)] = (min(lo_i, i), max(hi_i, i), min(lo_j, j), max(hi_j, j))
    matrix = local.matrix.tolist()
    trims = []
    for before in (True, False):
        excess, pieces = {}, {}
        for (x, y), (lo_i, hi_i, lo_j, hi_j) in spans.items():
            a, b = codes[x][: lengths[x]], codes[y][: lengths[y]]
            if before:
                excess[x, y] = lo_i - lo_j
                pieces[x, y] = (a[:lo_i], b[:lo_j])
            else:
                excess[x, y] = (lengths[x] - 1 - hi_i) - (lengths[y] - 1 - hi_j)
                pieces[x, y] = (a[hi_i + 1 :], b[hi_j + 1 :])

        med = _medians(excess, len(lengths))
        for (x, y), e in list(excess.items()):
            if (med[x] >= min_excess and e >= min_excess) or (
                med[y] >= min_excess and -e >= min_excess
            ):
                pa, pb = pieces[x, y]
                if pa and pb:
                    inputs = oracles.pair_inputs(pa, pb, matrix, local.gap_open, local.gap_extend)
                    score = oracles.align(*inputs, "local")[0]
                    need = math.log(local.k * len(pa) * len(pb) / local.evalue) / local.lam
                    if score >= need:
                        excess[x, y] = 0
        trims.append([m if m >= min_excess else 0 for m in _medians(excess, len(lengths))])
    head, tail = trims
    for s in range(len(lengths)):
        if head[s] + tail[s] >= lengths[s]:
            head[s] = tail[s] = 0
    return head, tail


def test_terminal_trims_in_small_batches_give_the_same_trims():
    sc = get_scoring("protein", "BLOSUM62", 11, 1)
    mat = torch.from_numpy(sc.matrix.copy())
    rng = np.random.default_rng(3)
    lengths = rng.integers(5, 40, 7).tolist()
    seqs = ["".join(rng.choice(list(AMINO), n)) for n in lengths]
    batch = SequenceBatch.from_input(seqs, "protein")
    lib = _random_library(rng, lengths, 15)
    local = LocalScoring(mat, 11, 1, batch.alphabet.gap_code, 0.267, 0.041, 100.0)
    want = terminal_trims(lib, batch.codes, batch.lengths, local, 2, "cpu")
    one = ExecutionPolicy(local_batch_cells=1)
    got = terminal_trims(lib, batch.codes, batch.lengths, local, 2, "cpu", policy=one)
    assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1])
    assert int(want[0].sum() + want[1].sum()) > 0


def test_terminal_trims_match_plain_python():
    sc = get_scoring("protein", "BLOSUM62", 11, 1)
    mat = torch.from_numpy(sc.matrix.copy())
    trimmed = related = 0
    for seed in range(30):
        rng = np.random.default_rng(seed)
        lengths = rng.integers(1, 40, 7).tolist()
        seqs = ["".join(rng.choice(list(AMINO), n)) for n in lengths]
        batch = SequenceBatch.from_input(seqs, "protein")
        lib = _random_library(rng, lengths, int(rng.integers(1, 22)))
        min_excess = int(rng.integers(1, 10))
        evalue = float(rng.choice([1e-3, 1.0, 100.0]))
        local = LocalScoring(mat, 11, 1, batch.alphabet.gap_code, 0.267, 0.041, evalue)
        head, tail = terminal_trims(lib, batch.codes, batch.lengths, local, min_excess, "cpu")
        want = _trims_oracle(lib, batch.codes.tolist(), lengths, local, min_excess)
        assert (head.tolist(), tail.tolist()) == want
        trimmed += int((head > 0).sum() + (tail > 0).sum())
        unchecked = LocalScoring(mat, 11, 1, batch.alphabet.gap_code, 0.267, 0.041, 1e-300)
        plain = terminal_trims(lib, batch.codes, batch.lengths, unchecked, min_excess, "cpu")
        related += int(not (torch.equal(plain[0], head) and torch.equal(plain[1], tail)))
    # the cases exercise trimming, and the related-remainder rule changing it
    assert trimmed > 10 and related > 2


def test_trimmed_library_keeps_entries_inside_the_spans():
    rng = np.random.default_rng(7)
    lengths = [40, 35, 50, 20]
    lib = _random_library(rng, lengths, 6)
    head, kept = torch.tensor([5, 0, 12, 3]), torch.tensor([30, 35, 20, 10])
    cut = lib.trimmed(head, kept)
    want = sorted(
        (x, i - int(head[x]), y, j - int(head[y]), w)
        for x, i, y, j, w in zip(*(t.tolist() for t in (lib.x, lib.i, lib.y, lib.j, lib.w)))
        if 0 <= i - head[x] < kept[x] and 0 <= j - head[y] < kept[y]
    )
    got = sorted(zip(*(t.tolist() for t in (cut.x, cut.i, cut.y, cut.j, cut.w))))
    assert got == want and 0 < len(got) < len(lib)


def test_segments_are_slices():
    seqs = ["MKVLAAGHHWPERT", "MKVLWP", "ACDEFGHIKLMNPQRSTVWY", "W"]
    batch = SequenceBatch.from_input(seqs, "protein")
    rows, start, count = (
        torch.tensor([2, 0, 3, 2]),
        torch.tensor([4, 9, 0, 19]),
        torch.tensor([7, 5, 1, 0]),
    )
    got = segments(batch.codes, rows, start, count, batch.alphabet.gap_code)
    want = SequenceBatch.from_input(
        [seqs[r][a : a + k] for r, a, k in zip(rows.tolist(), start.tolist(), count.tolist())],
        "protein",
    )
    assert got.shape == (4, 7) and torch.equal(got[:, : want.codes.shape[1]], want.codes)
    assert (got[:, want.codes.shape[1] :] == batch.alphabet.gap_code).all()


def test_cut_ends_and_end_blocks_round_trip():
    rng = np.random.default_rng(5)
    seqs = _family(4, n=5, length=40)
    seqs = ["".join(rng.choice(list(AMINO), 25)) + s for s in seqs[:3]] + seqs[3:]
    batch = SequenceBatch.from_input(seqs, "protein")
    head, tail = torch.tensor([25, 25, 25, 0, 0]), torch.tensor([0, 6, 0, 9, 0])
    cut = cut_ends(batch, head, tail)
    kept = [s[h : len(s) - t] for s, h, t in zip(seqs, head.tolist(), tail.tolist())]
    assert cut.residues == kept and cut.lengths.tolist() == [len(k) for k in kept]
    gap = batch.alphabet.gap_code
    scoring = profile_scoring(batch.alphabet, None, None, None, 2.0)
    heads = end_block(batch, torch.zeros_like(head), head, scoring, "upgma", "cpu")
    tails = end_block(batch, batch.lengths.long() - tail, tail, scoring, "upgma", "cpu")
    assert heads.shape[1] >= 25 and tails.shape[1] == 9  # one tail each: a ragged block
    assert (heads[3:] == gap).all() and (tails[[0, 2, 4]] == gap).all()
    for r, s in enumerate(seqs):
        row = torch.cat([heads[r], cut.codes[r, : len(kept[r])], tails[r]])
        assert torch.equal(row[row != gap], batch.codes[r, : len(s)])


def test_small_end_blocks_go_to_the_host_under_the_automatic_backend():
    # the pieces of a job on a GPU make a job of their own; a small one runs on the host, as a
    # small job does, unless the backend was chosen explicitly
    from collections import Counter

    seqs = ["".join(np.random.default_rng(k).choice(list(AMINO), 30)) for k in range(3)]
    batch = SequenceBatch.from_input(seqs, "protein")
    scoring = profile_scoring(batch.alphabet, None, None, None, 2.0)
    start, count = torch.zeros(3, dtype=torch.int64), torch.tensor([20, 0, 25])
    for cells, host in ((1 << 27, True), (-1, False)):
        policy = ExecutionPolicy(host_accurate_cells=cells)
        assert host_job(2, 25, "accurate", policy=policy) == host
    # a host-sized block asked for Triton runs on the host, in numba (no Triton on this CPU)
    policy = ExecutionPolicy(host_accurate_cells=1 << 27)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        block = end_block(batch, start, count, scoring, "upgma", "triton", True, policy=policy)
    stages = Counter(e.name for e in prof.events())
    assert stages["torchmsa.progressive_host"] > 0 and stages["torchmsa.local_library"] == 1
    assert (block[1] == batch.alphabet.gap_code).all() and block.shape[1] >= 25


def test_accurate_mode_sets_aside_an_unshared_terminal_domain():
    # every sequence starts with an unrelated stretch, one of them with a long one: unshared,
    # it is aligned to nothing (otherwise the matrix offset pulls the short ones under it)
    rng = np.random.default_rng(11)
    seqs = [
        "".join(rng.choice(list(AMINO), 150 if k == 2 else 30)) + s
        for k, s in enumerate(_family(3, n=6, length=80))
    ]
    aln = torchmsa.align(seqs, device="cpu", mode="accurate")
    assert [r.replace("-", "") for r in aln.rows] == seqs
    assert aln.metadata["set_aside"] >= 150 - 30 - 10
    others = [r for k, r in enumerate(aln.rows) if k != 2]
    ext_cols = [c for c, a in enumerate(aln.rows[2]) if a != "-"][:100]
    assert all(r[c] == "-" for r in others for c in ext_cols)
