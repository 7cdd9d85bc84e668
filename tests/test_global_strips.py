"""One long global pair in strips (decision 0060): the strips' path against ``cpu/dp.py``'s
full-matrix global alignment (score and ops, tie rule included) over many widths, gap costs
and tie-heavy alphabets; the Triton fill and crossings against their CPU twins in the
interpreter; ``pairwise_align`` on a GPU through the strips against the CPU."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import torchmsa
from torchmsa.constants import GLOBAL
from torchmsa.cpu import dp as cpu_dp
from torchmsa.cpu import strip_global as cpu_global
from torchmsa.errors import ResourceError
from torchmsa.ops import global_strips
from torchmsa.ops.global_strips import global_pair, strip_width
from torchmsa.scoring import get_scoring

MAT = np.array(get_scoring("protein").matrix, np.int32)
GAPS = [(10, 1), (3, 1), (2, 2), (5, 0), (0, 0), (1, 3)]


def _full(a: np.ndarray, b: np.ndarray, go: int, ge: int):
    t = torch.from_numpy
    info, ops = cpu_dp.pairwise_align(
        t(a)[None], torch.tensor([len(a)], dtype=torch.int32), t(b)[None],
        torch.tensor([len(b)], dtype=torch.int32), t(MAT), go, ge, GLOBAL,
    )  # fmt: skip
    return int(info[0, 0]), ops[0, : int(info[0, 1])].numpy()


def _pair(rng, t):
    n, m = (int(x) for x in rng.integers(1, 45, 2))
    if t % 3 == 0:  # related: a copy with an insertion
        a = rng.integers(0, 20, n).astype(np.uint8)
        cut = int(rng.integers(0, n + 1))
        ins = rng.integers(0, 20, int(rng.integers(0, 6))).astype(np.uint8)
        return a, np.concatenate([a[:cut], ins, a[cut:]])
    letters = 2 if t % 3 == 1 else 4  # few letters: many ties
    return (
        rng.integers(0, letters, n).astype(np.uint8),
        rng.integers(0, letters, m).astype(np.uint8),
    )


@pytest.mark.parametrize("gaps", GAPS, ids=lambda g: f"go{g[0]}-ge{g[1]}")
def test_strips_give_the_full_matrix_alignment(gaps):
    rng = np.random.default_rng(list(gaps))
    for t in range(60):
        a, b = _pair(rng, t)
        W = int(rng.integers(1, 10))
        score, ops = global_pair(torch.from_numpy(a), torch.from_numpy(b), MAT, *gaps, 1 << 30, W)
        want_score, want = _full(a, b, *gaps)
        assert score == want_score and np.array_equal(ops, want), (a.tolist(), b.tolist(), W)


def test_crossings_follow_the_codes_and_a_broken_join_is_an_error():
    a = np.array([0, 1, 2, 3, 4, 5], np.uint8)
    b = np.array([0, 1, 9, 2, 3, 4, 5], np.uint8)
    n, W = len(a), 2
    S = -(-len(b) // W)
    ckpt = np.empty((S, 4, n + 1), np.int32)
    col0 = cpu_global.first_column(n, 10, 1)
    one = np.zeros(1, np.int32)
    cpu_global.global_strip_fill(
        a, b, MAT, 10, 1, W, one, one + S, col0[None], np.zeros(1, np.int64), ckpt
    )
    cross = cpu_global.crossings(np.ascontiguousarray(ckpt[:, 2:4]), n)
    assert cross[-1].tolist() == [n, 0] and cross[0].tolist() == [0, 0]
    assert (np.diff(cross[:, 0]) >= 0).all()  # rows never go back
    bad = cross.copy()
    bad[1, 0] += 1  # a crossing the path does not take
    off = np.concatenate([[0], np.cumsum(bad[1:, 0] - bad[:-1, 0] + 1)])
    h = np.zeros(off[-1], np.int32)
    with pytest.raises(RuntimeError, match="does not join its crossings"):
        cpu_global.strip_tracebacks(a, b, MAT, 10, 1, W, bad, h, h, off)


def test_strip_width_grows_to_fit_and_says_when_nothing_fits():
    assert strip_width(1000, 10**6, 1 << 40) == global_strips.STRIP_WIDTH
    small = strip_width(1000, 10**6, 20 * 10**6)
    assert small > global_strips.STRIP_WIDTH and -(-(10**6) // small) * 16 * 1001 <= 20 * 10**6
    with pytest.raises(ResourceError, match="global alignment of 1000 x 1000000"):
        strip_width(1000, 10**6, 1000)


@pytest.mark.interpreter
@pytest.mark.parametrize("segments", [1, 2])
def test_triton_global_fill_and_crossings_equal_the_cpu_twin(segments, device):
    from torchmsa._triton import strip as triton_strip

    rng = np.random.default_rng(segments)
    for t, (n, m, W, gaps) in enumerate(
        [(9, 13, 3, (3, 1)), (20, 11, 4, (2, 2)), (1, 6, 2, (0, 0))]
    ):
        a = rng.integers(0, 4, n).astype(np.uint8)
        b = rng.integers(0, 4, m).astype(np.uint8)
        S = -(-m // W)
        want = np.empty((S, 4, n + 1), np.int32)
        col0 = cpu_global.first_column(n, *gaps)
        one = np.zeros(1, np.int32)
        cpu_global.global_strip_fill(
            a, b, MAT, *gaps, W, one, one + S, col0[None], np.zeros(1, np.int64), want
        )
        per = -(-S // segments)
        lo = np.arange(0, S, per, dtype=np.int32)
        hi = np.minimum(lo + per, S).astype(np.int32)
        col_in = np.stack([col0 if k == 0 else want[k - 1] for k in lo])
        got = torch.zeros((S, 4, n + 1), dtype=torch.int32, device=device)

        def t_(x):
            return torch.from_numpy(x).to(device)

        triton_strip.global_strip_fill(
            t_(a), t_(b), t_(MAT), *gaps, W, t_(lo), t_(hi), t_(col_in),
            t_(lo.astype(np.int64)), got, shape=(4, 2, 1), pipe=t % 2 == 0,
        )  # fmt: skip
        assert np.array_equal(got.cpu().numpy(), want), (t, segments)
        cross = triton_strip.crossings(got, n).cpu().numpy()
        assert np.array_equal(cross, cpu_global.crossings(np.ascontiguousarray(want[:, 2:4]), n))
        if segments == 1:
            score, ops = global_pair(t_(a), t_(b), MAT, *gaps, 1 << 30, W, backend="triton")
            assert (score, ops.tolist()) == (lambda s, o: (s, o.tolist()))(*_full(a, b, *gaps))


def test_pairwise_align_takes_the_strips_for_long_global_pairs(monkeypatch):
    """The routing of ``pairwise_align_codes`` and ``pairwise_score_codes`` on the Triton
    backend, with the batched kernel and the strips both on the CPU: long pairs go through the
    strips, the rest through the batch, each in its place."""
    calls = []

    def batched(ca, la, cb, lb, *rest, budget):
        calls.append(la.tolist())
        return cpu_dp.pairwise_align(ca, la, cb, lb, *rest)

    monkeypatch.setattr(global_strips, "LONG_GLOBAL_CELLS", 200)
    import torchmsa.ops.pairwise as pw

    rng = np.random.default_rng(4)
    lens = [5, 30, 8, 25]
    codes = torch.from_numpy(rng.integers(0, 20, (4, 30)).astype(np.uint8))
    la = torch.tensor(lens, dtype=torch.int32)
    args = (codes, la, codes.flip(0), la.flip(0), torch.from_numpy(MAT), 10, 1, GLOBAL)
    long = pw._long_global(la, la.flip(0), GLOBAL, sms=132)
    sizes = np.stack([la.numpy(), la.flip(0).numpy()])  # the lengths as the host has them
    assert pw._long_global(la, la.flip(0), GLOBAL, sms=132, sizes=sizes).tolist() == [1, 2]
    assert long.tolist() == [1, 2]
    info, ops = pw._with_long_global(args, long, batched, 1 << 30)
    want_info, want_ops = cpu_dp.pairwise_align(*args)
    assert calls == [[5, 25]]  # 5 x 25 and 25 x 5 batched; 30 x 8 and 8 x 30 in strips
    assert torch.equal(info, want_info) and torch.equal(ops, want_ops)

    def batched_scores(ca, la, cb, lb, *rest, budget):
        calls.append(la.tolist())
        return cpu_dp.pairwise_score(ca, la, cb, lb, *rest)

    scores = pw._scores_with_long_global(args, long, batched_scores, 1 << 30)
    assert calls[-1] == [5, 25] and torch.equal(scores, cpu_dp.pairwise_score(*args))
    # many long pairs: the batched kernel fills the GPU better than one pair at a time
    assert pw._long_global(la, la.flip(0), GLOBAL, sms=4) is None


@pytest.mark.gpu
def test_long_global_pair_on_the_gpu_equals_the_cpu():
    rng = np.random.default_rng(9)
    amino = np.array(list("ARNDCQEGHILKMFPSTWYV"))
    a = "".join(rng.choice(amino, 17000))
    b = list(a)
    for _ in range(300):  # substitutions and small indels
        k = int(rng.integers(0, len(b)))
        b[k] = str(rng.choice(amino)) if rng.random() < 0.7 else ""
    b = "".join(b)
    gpu = torchmsa.pairwise_align(a, b, mode="global", device="cuda")
    cpu = torchmsa.pairwise_align(a, b, mode="global", device="cpu")
    assert gpu == cpu
    score = torchmsa.pairwise_align(a, b, mode="global", device="cuda", traceback=False).score
    assert score == cpu.score
