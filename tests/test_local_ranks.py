"""Best-K local alignment with the subject's strips shared between ranks (decision 0059): ranks
simulated by threads that exchange through a barrier, against the plain oracle and against
one process, with strips so narrow that hits cross the borders (the fallback to rank 0) and
far enough apart that they do not (the merge); the CLI under torchrun is in
``test_distributed.py``."""

from __future__ import annotations

import threading

import local_oracle as oracle
import numpy as np
import pytest
import torch
from test_local_topk import _codes, _hits

from torchmsa.alphabet import DNA, PROTEIN
from torchmsa.errors import InvalidCharacterError, ResourceError
from torchmsa.ops import local as ops_local
from torchmsa.ops import local_hits
from torchmsa.ops.local import LocalPlan, local_topk, local_topk_codes
from torchmsa.ops.local_strips import StripDP, plan_layout
from torchmsa.scoring import get_scoring


class Meeting:
    """Where ``size`` threads exchange objects, round after round; :meth:`abort` (a rank that
    failed) breaks the rounds not yet complete."""

    def __init__(self, size: int):
        self.size, self.cond = size, threading.Condition()
        self.round, self.boards, self.broken = 0, {}, False

    def gather(self, rank: int, obj):
        with self.cond:
            gen = self.round
            board = self.boards.setdefault(gen, {})
            board[rank] = obj
            if len(board) == self.size:
                self.round += 1
                self.cond.notify_all()
            elif not self.cond.wait_for(lambda: self.round > gen or self.broken, timeout=120):
                raise TimeoutError("a rank did not come")
            if self.round == gen:
                raise RuntimeError("another rank failed")
            return [board[r] for r in range(self.size)]

    def abort(self) -> None:
        with self.cond:
            self.broken = True
            self.cond.notify_all()


class ThreadRanks:
    """One rank of ``size`` threads. One rank works at a time (``turn``, given up while it
    waits for the others): numba's parallel kernels take one caller at a time."""

    def __init__(self, rank: int, size: int, meeting: Meeting, turn: threading.Lock):
        self.rank, self.size, self.meeting, self.turn = rank, size, meeting, turn
        self.device = torch.device("cpu")
        self.lines: list[str] = []

    def all_gather(self, obj):
        self.turn.release()
        try:
            return self.meeting.gather(self.rank, obj)
        finally:
            self.turn.acquire()

    def say(self, text: str) -> None:
        self.lines.append(text)


def over_ranks(size: int, call):
    """``call(ranks)`` on ``size`` threads; their results (or errors), in rank order."""
    meeting, turn = Meeting(size), threading.Lock()
    ranks = [ThreadRanks(r, size, meeting, turn) for r in range(size)]
    out: list = [None] * size

    def run(r):
        with turn:
            try:
                out[r] = call(ranks[r])
            except Exception as exc:  # noqa: BLE001 - handed to the test
                out[r] = exc
                meeting.abort()

    threads = [threading.Thread(target=run, args=(r,)) for r in range(size)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out, ranks


def _motif_case(rng, letters, copies, gap=(3, 25), size=(4, 9)):
    """A query motif and a subject of random stretches between mutated copies of it."""
    motif = "".join(rng.choice(letters, rng.integers(*size)))
    parts = []
    for _ in range(copies):
        parts.append("".join(rng.choice(letters, rng.integers(*gap))))
        parts.append("".join(c if rng.random() > 0.2 else rng.choice(letters) for c in motif))
    return motif, "".join(parts) + "".join(rng.choice(letters, rng.integers(0, 10)))


PLANS = [
    LocalPlan(strip_width=1, segments=1, warmup=0),
    LocalPlan(strip_width=2, segments=2, warmup=1),
    LocalPlan(strip_width=3, segments=3, warmup=2, refill=1),
    LocalPlan(strip_width=5, segments=1, warmup=1),
]


@pytest.fixture
def fallbacks(monkeypatch):
    """Counts the jobs that went to rank 0 alone."""
    calls = []
    real = local_hits.topk_one

    def counted(*args):
        calls.append(1)
        return real(*args)

    monkeypatch.setattr(local_hits, "topk_one", counted)
    return calls


@pytest.mark.parametrize("size", [2, 3, 4])
@pytest.mark.parametrize("gaps", [(3, 1), (10, 1), (2, 2)], ids=lambda g: f"go{g[0]}-ge{g[1]}")
def test_ranks_give_the_oracles_hits(size, gaps, fallbacks):
    """Every rank returns the oracle's hits, whether the shares stayed independent (merge) or a
    hit crossed a border (rank 0 alone); across the cases both happen."""
    rng = np.random.default_rng([size, *gaps])
    mat = get_scoring("dna").matrix
    merged = 0
    for t in range(8):
        far = t % 2  # copies far apart: hits rarely reach a border
        spacing, motif = ((250, 400), (10, 16)) if far else ((3, 25), (4, 9))
        q, s = _motif_case(rng, list("ACGT"), int(rng.integers(1, 6)), spacing, motif)
        qc, sc = _codes(q, DNA), _codes(s, DNA)
        want = oracle.waterman_eggert(qc.tolist(), sc.tolist(), mat, *gaps, k=5, min_score=3)
        plan = PLANS[t // 2 % len(PLANS)]
        before = len(fallbacks)
        got, ranks = over_ranks(
            size,
            lambda r, qc=qc, sc=sc, plan=plan: local_topk_codes(
                qc, sc, mat, *gaps, k=5, min_score=3, plan=plan, ranks=r
            ),
        )
        merged += len(fallbacks) == before
        for r, res in enumerate(got):
            assert not isinstance(res, Exception), res
            assert _hits(res) == want, (r, q, s, plan)
    assert 0 < len(fallbacks) and merged > 0  # both paths ran


def test_far_apart_hits_merge_without_rank_0_alone(fallbacks):
    """Protein copies of a motif, one per rank's share and far from the borders: the shares stay
    independent, every rank keeps its own hits, and the result is one process's."""
    rng = np.random.default_rng(7)
    amino = list("ARNDCQEGHILKMFPSTWYV")
    q = "".join(rng.choice(amino, 30))
    s = "".join(
        "".join(rng.choice(amino, 400)) + q + "".join(rng.choice(amino, 400)) for _ in range(4)
    )
    qc, sc = _codes(q, PROTEIN), _codes(s, PROTEIN)
    mat = get_scoring("protein").matrix
    plan = LocalPlan(strip_width=8, segments=2, warmup=4)
    one = local_topk_codes(qc, sc, mat, 10, 1, k=4, plan=plan)
    got, ranks = over_ranks(
        4, lambda r: local_topk_codes(qc, sc, mat, 10, 1, k=4, plan=plan, ranks=r)
    )
    assert not fallbacks
    for res in got:
        assert _hits(res) == _hits(one) and res.score.tolist()[0] > 100
    kept = [
        int(line.split(" of them kept")[0].rsplit(", ", 1)[1]) for r in ranks for line in r.lines
    ]
    assert kept == [1, 1, 1, 1]


@pytest.mark.parametrize("size", [2, 3])
def test_many_hits_come_in_batches_and_equal_one_process(size, fallbacks):
    """Thirty hits of forty far-apart copies: the ranks meet a few times, not once per hit,
    and every rank returns one process's hits, the extra hits a batch found left out."""
    rng = np.random.default_rng(11 + size)
    amino = list("ARNDCQEGHILKMFPSTWYV")
    q = "".join(rng.choice(amino, 24))
    copies = [
        "".join(c if rng.random() > 0.25 else rng.choice(amino) for c in q) for _ in range(40)
    ]
    s = "".join("".join(rng.choice(amino, rng.integers(500, 700))) + c for c in copies)
    qc, sc = _codes(q, PROTEIN), _codes(s, PROTEIN)
    mat = get_scoring("protein").matrix
    plan = LocalPlan(strip_width=16, segments=2, warmup=4)
    one = local_topk_codes(qc, sc, mat, 10, 1, k=30, min_score=20, plan=plan)
    meetings = []
    real = ThreadRanks.all_gather

    def counted(self, obj):
        meetings.append(self.rank)
        return real(self, obj)

    ThreadRanks.all_gather = counted
    try:
        got, _ = over_ranks(
            size,
            lambda r: local_topk_codes(qc, sc, mat, 10, 1, k=30, min_score=20, plan=plan, ranks=r),
        )
    finally:
        ThreadRanks.all_gather = real
    assert not fallbacks and len(one.score) == 30
    for res in got:
        assert not isinstance(res, Exception), res
        assert _hits(res) == _hits(one)
    assert meetings.count(0) < 20  # one meeting a hit would be more than 30 / size + 5


def test_more_ranks_than_strips_and_strings():
    """Ranks without strips still take part; the string API gives one process's hits."""
    mat = get_scoring("dna").matrix
    qc, sc = _codes("ACGTAC", DNA), _codes("TTACGTACGG", DNA)
    plan = LocalPlan(strip_width=4, segments=1, warmup=1)  # 3 strips, 5 ranks
    want = oracle.waterman_eggert(qc.tolist(), sc.tolist(), mat, 3, 1, k=3)
    got, _ = over_ranks(5, lambda r: local_topk_codes(qc, sc, mat, 3, 1, k=3, plan=plan, ranks=r))
    assert all(_hits(res) == want for res in got)
    one = local_topk("ACGTAC", "TTACGTACGG", k=3, gap_open=3, gap_extend=1, plan=plan)
    got, _ = over_ranks(
        2,
        lambda r: local_topk(
            "ACGTAC", "TTACGTACGG", k=3, gap_open=3, gap_extend=1, plan=plan, ranks=r
        ),
    )
    assert got == [one, one]


def test_a_budget_too_small_fails_on_every_rank():
    mat = get_scoring("dna").matrix
    qc, sc = _codes("ACGT" * 50, DNA), _codes("ACGT" * 400, DNA)
    got, _ = over_ranks(2, lambda r: local_topk_codes(qc, sc, mat, 3, 1, budget=1000, ranks=r))
    assert all(isinstance(res, ResourceError) for res in got)


def test_a_share_with_a_given_origin_equals_the_whole():
    """``StripDP`` over strips ``lo .. hi - 1`` from the whole matrix's column before ``lo``
    keeps the whole matrix's checkpoints and best cells, after a recomputation too."""
    rng = np.random.default_rng(3)
    q, s = _motif_case(rng, list("ACGT"), 6)
    qc, sc = _codes(q, DNA), _codes(s, DNA)
    mat = torch.from_numpy(np.array(get_scoring("dna").matrix, np.int32))
    plan, chunk = plan_layout(
        len(q), len(s), LocalPlan(strip_width=3, segments=2, warmup=1), "cpu", "cpu", 1 << 30
    )
    whole = StripDP(qc, sc, mat, 3, 1, plan, chunk, "cpu", sequential=False)
    whole.first_pass()
    lo, hi = 4, whole.S - 3
    part = StripDP(qc, sc, mat, 3, 1, plan, chunk, "cpu", strips=(lo, hi))
    part.warm_origin()
    part.first_pass()
    part.set_origin(whole.ckpt[lo - 1])
    assert (
        torch.equal(part.ckpt, whole.ckpt[lo:hi])
        and (part.best_host == whole.best_host[lo:hi]).all()
    )
    i, j = np.array([2, 3]), np.array([lo * 3 + 2, lo * 3 + 3])
    for dp in (whole, part):
        dp.forbid(i, j)
        dp.recompute(int(j[0]), int(j[1]), 10)
    assert (
        torch.equal(part.ckpt, whole.ckpt[lo:hi])
        and (part.best_host == whole.best_host[lo:hi]).all()
    )


def test_each_rank_encodes_only_what_its_strips_reach(monkeypatch, fallbacks):
    """With margins of a few columns, each rank's subject codes are zeros outside its share and
    warm-up: the hits are still one process's, through the merge and through rank 0 alone
    (which encodes the whole subject); an invalid character in one rank's share is raised on
    every rank as one process names it."""
    monkeypatch.setattr(ops_local, "W_MAX", 8)
    monkeypatch.setattr(ops_local, "WARMUP_COLUMNS", 4)
    rng = np.random.default_rng(11)
    amino = list("ARNDCQEGHILKMFPSTWYV")
    q = "".join(rng.choice(amino, 25))
    far = "".join(
        "".join(rng.choice(amino, 300)) + q + "".join(rng.choice(amino, 300)) for _ in range(4)
    )
    near = "".join(rng.choice(amino, 590)) + q + "".join(rng.choice(amino, 590))  # on the border
    seen = []
    real = ops_local._subject_share

    def spy(*args):
        codes, whole = real(*args)
        seen.append(int((codes == 0).sum()))
        return codes, whole

    monkeypatch.setattr(ops_local, "_subject_share", spy)
    plan = LocalPlan(strip_width=8, segments=2, warmup=1)
    for subject, alone in ((far, 0), (near, 1)):
        one = local_topk(q, subject, k=4, plan=plan, seqtype="protein")
        before = len(fallbacks)
        got, _ = over_ranks(
            2, lambda r, s=subject: local_topk(q, s, k=4, plan=plan, seqtype="protein", ranks=r)
        )
        assert got == [one, one] and len(fallbacks) - before == alone
    assert min(seen) > 400  # each rank left most of the subject unencoded
    bad = far[:900] + "J1" + far[902:]
    with pytest.raises(InvalidCharacterError) as want:
        local_topk(q, bad, k=4, plan=plan, seqtype="protein")
    got, _ = over_ranks(2, lambda r: local_topk(q, bad, k=4, plan=plan, seqtype="protein", ranks=r))
    assert all(isinstance(g, InvalidCharacterError) and str(g) == str(want.value) for g in got)
