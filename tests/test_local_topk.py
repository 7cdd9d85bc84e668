"""Best-K local alignment (decision 0038): the oracle against a hand-computed case, the CPU strip
kernel against the oracle's strips, ``local_topk`` against the oracle under many strip layouts
(fix-ups and recomputations included), hit 1 against ``pairwise_align``, errors and the CLI."""

from __future__ import annotations

import doctest
import gzip
import sys
import types

import local_oracle as oracle
import numpy as np
import pytest
import torch

import torchmsa
from torchmsa.alphabet import DNA, PROTEIN, encode
from torchmsa.cli import main
from torchmsa.constants import NEG
from torchmsa.cpu import strip as cpu_strip
from torchmsa.errors import (
    ArgumentError,
    EmptyInputError,
    InvalidCharacterError,
    ResourceError,
)
from torchmsa.ops import local as ops_local
from torchmsa.ops import local_strips
from torchmsa.ops.local import LocalPlan, local_topk, local_topk_codes
from torchmsa.ops.local_strips import StripDP, plan_layout
from torchmsa.scoring import get_scoring

SIMPLE = np.array([[2, -1], [-1, 2]], np.int32)  # two letters: match 2, mismatch -1
AMINO = "ARNDCQEGHILKMFPSTWYV"


def _codes(text, alphabet):
    return torch.from_numpy(encode(text, alphabet)[0].copy())


def _hits(r):
    ops = r.ops.tolist()
    return [
        (int(r.score[t]), int(r.query_start[t]), int(r.query_end[t]), int(r.subject_start[t]),
         int(r.subject_end[t]), ops[t][: int(r.n_ops[t])])
        for t in range(r.score.shape[0])
    ]  # fmt: skip


# ---- (1) the oracle against a hand-computed case --------------------------------------------


def test_oracle_matches_hand_computed_case():
    """q = ACA, s = CACA; match 2, mismatch -1, open 2, extend 1 (A = 0, C = 1)."""
    q, s = [0, 1, 0], [1, 0, 1, 0]
    H = oracle.fill(q, s, SIMPLE, 2, 1)["H"]
    assert [row[1:] for row in H[1:]] == [[0, 2, 0, 2], [2, 0, 4, 2], [0, 4, 2, 6]]
    after = oracle.fill(q, s, SIMPLE, 2, 1, {(1, 2), (2, 3), (3, 4)})["H"]
    assert [row[1:] for row in after[1:]] == [[0, 0, 0, 2], [2, 0, 0, 0], [0, 4, 2, 1]]
    expected = [(6, 0, 3, 1, 4, [0, 0, 0]), (4, 1, 3, 0, 2, [0, 0]), (2, 0, 1, 3, 4, [0])]
    assert oracle.waterman_eggert(q, s, SIMPLE, 2, 1, k=10) == expected
    r = local_topk_codes(
        torch.tensor(q, dtype=torch.uint8), torch.tensor(s, dtype=torch.uint8), SIMPLE, 2, 1,
        k=10, plan=LocalPlan(strip_width=1, segments=2, warmup=1),
    )  # fmt: skip
    assert _hits(r) == expected


# ---- (2) strip_fill against the oracle's strips ---------------------------------------------

STRIP_CASES = [
    (n, m, W, C, seed)
    for seed, (n, m, W, C) in enumerate(
        [(1, 1, 1, 1), (2, 2, 1, 2), (1, 9, 4, 2), (9, 3, 4, 1), (9, 4, 4, 1), (9, 5, 4, 2),
         (7, 6, 7, 1), (7, 8, 7, 2), (5, 23, 3, 3), (12, 30, 4, 4), (2, 17, 16, 1)]
    )
]  # fmt: skip


def _random_column(rng, n, m, zero):
    if zero:
        return np.stack([np.zeros(n + 1), np.full(n + 1, NEG), np.zeros(n + 1), np.zeros(n + 1)])
    H = rng.integers(0, 9, n + 1)
    E = np.maximum(H - 3, rng.integers(-6, 5, n + 1))
    return np.stack([H, E, rng.integers(0, m + 1, n + 1), rng.integers(0, m + 1, n + 1)])


@pytest.mark.parametrize(("n", "m", "W", "C", "seed"), STRIP_CASES, ids=lambda v: str(v))
def test_strip_fill_matches_oracle_strips(n, m, W, C, seed):
    rng = np.random.default_rng(seed)
    q = rng.integers(0, 4, n).astype(np.uint8)
    s = rng.integers(0, 4, m).astype(np.uint8)
    mat = get_scoring("dna").matrix[:4, :4].copy()
    S = -(-m // W)
    bounds = np.linspace(0, S, C + 1).round().astype(np.int32)
    lo, hi = bounds[:-1], bounds[1:]
    keep = hi > lo
    lo, hi = lo[keep], hi[keep]
    col_in = np.stack([_random_column(rng, n, m, c % 2 == 0) for c in range(len(lo))])
    col_in = col_in.astype(np.int32)
    forbidden = {
        (int(i), int(j)) for i, j in zip(rng.integers(1, n + 1, 6), rng.integers(1, m + 1, 6))
    }
    keys = sorted(forbidden)
    fptr = np.searchsorted([i for i, _ in keys], np.arange(n + 2)).astype(np.int32)
    fcol = np.array([j for _, j in keys], np.int32)
    slot = np.zeros(len(lo), np.int64)  # segments written in reverse order, after 2 spare rows
    at = 2
    for c in reversed(range(len(lo))):
        slot[c], at = at, at + hi[c] - lo[c]
    ckpt = np.full((at, 4, n + 1), 12345, np.int32)
    best = np.full((at, 4), 12345, np.int32)
    cpu_strip.strip_fill(q, s, mat, 5, 2, W, lo, hi, col_in, slot, fptr, fcol, ckpt, best)
    ref = oracle.strip_reference(q, s, mat, 5, 2, W, lo, hi, col_in, forbidden)
    for c, (ckpts, bests) in enumerate(ref):
        rows = slice(slot[c], slot[c] + hi[c] - lo[c])
        assert ckpt[rows].tolist() == ckpts, f"segment {c}"
        assert best[rows].tolist() == bests, f"segment {c}"
    assert (ckpt[:2] == 12345).all() and (best[:2] == 12345).all()


def test_fix_up_gives_the_sequential_checkpoints():
    """Segments without warm-up (every input column wrong) and with warm-ups too short for a
    repeat crossing them: the fix-up rounds end where one sequential segment does."""
    rng = np.random.default_rng(7)
    unit = "".join(rng.choice(list("ACGT"), 9))
    q = _codes(unit * 2, DNA)
    s = _codes((unit + "A") * 12, DNA)
    mat = torch.from_numpy(get_scoring("dna").matrix.copy())

    def run(**plan):
        resolved, chunk = plan_layout(len(q), len(s), LocalPlan(**plan), "cpu", "cpu", 1 << 30)
        dp = StripDP(q, s, mat, 10, 1, resolved, chunk, "cpu")
        return dp, dp.first_pass()

    ref, rounds = run(strip_width=3, segments=1, warmup=0)
    assert rounds == 0 and ref.refilled == 0
    for plan in ({"warmup": 0, "segments": 5}, {"warmup": 1, "segments": 9, "refill": 1}):
        dp, rounds = run(strip_width=3, **plan)
        assert rounds >= 1 and dp.refilled > 0, plan
        assert torch.equal(dp.ckpt, ref.ckpt) and torch.equal(dp.best, ref.best), plan
        assert (dp.best_host == ref.best.numpy()).all()


# ---- (3) local_topk against the oracle ------------------------------------------------------

PLANS = [
    LocalPlan(strip_width=1, segments=1, warmup=0),
    LocalPlan(strip_width=3, segments=4, warmup=0, refill=1),
    LocalPlan(strip_width=4, segments=3, warmup=1),
    LocalPlan(strip_width=8, segments=2, warmup=2),
    LocalPlan(strip_width=5, segments=7, warmup=1, refill=3),
    LocalPlan(),
]


def _case(rng, kind):
    if kind == "dna-repeats":  # several copies of one motif, some mutated: many hits and ties
        motif = "".join(rng.choice(list("ACGT"), rng.integers(3, 8)))
        parts = []
        for _ in range(rng.integers(2, 6)):
            copy = "".join(c if rng.random() > 0.15 else rng.choice(list("ACGT")) for c in motif)
            parts += [copy, "".join(rng.choice(list("ACGT"), rng.integers(0, 12)))]
        return "dna", motif * int(rng.integers(1, 3)), "".join(parts)
    if kind == "dna":
        q = "".join(rng.choice(list("AC"), rng.integers(1, 14)))
        return "dna", q, "".join(rng.choice(list("ACG"), rng.integers(1, 70)))
    q = "".join(rng.choice(list(AMINO[:6]), rng.integers(1, 16)))
    s = "".join(rng.choice(list(AMINO[:6]), rng.integers(1, 40))) + q[::-1] + q
    return "protein", q, s + "".join(rng.choice(list(AMINO), rng.integers(0, 30)))


@pytest.mark.parametrize("kind", ["dna-repeats", "dna", "protein"])
@pytest.mark.parametrize("gaps", [(10, 1), (3, 1), (2, 2)], ids=lambda g: f"go{g[0]}-ge{g[1]}")
def test_local_topk_matches_oracle(kind, gaps):
    rng = np.random.default_rng([len(kind), *gaps])
    for t in range(6):
        seqtype, q, s = _case(rng, kind)
        alphabet = DNA if seqtype == "dna" else PROTEIN
        mat = get_scoring(seqtype).matrix
        qc, sc = _codes(q, alphabet), _codes(s, alphabet)
        want = oracle.waterman_eggert(qc.tolist(), sc.tolist(), mat, *gaps, k=7, min_score=2)
        plan = PLANS[t % len(PLANS)]
        got = local_topk_codes(qc, sc, mat, *gaps, k=7, min_score=2, plan=plan)
        assert _hits(got) == want, (q, s, plan)
        hits = local_topk(q.lower(), s, k=7, min_score=2, gap_open=gaps[0], gap_extend=gaps[1],
                          seqtype=seqtype, plan=plan)  # fmt: skip
        assert [(h.score, *h.query, *h.subject) for h in hits] == [w[:5] for w in want]
        for h in hits:
            assert h.aligned[0].replace("-", "") == q.lower()[h.query[0] : h.query[1]]
            assert h.aligned[1].replace("-", "") == s[h.subject[0] : h.subject[1]]


def _indel_case(rng, letters, n_max=24):
    """A query (a random prefix, then a core) and a subject holding copies of the core with
    substitutions and many short indels."""
    core = "".join(rng.choice(letters, rng.integers(2, n_max)))
    q = "".join(rng.choice(letters, rng.integers(0, n_max))) + core
    parts = ["".join(rng.choice(letters, rng.integers(0, 10)))]
    for _ in range(rng.integers(1, 4)):
        copy = []
        for c in core:
            r = rng.random()
            if r < 0.15:
                continue  # deletion
            copy.append(c if r < 0.8 else rng.choice(letters))
            if rng.random() < 0.2:
                copy.append("".join(rng.choice(letters, rng.integers(1, 4))))  # insertion
        parts += ["".join(copy), "".join(rng.choice(letters, rng.integers(0, 10)))]
    return q, "".join(parts)


GAP_HEAVY = [(20, 1), (1, 1), (2, 1), (1, 3), (4, 0), (0, 2), (6, 2)]


@pytest.mark.parametrize("gaps", GAP_HEAVY, ids=lambda g: f"go{g[0]}-ge{g[1]}")
@pytest.mark.parametrize("seqtype", ["dna", "protein"])
def test_rect_first_row_bound_holds_on_oracle_hits(gaps, seqtype):
    """Every oracle hit starts at or below the rectangle's top row, and the cut rectangle traces
    back the oracle's alignment; gap-heavy alignments, ties (DNA repeats), large gap opens,
    ``go < ge`` and zero costs (no cut) included."""
    rng = np.random.default_rng([len(seqtype), *gaps])
    letters = list("ACGT" if seqtype == "dna" else AMINO[:8])
    mat = get_scoring(seqtype).matrix
    cut = 0
    for _ in range(8):
        q, s = _indel_case(rng, letters)
        alphabet = DNA if seqtype == "dna" else PROTEIN
        qc, sc = _codes(q, alphabet).numpy(), _codes(s, alphabet).numpy()
        col_max = mat[np.unique(qc)].max(0)
        forbidden = set()
        for score, i0, i_end, j0, j_end, ops in oracle.waterman_eggert(
            qc.tolist(), sc.tolist(), mat, *gaps, k=6
        ):
            r0 = cpu_strip.rect_first_row(score, i_end, sc[j0:j_end], col_max, *gaps)
            assert 1 <= r0 <= i0 + 1, (q, s, score, i0, r0)
            cut += r0 > 1
            keys = sorted(forbidden)
            fptr = np.searchsorted([i for i, _ in keys], np.arange(len(qc) + 2)).astype(np.int32)
            fcol = np.array([j for _, j in keys], np.int32)
            got = cpu_strip.rect_traceback(
                qc[r0 - 1 : i_end], sc[j0:j_end], j0 + 1, mat, *gaps, fptr, fcol, 1 << 20, r0
            )
            assert (got[0].tolist(), *got[1:]) == (ops, i0, j0, score), (q, s, r0)
            a, b = i0, j0
            for op in ops:
                a, b = a + (op != oracle.LEFT), b + (op != oracle.UP)
                if op == oracle.MATCH:
                    forbidden.add((a, b))
        want = oracle.waterman_eggert(qc.tolist(), sc.tolist(), mat, *gaps, k=6)
        got = local_topk_codes(torch.from_numpy(qc), torch.from_numpy(sc), mat, *gaps, k=6)
        assert _hits(got) == want, (q, s)
    assert cut or min(gaps) == 0 or max(gaps) <= 2  # the bound cuts rows unless gaps are cheap


def test_rect_first_row_cuts_long_queries():
    """A short hit at the end of a long query needs only a few hundred rows, not all."""
    rng = np.random.default_rng(2)
    q = "".join(rng.choice(list(AMINO), 3000))
    s = "".join(rng.choice(list(AMINO), 400)) + q[2800:2900] + "".join(rng.choice(list(AMINO), 99))
    mat = get_scoring("protein").matrix
    qc, sc = _codes(q, PROTEIN).numpy(), _codes(s, PROTEIN).numpy()
    (hit,) = _hits(local_topk_codes(torch.from_numpy(qc), torch.from_numpy(sc), mat, 10, 1, k=1))
    score, i0, i_end, j0, j_end, _ = hit
    r0 = cpu_strip.rect_first_row(score, i_end, sc[j0:j_end], mat[np.unique(qc)].max(0), 10, 1)
    assert 2000 < r0 <= i0 + 1 and i0 <= 2800 < 2900 <= i_end


def _forbidden_pairs(hits):
    pairs = []
    for _, i0, _, j0, _, ops in hits:
        a, b = i0, j0
        for op in ops:
            a, b = a + (op != oracle.LEFT), b + (op != oracle.UP)
            if op == oracle.MATCH:
                pairs.append((a, b))
    return pairs


@pytest.mark.parametrize("fused", [1, 0], ids=["fused", "two-launches"])
@pytest.mark.parametrize("sequential", [True, False], ids=["sequential", "ranges"])
@pytest.mark.parametrize("plan", PLANS[:5], ids=lambda p: repr(p))
def test_recompute_equals_a_fresh_fill(sequential, plan, fused, monkeypatch):
    """After each hit, the recomputed store equals a first pass with the same forbidden pairs,
    for the CPU's strip-by-strip refill and for the ranges cut into segments (the GPU's), their
    warm-ups in the same launch through a buffer or in a launch before (``FUSED_CHUNKS``)."""
    monkeypatch.setattr(local_strips, "FUSED_CHUNKS", fused)
    rng = np.random.default_rng(len(repr(plan)))
    unit = "".join(rng.choice(list("ACGT"), 12))
    q = _codes(unit + "GATTACA", DNA)
    s = _codes("".join(rng.choice(list("ACGT"), 5)).join([unit, unit[::-1], unit, unit[:7]]), DNA)
    mat = torch.from_numpy(get_scoring("dna").matrix.copy())
    resolved, chunk = plan_layout(len(q), len(s), plan, "cpu", "cpu", 1 << 30)
    dp = StripDP(q, s, mat, 3, 1, resolved, chunk, "cpu", sequential=sequential)
    dp.first_pass()
    for score, i0, i_end, j0, j_end, ops in oracle.waterman_eggert(
        q.tolist(), s.tolist(), mat.numpy(), 3, 1, k=5
    ):
        assert dp.top() == (score, i_end, j_end, j0 + 1)
        i, j = np.array(_forbidden_pairs([(score, i0, i_end, j0, j_end, ops)])).T
        dp.forbid(i, j)
        dp.recompute(j0 + 1, j_end, score)
        fresh = StripDP(q, s, mat, 3, 1, resolved, chunk, "cpu")
        fresh.forbid(dp.keys // (len(s) + 1), dp.keys % (len(s) + 1))
        fresh.first_pass()
        assert torch.equal(dp.ckpt, fresh.ckpt) and torch.equal(dp.best, fresh.best)
        assert (dp.best_host == fresh.best.numpy()).all()


def _fake_triton(monkeypatch):
    """Route the Triton backend to the CPU kernel (its ranges-and-segments recomputation)."""
    module = types.SimpleNamespace(strip_fill=cpu_strip.strip_fill)
    monkeypatch.setitem(sys.modules, "torchmsa._triton.strip", module)
    monkeypatch.setattr(sys.modules["torchmsa._triton"], "strip", module, raising=False)
    monkeypatch.setenv("TRITON_INTERPRET", "1")


@pytest.mark.parametrize("fused", [1, 0], ids=["fused", "two-launches"])
@pytest.mark.parametrize("gaps", [(10, 1), (1, 1), (2, 2)], ids=lambda g: f"go{g[0]}-ge{g[1]}")
def test_ranges_recomputation_matches_oracle(monkeypatch, gaps, fused):
    _fake_triton(monkeypatch)
    monkeypatch.setattr(local_strips, "FUSED_CHUNKS", fused)
    rng = np.random.default_rng(list(gaps))
    mat = get_scoring("dna").matrix
    for t in range(6):
        q, s = _indel_case(rng, list("ACGT"))
        qc, sc = _codes(q, DNA), _codes(s, DNA)
        want = oracle.waterman_eggert(qc.tolist(), sc.tolist(), mat, *gaps, k=6)
        plan = [*PLANS[:5], LocalPlan(strip_width=2, segments=16, warmup=1)][t]
        got = local_topk_codes(qc, sc, mat, *gaps, k=6, backend="triton", plan=plan)
        assert _hits(got) == want, (q, s, plan)


@pytest.mark.interpreter
def test_triton_driver_recomputes_in_ranges(device):
    """``local_topk_codes`` on the Triton backend (the interpreter without a GPU): strips of 2
    columns, two segments with one-strip warm-ups, so the first pass needs a fix-up and the
    recomputation after hit 1 is a range cut into segments; the hits are the oracle's."""
    q, s = _codes("ACGTTGCA", DNA), _codes("TACGTTGCAGGACGATGCA", DNA)
    mat = get_scoring("dna").matrix
    want = oracle.waterman_eggert(q.tolist(), s.tolist(), mat, 3, 1, k=2)
    plan = LocalPlan(strip_width=2, segments=2, warmup=1)
    got = local_topk_codes(q.to(device), s.to(device), mat, 3, 1, k=2, backend="triton", plan=plan)
    assert _hits(got) == want and got.refilled >= 10  # the first pass's fix-up + the range


# ---- (4) hit 1 is pairwise_align(mode="local") ----------------------------------------------


@pytest.mark.parametrize("seqtype", ["protein", "dna"])
def test_first_hit_is_pairwise_local(seqtype):
    rng = np.random.default_rng(3 if seqtype == "dna" else 4)
    letters = list("ACGT" if seqtype == "dna" else AMINO)
    for t in range(4):
        q = "".join(rng.choice(letters, rng.integers(5, 60)))
        s = "".join(rng.choice(letters, rng.integers(200, 3000)))
        at = int(rng.integers(0, len(s)))
        s = s[:at] + "".join(c for c in q if rng.random() > 0.1) + s[at:]
        plan = LocalPlan(strip_width=int(rng.integers(16, 300)), segments=int(rng.integers(1, 6)))
        (hit,) = local_topk(q, s, k=1, seqtype=seqtype, plan=plan if t % 2 else None)
        ref = torchmsa.pairwise_align(q, s, mode="local", seqtype=seqtype)
        assert (hit.score, hit.aligned, hit.query, hit.subject) == (
            ref.score, ref.aligned, ref.a_range, ref.b_range
        )  # fmt: skip


# ---- (5) errors -----------------------------------------------------------------------------


def test_errors():
    with pytest.raises(InvalidCharacterError, match=r"'subject'.*'!' at position 4"):
        local_topk("ACGT", "ACG!T")
    with pytest.raises(InvalidCharacterError, match=r"'query'.*'J' at position 2"):
        local_topk("AJCGT", "ACGT", seqtype="dna")
    for kwargs, name in [({"k": 0}, "`k`"), ({"k": True}, "`k`"), ({"min_score": 0}, "`min_score`"),
                         ({"k": 2.5}, "`k`"), ({"plan": 3}, "`plan`")]:  # fmt: skip
        with pytest.raises(ArgumentError, match=name):
            local_topk("ACGT", "ACGT", **kwargs)
    with pytest.raises(ArgumentError, match="LocalPlan.strip_width"):
        LocalPlan(strip_width=0)
    with pytest.raises(EmptyInputError, match="subject"):
        local_topk("ACGT", "--")
    with pytest.raises(EmptyInputError, match="query"):
        local_topk_codes(torch.zeros(0, dtype=torch.uint8), _codes("AC", DNA), SIMPLE, 2, 1)
    with pytest.raises(ArgumentError, match=r"`subject\[1\]` is 7"):
        local_topk_codes(_codes("AC", DNA), torch.tensor([0, 7], dtype=torch.uint8), SIMPLE, 2, 1)
    with pytest.raises(ArgumentError, match="`subject` is a bytes"):
        local_topk("ACGT", b"ACGT")  # type: ignore[arg-type]
    with pytest.raises(ResourceError, match=r"300-residue query, 100000-residue subject") as exc:
        local_topk("A" * 300, "C" * 100_000, budget=10_000, plan=LocalPlan(strip_width=64))
    assert exc.value.available == 10_000 and exc.value.needed > 10_000
    z = np.zeros
    args = [
        z(3, np.uint8),
        z(8, np.uint8),
        SIMPLE,
        2,
        1,
        4,
        np.array([0], np.int32),
        np.array([2], np.int32),
        z((1, 4, 4), np.int32),
        np.array([1], np.int64),
        z(5, np.int32),
        z(0, np.int32),
        z((2, 4, 4), np.int32),
        z((2, 4), np.int32),
    ]
    with pytest.raises(ArgumentError, match="`slot`"):
        cpu_strip.strip_fill(*args)
    args[7] = np.array([3], np.int32)
    with pytest.raises(ArgumentError, match="Invalid segments"):
        cpu_strip.strip_fill(*args)
    with pytest.raises(ResourceError, match=r"31 query rows x 41 subject columns"):
        cpu_strip.rect_traceback(
            np.zeros(30, np.uint8), np.zeros(40, np.uint8), 1, SIMPLE, 2, 1,
            np.zeros(32, np.int32), np.zeros(0, np.int32), 1000,
        )  # fmt: skip


def test_budget_widens_strips():
    rng = np.random.default_rng(11)
    q = _codes("".join(rng.choice(list(AMINO), 50)), PROTEIN)
    s = _codes("".join(rng.choice(list(AMINO), 20_000)), PROTEIN)
    mat = get_scoring("protein").matrix
    roomy = local_topk_codes(q, s, mat, 10, 1, k=4)
    tight = local_topk_codes(q, s, mat, 10, 1, k=4, budget=100_000)
    assert roomy.plan.strip_width == 256 < tight.plan.strip_width
    assert _hits(tight) == _hits(roomy)


def test_single_residues():
    assert local_topk("W", "W") == [torchmsa.LocalHit(11, (0, 1), (0, 1), ("W", "W"))]
    assert local_topk("W", "A") == []


def test_no_hit_and_doctest():
    assert local_topk("AAAA", "CCCC", seqtype="dna") == []
    assert local_topk("ACGT", "ACGT", min_score=21, seqtype="dna") == []
    result = doctest.testmod(ops_local)
    assert result.attempted and not result.failed


def test_triton_dispatch_gets_tensors_on_the_codes_device(monkeypatch):
    """The dispatcher hands the Triton launcher torch tensors on the codes' device (a stand-in
    launcher here, which runs the CPU kernel)."""
    seen = set()

    def fake(*args):
        seen.update(str(a.device) for a in args if isinstance(a, torch.Tensor))
        assert sum(isinstance(a, torch.Tensor) for a in args) == 11
        cpu_strip.strip_fill(*args)

    module = types.SimpleNamespace(strip_fill=fake)
    monkeypatch.setitem(sys.modules, "torchmsa._triton.strip", module)
    monkeypatch.setattr(sys.modules["torchmsa._triton"], "strip", module, raising=False)
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    q, s = _codes("HEAGAWGHEE", PROTEIN), _codes("PAWHEAEPAWHEAE", PROTEIN)
    mat = get_scoring("protein").matrix
    got = local_topk_codes(q, s, mat, 10, 1, k=3, backend="triton", plan=LocalPlan(strip_width=4))
    assert _hits(got) == _hits(local_topk_codes(q, s, mat, 10, 1, k=3, backend="cpu"))
    assert seen == {"cpu"}


# ---- (6) the command line ---------------------------------------------------------------------


def test_cli_local(tmp_path, capsys):
    query = tmp_path / "q.fasta"
    query.write_text(">q1 first\nACGTTGCA\n>q2\nGGGCCCAT\n")
    subject = tmp_path / "s.fasta.gz"
    rng = np.random.default_rng(5)
    text = "".join(rng.choice(list("ACGT"), 400))
    text = text[:100] + "ACGTTGCA" + text[100:300] + "acgatgca" + text[300:]
    with gzip.open(subject, "wt") as fh:
        fh.write(
            ">chr1 long\n" + "\n".join(text[i : i + 60] for i in range(0, len(text), 60)) + "\n"
        )
    out = tmp_path / "hits.tsv"
    assert main(["local", str(query), str(subject), "-k", "3", "-o", str(out)]) == 0
    lines = out.read_text().splitlines()
    assert lines[0].split("\t") == [
        "query", "subject", "rank", "score", "qstart", "qend", "sstart", "send", "query_row",
        "subject_row",
    ]  # fmt: skip
    rows = [line.split("\t") for line in lines[1:]]
    assert [r[:3] for r in rows] == [[q, "chr1", str(k)] for q in ("q1", "q2") for k in (1, 2, 3)]
    want = local_topk("ACGTTGCA", text, k=3)
    for r, h in zip(rows[:3], want):
        assert r[3:] == [str(h.score), str(h.query[0] + 1), str(h.query[1]),
                         str(h.subject[0] + 1), str(h.subject[1]), *h.aligned]  # fmt: skip
    assert rows[0][3:8] == ["40", "1", "8", "101", "108"]
    assert rows[1][6:8] == ["309", "316"] and rows[1][9] == "acgatgca"
    fasta = tmp_path / "hits.fasta"
    assert main(["local", str(query), str(subject), "-k", "1", "--format", "fasta",
                 "-o", str(fasta)]) == 0  # fmt: skip
    assert fasta.read_text().startswith(">q1/1-8 rank=1 score=40 chr1/101-108\nACGTTGCA\n")
    bad = tmp_path / "bad.fasta"
    bad.write_text(">b\nAC!GT\n")
    capsys.readouterr()
    assert main(["local", str(bad), str(subject)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "'b'" in err[0] and "position 3" in err[0]
    assert main(["local", str(query), str(subject), "-k", "0"]) == 2


def test_strip_width_keeps_checkpoints_within_a_quarter_of_the_budget():
    from torchmsa.cpu.strip import workers
    from torchmsa.ops.local_strips import CKPT_SHARE, _need

    n, m, w = 1000, 10**6, workers()
    plan = LocalPlan()
    for available in (1 << 32, 1 << 30, 1 << 28):
        resolved, _ = plan_layout(n, m, plan, "cpu", "cpu", available)
        W = resolved.strip_width
        need = _need(n, m, plan, W, w, 0)[0]
        narrower = _need(n, m, plan, W // 2, w, 0)[0] if W > 256 else None
        if need <= available * CKPT_SHARE:  # the narrowest width within the quarter
            assert narrower is None or narrower > available * CKPT_SHARE
        else:  # none within the quarter: the narrowest that fits at all
            assert need <= available and (narrower is None or narrower > available)
    # a budget that holds 256-column strips only in full still takes them
    full = _need(n, m, plan, 256, w, 0)[0]
    assert plan_layout(n, m, plan, "cpu", "cpu", full)[0].strip_width > 256
    assert plan_layout(n, m, plan, "cpu", "cpu", 4 * full)[0].strip_width == 256
