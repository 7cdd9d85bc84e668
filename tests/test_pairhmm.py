"""Posterior match probabilities of the pair HMM (:mod:`torchmsa.cpu.pairhmm`) against plain
Python forward-backward oracles (log space, and exact fractions for tiny cases), and the
library entries built on them (:func:`torchmsa.consistency.posterior.posterior_entries`):
the oracle's posteriors quantised, in order, the same on every thread count."""

from __future__ import annotations

import math
from fractions import Fraction

import numba
import numpy as np
import pytest
import torch

from torchmsa.consistency.posterior import blosum_odds, posterior_entries
from torchmsa.cpu import pairhmm, twins
from torchmsa.errors import ArgumentError
from torchmsa.scoring import get_scoring
from torchmsa.sequences import SequenceBatch

AMINO = "ARNDCQEGHILKMFPSTWYV"  # codes 0 .. 19 of the protein alphabet
NEG = -math.inf


def _matrix() -> np.ndarray:
    return get_scoring("protein", "BLOSUM62", 11, 1).matrix


def _odds() -> np.ndarray:
    return blosum_odds(_matrix())


# ---------------------------------------------------------------- oracles


def _lse(*vals: float) -> float:
    top = max(vals)
    if top == NEG:
        return NEG
    return top + math.log(sum(math.exp(v - top) for v in vals))


def _ln(v: float) -> float:
    return math.log(v) if v > 0 else NEG


def oracle_log(x, y, odds, d: float, e: float) -> list[list[float]]:
    """P(i ~ j) by the module's recurrences in log space, nested loops."""
    n, m = len(x), len(y)
    lo = [[_ln(float(v)) for v in row] for row in odds]
    l_mm, l_gm, l_d, l_e = _ln(1 - 2 * d), _ln(1 - e), _ln(d), _ln(e)
    fm = [[NEG] * (m + 1) for _ in range(n + 1)]
    fx = [[NEG] * (m + 1) for _ in range(n + 1)]
    fy = [[NEG] * (m + 1) for _ in range(n + 1)]
    fm[0][0] = 0.0  # the begin state, an M at (0, 0)
    for i in range(n + 1):
        for j in range(m + 1):
            if i > 0 and j > 0:
                fm[i][j] = lo[x[i - 1]][y[j - 1]] + _lse(
                    l_mm + fm[i - 1][j - 1], l_gm + fx[i - 1][j - 1], l_gm + fy[i - 1][j - 1]
                )
            if i > 0:
                fx[i][j] = _lse(l_d + fm[i - 1][j], l_e + fx[i - 1][j])
            if j > 0:
                fy[i][j] = _lse(l_d + fm[i][j - 1], l_e + fy[i][j - 1])
    log_z = _lse(fm[n][m], fx[n][m], fy[n][m])
    bm = [[NEG] * (m + 2) for _ in range(n + 2)]
    bx = [[NEG] * (m + 2) for _ in range(n + 2)]
    by = [[NEG] * (m + 2) for _ in range(n + 2)]
    for i in range(n, -1, -1):
        for j in range(m, -1, -1):
            if i == n and j == m:
                bm[i][j] = bx[i][j] = by[i][j] = 0.0
                continue
            dm = lo[x[i]][y[j]] + bm[i + 1][j + 1] if i < n and j < m else NEG
            bm[i][j] = _lse(l_mm + dm, l_d + bx[i + 1][j], l_d + by[i][j + 1])
            bx[i][j] = _lse(l_gm + dm, l_e + bx[i + 1][j])
            by[i][j] = _lse(l_gm + dm, l_e + by[i][j + 1])
    return [
        [math.exp(fm[i][j] + bm[i][j] - log_z) for j in range(1, m + 1)] for i in range(1, n + 1)
    ]


def oracle_exact(x, y, odds, d: Fraction, e: Fraction) -> list[list[Fraction]]:
    """P(i ~ j) in exact fractions (``odds`` of Fractions), the same recurrences."""
    n, m = len(x), len(y)
    zero = Fraction(0)
    fm = [[zero] * (m + 1) for _ in range(n + 1)]
    fx = [[zero] * (m + 1) for _ in range(n + 1)]
    fy = [[zero] * (m + 1) for _ in range(n + 1)]
    fm[0][0] = Fraction(1)
    for i in range(n + 1):
        for j in range(m + 1):
            if i > 0 and j > 0:
                fm[i][j] = odds[x[i - 1]][y[j - 1]] * (
                    (1 - 2 * d) * fm[i - 1][j - 1] + (1 - e) * (fx[i - 1][j - 1] + fy[i - 1][j - 1])
                )
            if i > 0:
                fx[i][j] = d * fm[i - 1][j] + e * fx[i - 1][j]
            if j > 0:
                fy[i][j] = d * fm[i][j - 1] + e * fy[i][j - 1]
    z = fm[n][m] + fx[n][m] + fy[n][m]
    bm = [[zero] * (m + 2) for _ in range(n + 2)]
    bx = [[zero] * (m + 2) for _ in range(n + 2)]
    by = [[zero] * (m + 2) for _ in range(n + 2)]
    for i in range(n, -1, -1):
        for j in range(m, -1, -1):
            if i == n and j == m:
                bm[i][j] = bx[i][j] = by[i][j] = Fraction(1)
                continue
            dm = odds[x[i]][y[j]] * bm[i + 1][j + 1] if i < n and j < m else zero
            bm[i][j] = (1 - 2 * d) * dm + d * (bx[i + 1][j] + by[i][j + 1])
            bx[i][j] = (1 - e) * dm + e * bx[i + 1][j]
            by[i][j] = (1 - e) * dm + e * by[i][j + 1]
    return [[fm[i][j] * bm[i][j] / z for j in range(1, m + 1)] for i in range(1, n + 1)]


def _assert_close(got: np.ndarray, want, rel: float) -> None:
    want = np.asarray(want, dtype=np.float64)
    assert got.shape == want.shape
    assert np.all(np.isfinite(got))
    err = np.abs(got - want) / np.maximum(np.abs(want), 1e-300)
    assert err.max(initial=0.0) <= rel, (err.max(), np.unravel_index(err.argmax(), err.shape))


def _assert_close_above(got: np.ndarray, want: np.ndarray, rel: float, tiny: float) -> None:
    # posteriors of at least `tiny` to `rel`; smaller ones (which the kernel may leave out,
    # its forward and backward values' product below 2**-PRODUCT_FLOOR) to `tiny`
    big = want >= tiny
    _assert_close(got[big], want[big], rel)
    assert np.all(np.isfinite(got)) and np.abs(got - want)[~big].max(initial=0.0) < tiny


def _random_pair(rng, lx: int, ly: int, alphabet: int):
    return (
        rng.integers(0, alphabet, lx).astype(np.uint8),
        rng.integers(0, alphabet, ly).astype(np.uint8),
    )


# lengths 1..12, length 1 and very unequal lengths among them
SHAPES = [(1, 1), (1, 12), (12, 1), (2, 12), (12, 3), (7, 7), (12, 12), (5, 9), (11, 4)]
GAPS = [(0.02, 0.79), (0.1, 0.5), (0.01, 0.95), (0.2, 0.05)]


# ---------------------------------------------------------------- the oracles agree


def test_log_oracle_agrees_with_exact_fractions():
    # odds 2**score (whole bits) and binary d, e are exact as fractions
    rng = np.random.default_rng(1)
    mat = _matrix()
    odds_f = [[Fraction(2) ** int(v) for v in row] for row in mat]
    odds = blosum_odds(mat, bits_per_unit=1.0)
    for lx, ly in [(1, 1), (1, 4), (4, 1), (3, 5), (5, 5)]:
        x, y = _random_pair(rng, lx, ly, 20)
        d, e = 0.02, 0.79
        exact = oracle_exact(x, y, odds_f, Fraction(d), Fraction(e))
        _assert_close(
            np.array(oracle_log(x, y, odds, d, e)), [[float(v) for v in r] for r in exact], 1e-13
        )
        _assert_close(
            pairhmm.pair_posterior(x, y, odds, d, e), [[float(v) for v in r] for r in exact], 1e-13
        )


# ---------------------------------------------------------------- kernel against the oracle


@pytest.mark.parametrize("alphabet", [1, 2, 4, 20])
def test_kernel_matches_the_oracle(alphabet):
    rng = np.random.default_rng(alphabet)
    odds = _odds()
    for lx, ly in SHAPES:
        for d, e in GAPS:
            x, y = _random_pair(rng, lx, ly, alphabet)
            got = pairhmm.pair_posterior(x, y, odds, d, e)
            _assert_close(got, oracle_log(x, y, odds, d, e), 1e-12)


def test_a_pair_no_path_joins_has_no_posteriors():
    # e = 0: gaps of one residue only, so 1 residue against 4 has no path (Z = 0)
    x, y = np.array([3], np.uint8), np.array([1, 2, 3, 4], np.uint8)
    assert not pairhmm.pair_posterior(x, y, _odds(), 0.02, 0.0).any()
    assert pairhmm.pair_posterior(x, y[:3], _odds(), 0.02, 0.0).sum() > 0.99


def test_kernel_matches_the_oracle_on_very_unequal_lengths():
    # 12 x 3000 both ways: rows run along the longer sequence, so the end stays in range
    rng = np.random.default_rng(5)
    odds = _odds()
    y = rng.integers(0, 20, 3000).astype(np.uint8)
    x = y[1700:1712].copy()
    want = np.array(oracle_log(x, y, odds, 0.02, 0.79))
    # rounding over 3,000 steps, in the oracle's logs (~700 in size) as in the kernel
    _assert_close(pairhmm.pair_posterior(x, y, odds), want, 1e-10)
    _assert_close(pairhmm.pair_posterior(y, x, odds), want.T, 1e-10)
    assert want[np.arange(2, 10), 1702 + np.arange(8)].min() > 0.7


def test_posteriors_sum_to_at_most_one_and_identity_is_the_diagonal():
    rng = np.random.default_rng(2)
    odds = _odds()
    for lx, ly in [(1, 1), (1, 30), (30, 1), (40, 55), (100, 100), (200, 80)]:
        x, y = _random_pair(rng, lx, ly, 20)
        p = pairhmm.pair_posterior(x, y, odds)
        assert (p >= 0).all()
        assert p.sum(axis=1).max() <= 1 + 1e-12
        assert p.sum(axis=0).max() <= 1 + 1e-12
    x = rng.integers(0, 20, 150).astype(np.uint8)
    p = pairhmm.pair_posterior(x, x, odds)
    assert np.diag(p).min() > 0.99
    assert (p.sum(axis=1) - np.diag(p)).max() < 0.01


def test_transposed_pair_gives_the_transposed_posteriors():
    rng = np.random.default_rng(3)
    odds = _odds()
    for lx, ly in [(9, 4), (30, 31), (64, 20)]:
        x, y = _random_pair(rng, lx, ly, 20)
        _assert_close(
            pairhmm.pair_posterior(y, x, odds), pairhmm.pair_posterior(x, y, odds).T, 1e-12
        )


# ---------------------------------------------------------------- library entries


def _batch(seqs: list[str]):
    batch = SequenceBatch.from_input(seqs, "protein")
    return batch.codes, batch.lengths


def _tie(v: float) -> bool:
    # within rounding of a .5 boundary: kernel and oracle may round either way
    return abs(v - math.floor(v) - 0.5) < 1e-9


def _scrambled_pairs(rng):
    """Short random sequences with an identical and a nested one; every ordered pair and the
    self pairs, in a scrambled order: (codes, lengths, xs, ys)."""
    seqs = ["".join(rng.choice(list(AMINO), int(rng.integers(1, 13)))) for _ in range(7)]
    seqs += [seqs[0], seqs[1][: max(1, len(seqs[1]) // 2)]]
    codes, lengths = _batch(seqs)
    n = len(seqs)
    pairs = [(a, b) for a in range(n) for b in range(n)]
    order = rng.permutation(len(pairs))
    xs = torch.tensor([pairs[k][0] for k in order])
    ys = torch.tensor([pairs[k][1] for k in order])
    return codes, lengths, xs, ys


def test_entries_are_the_quantised_oracle_posteriors_in_order():
    codes, lengths, xs, ys = _scrambled_pairs(np.random.default_rng(4))
    odds = _odds()
    for weight_max in (64, 10, 255):
        got_p, got_i, got_j, got_w = posterior_entries(
            codes, lengths, xs, ys, odds, weight_max=weight_max
        )
        for t in (got_p, got_i, got_j, got_w):
            assert t.dtype == torch.int64 and t.device == codes.device
        keys = list(zip(got_p.tolist(), got_i.tolist(), got_j.tolist()))
        assert keys == sorted(keys) and len(set(keys)) == len(keys)
        got = {k: w for k, w in zip(keys, got_w.tolist())}
        ties = set()
        want = {}
        for p in range(len(xs)):
            x = codes[xs[p], : lengths[xs[p]]].numpy()
            y = codes[ys[p], : lengths[ys[p]]].numpy()
            for i, row in enumerate(oracle_log(x, y, odds, 0.02, 0.79)):
                for j, v in enumerate(row):
                    scaled = v * weight_max + 0.5
                    if _tie(scaled):
                        ties.add((p, i, j))
                    elif math.floor(scaled) >= 1:
                        want[(p, i, j)] = math.floor(scaled)
        assert {k: w for k, w in got.items() if k not in ties} == want
        assert all(1 <= w <= weight_max for w in got.values())


def test_empty_sequences_and_no_pairs_give_no_entries():
    codes = torch.tensor([[0, 1, 2], [3, 26, 26], [26, 26, 26]], dtype=torch.uint8)
    lengths = torch.tensor([3, 1, 0])
    got = posterior_entries(
        codes, lengths, torch.tensor([0, 2, 1]), torch.tensor([2, 0, 0]), _odds()
    )
    assert got[0].tolist() == [2] * len(got[0])  # only pair 2 (1 residue against 3)
    got = posterior_entries(
        codes, lengths, torch.zeros(0, dtype=torch.int64), torch.zeros(0), _odds()
    )
    assert all(t.shape == (0,) for t in got)


def _family(rng, n: int, length: int, sub: float = 0.3) -> list[str]:
    root = "".join(rng.choice(list(AMINO), length))
    out = []
    for _ in range(n):
        s = "".join(c if rng.random() > sub else rng.choice(list(AMINO)) for c in root)
        k = int(rng.integers(0, length - 10))
        out.append(s[:k] + s[k + int(rng.integers(0, 8)) :])
    return out


@pytest.mark.parametrize("free", [False, True])
def test_same_entries_on_every_thread_count_twin_and_chunking(monkeypatch, free):
    rng = np.random.default_rng(6)
    codes, lengths = _batch(_family(rng, 12, 120))
    xs, ys = torch.triu_indices(12, 12, 1)
    odds = _odds()
    runs = {}
    before = numba.get_num_threads()
    try:
        for which, cells in (("twin", 1 << 62), ("parallel", -1)):
            monkeypatch.setattr(twins, "SERIAL_CELLS", cells)
            for threads in (1, 2):
                numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
                runs[which, threads] = posterior_entries(
                    codes, lengths, xs, ys, odds, free_ends=free
                )
            runs[which, "arg"] = posterior_entries(
                codes, lengths, xs, ys, odds, threads=2, free_ends=free
            )
    finally:
        numba.set_num_threads(before)
    assert numba.get_num_threads() == before
    # chunks of a few pairs each: the same entries
    host = [t.numpy().astype(np.int64) for t in (codes, lengths, xs, ys)]
    small = pairhmm.posterior_weights(
        host[0].astype(np.uint8), host[1], host[2], host[3], odds, 0.02, 0.79, 64,
        chunk_bytes=1, free_ends=free,
    )  # fmt: skip
    runs["chunks"] = tuple(torch.from_numpy(c) for c in small)
    first = runs["twin", 1]
    assert first[0].shape[0] > 12 * 11 // 2 * 100
    for out in runs.values():
        assert all(torch.equal(a, b) for a, b in zip(first, out))


@pytest.mark.parametrize("free_ends", [False, True])
def test_long_pair_does_not_underflow(free_ends):
    # 2,000 residues against 1,800: 10% substituted and 200 deleted from the middle; with free
    # ends Z lies far beyond the float range
    rng = np.random.default_rng(7)
    x = rng.integers(0, 20, 2000).astype(np.uint8)
    keep = np.r_[0:900, 1100:2000]
    y = x[keep].copy()
    swap = rng.random(y.shape[0]) < 0.1
    y[swap] = rng.integers(0, 20, int(swap.sum()))
    p = pairhmm.pair_posterior(x, y, _odds(), free_ends=free_ends)
    assert p.shape == (2000, 1800) and np.all(np.isfinite(p))
    assert p.min() >= 0 and p.sum(axis=1).max() <= 1 + 1e-12 and p.sum(axis=0).max() <= 1 + 1e-12
    diag = p[keep, np.arange(1800)]
    assert np.median(diag) > 0.95 and diag.mean() > 0.9
    assert p[950:1050].sum(axis=1).max() < 0.1  # the deleted residues pair with nothing
    _assert_close(pairhmm.pair_posterior(y, x, _odds(), free_ends=free_ends), p.T, 1e-12)


def test_blosum_odds_and_argument_checks():
    mat = _matrix()
    odds = blosum_odds(mat)
    assert odds.dtype == np.float64 and np.array_equal(odds, 2.0 ** (0.5 * mat))
    codes, lengths = _batch(["ACDE", "ACE"])
    xs, ys = torch.tensor([0]), torch.tensor([1])
    for kwargs in ({"weight_max": 0}, {"weight_max": 256}, {"gap_open": 0.5}, {"gap_extend": 1.0}):
        with pytest.raises(ArgumentError):
            posterior_entries(codes, lengths, xs, ys, odds, **kwargs)
    with pytest.raises(ArgumentError):
        posterior_entries(codes, lengths, xs, torch.tensor([2]), odds)
    with pytest.raises(ArgumentError):
        posterior_entries(codes, lengths, xs, ys, odds[:4, :4])


# ---------------------------------------------------------------- free end gaps


def oracle_paths(x, y, odds, d, e) -> list[list]:
    """P(i ~ j) of the free-ends model by listing every path: an unaligned prefix of each
    sequence, a core from a match at (i0, j0) to a match at (i1, j1) under the transitions of
    the global model, unaligned suffixes (weight 1 each), and the empty path (weight 1). The
    weight of the paths through each match over the sum of all. Exact with Fractions."""
    n, m = len(x), len(y)
    post = [[0 * d] * m for _ in range(n)]
    total = [1 + 0 * d]  # the empty path

    def walk(state: str, i: int, j: int, w, matches: list) -> None:
        # in `state` at (i, j) (1-based: x_i, y_j consumed), weight w so far
        if state == "M":
            total[0] += w  # the core ends here
            for a, b in matches:
                post[a - 1][b - 1] += w
            stay, gap = 1 - 2 * d, d
        else:
            stay, gap = 1 - e, e
        if i < n and j < m:
            walk("M", i + 1, j + 1, w * stay * odds[x[i]][y[j]], matches + [(i + 1, j + 1)])
        if i < n and state != "Y":
            walk("X", i + 1, j, w * gap, matches)
        if j < m and state != "X":
            walk("Y", i, j + 1, w * gap, matches)

    for i0 in range(1, n + 1):
        for j0 in range(1, m + 1):
            walk("M", i0, j0, odds[x[i0 - 1]][y[j0 - 1]], [(i0, j0)])
    return [[v / total[0] for v in row] for row in post]


def oracle_free(x, y, odds, d, e) -> list[list]:
    """P(i ~ j) of the free-ends model by its forward and backward recurrences, nested loops,
    in the arithmetic of ``odds``, ``d`` and ``e`` (exact with Fractions)."""
    n, m = len(x), len(y)
    zero = 0 * d
    fm = [[zero] * (m + 1) for _ in range(n + 1)]
    fx = [[zero] * (m + 1) for _ in range(n + 1)]
    fy = [[zero] * (m + 1) for _ in range(n + 1)]
    z = 1 + zero  # the empty path
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            fm[i][j] = odds[x[i - 1]][y[j - 1]] * (
                1 + (1 - 2 * d) * fm[i - 1][j - 1] + (1 - e) * (fx[i - 1][j - 1] + fy[i - 1][j - 1])
            )
            fx[i][j] = d * fm[i - 1][j] + e * fx[i - 1][j]
            fy[i][j] = d * fm[i][j - 1] + e * fy[i][j - 1]
            z += fm[i][j]
    bm = [[zero] * (m + 2) for _ in range(n + 2)]
    bx = [[zero] * (m + 2) for _ in range(n + 2)]
    by = [[zero] * (m + 2) for _ in range(n + 2)]
    for i in range(n, 0, -1):
        for j in range(m, 0, -1):
            dm = odds[x[i]][y[j]] * bm[i + 1][j + 1] if i < n and j < m else zero
            bm[i][j] = 1 + (1 - 2 * d) * dm + d * (bx[i + 1][j] + by[i][j + 1])
            bx[i][j] = e * bx[i + 1][j] + (1 - e) * dm
            by[i][j] = e * by[i][j + 1] + (1 - e) * dm
    return [[fm[i][j] * bm[i][j] / z for j in range(1, m + 1)] for i in range(1, n + 1)]


def _fractions(odds: np.ndarray) -> list[list[Fraction]]:
    # the float64 odds exactly
    return [[Fraction(float(v)) for v in row] for row in odds]


def _floats(p) -> np.ndarray:
    return np.array([[float(v) for v in row] for row in p], dtype=np.float64).reshape(len(p), -1)


@pytest.mark.parametrize("alphabet", [1, 2, 20])
def test_free_ends_recurrences_are_the_sum_over_paths(alphabet):
    # every path listed, exactly: the recurrences, and the kernel to rounding
    rng = np.random.default_rng(20 + alphabet)
    odds = _odds()
    odds_f = _fractions(odds)
    for lx, ly in [(1, 1), (1, 4), (4, 1), (2, 3), (3, 3), (4, 3), (4, 4)]:
        for d, e in [(0.02, 0.79), (0.2, 0.05)]:
            x, y = _random_pair(rng, lx, ly, alphabet)
            listed = oracle_paths(x, y, odds_f, Fraction(d), Fraction(e))
            assert listed == oracle_free(x, y, odds_f, Fraction(d), Fraction(e))
            got = pairhmm.pair_posterior(x, y, odds, d, e, free_ends=True)
            _assert_close(got, _floats(listed), 1e-13)


def test_free_ends_paths_with_small_rational_odds():
    # odds 1/2, 1 and 3, d = 1/4, e = 1/3: small exact fractions, listed by hand for 1 x 2
    odds_f = [[Fraction(1, 2), Fraction(3)], [Fraction(3), Fraction(1)]]
    d, e = Fraction(1, 4), Fraction(1, 3)
    x, y = [0], [0, 1]
    # paths: empty (1), x1~y1 alone (1/2), x1~y2 alone (3); no core holds both
    z = 1 + Fraction(1, 2) + 3
    assert oracle_paths(x, y, odds_f, d, e) == [[Fraction(1, 2) / z, 3 / z]]
    # 2 x 2: x1~y1 then x2~y2 adds (1/2)(1/2)(1) to both, and gaps cannot reach a match
    x, y = [0, 1], [0, 1]
    listed = oracle_paths(x, y, odds_f, d, e)
    assert listed == oracle_free(x, y, odds_f, d, e)
    z = 1 + Fraction(1, 2) + 3 + 3 + 1 + Fraction(1, 2) * (1 - 2 * d) * 1
    assert listed[0][0] == (Fraction(1, 2) + Fraction(1, 2) * (1 - 2 * d)) / z
    odds = np.array([[0.5, 3.0], [3.0, 1.0]])
    _assert_close(
        pairhmm.pair_posterior(np.array(x), np.array(y), odds, 0.25, 1 / 3, free_ends=True),
        _floats(listed),
        1e-15,
    )


@pytest.mark.parametrize("alphabet", [1, 2, 4, 20])
def test_free_ends_kernel_matches_the_exact_oracle(alphabet):
    rng = np.random.default_rng(30 + alphabet)
    odds = _odds()
    odds_f = _fractions(odds)
    for lx, ly in SHAPES:
        for d, e in GAPS:
            x, y = _random_pair(rng, lx, ly, alphabet)
            got = pairhmm.pair_posterior(x, y, odds, d, e, free_ends=True)
            _assert_close(got, _floats(oracle_free(x, y, odds_f, Fraction(d), Fraction(e))), 1e-12)
            _assert_close(pairhmm.pair_posterior(y, x, odds, d, e, free_ends=True), got.T, 1e-12)


def test_free_ends_z_beyond_the_float_range():
    # odds times 2**60: Z about 2**954 to 2**1129, summed over rows of many scales
    rng = np.random.default_rng(40)
    big = _odds() * 2.0**60
    for lx, ly in [(20, 16), (16, 20), (19, 19)]:
        x, y = _random_pair(rng, lx, ly, 20)
        want = _floats(oracle_free(x, y, _fractions(big), Fraction(0.02), Fraction(0.79)))
        got = pairhmm.pair_posterior(x, y, big, free_ends=True)
        assert want.max() > 0.4 and want.min() < 1e-200  # both ends of the range
        _assert_close_above(got, want, 1e-12, 1e-250)


def test_free_ends_scale_follows_the_one():
    # tiny odds: every value far below 1, the starts and ends set the rows' scales
    rng = np.random.default_rng(41)
    tiny = _odds() * 2.0**-300
    x, y = _random_pair(rng, 12, 9, 20)
    want = _floats(oracle_free(x, y, _fractions(tiny), Fraction(0.02), Fraction(0.79)))
    assert 0 < want.max() < 1e-80
    _assert_close(pairhmm.pair_posterior(x, y, tiny, free_ends=True), want, 1e-12)
    # 400 rows of a residue with odds 0 between two halves of a pair: the gap across them
    # decays as 0.05**400 (2**-1729) and no start lifts it; a row's exponent stays at 0
    odds = np.zeros((28, 28))
    odds[:27, :27] = _odds()
    y = rng.integers(0, 20, 20).astype(np.uint8)
    x = np.r_[y[:10], np.full(400, 27), y[10:]].astype(np.uint8)
    want = np.array(oracle_free(x, y, odds, 0.1, 0.05))  # in floats: nothing near the limits
    for got in (
        pairhmm.pair_posterior(x, y, odds, 0.1, 0.05, free_ends=True),
        pairhmm.pair_posterior(y, x, odds, 0.1, 0.05, free_ends=True).T,
    ):
        _assert_close_above(got, want, 1e-12, 1e-200)
    assert want[:10].max() > 0.5 and want[410:].max() > 1e-3  # two cores, never one


def test_free_ends_aligns_a_fragment_without_charging_its_ends():
    # 30 residues from the middle of 400: on the diagonal, and hardly anywhere else
    rng = np.random.default_rng(0)
    y = rng.integers(0, 20, 400).astype(np.uint8)
    x = y[185:215].copy()
    diag = (np.arange(30), 185 + np.arange(30))
    free = pairhmm.pair_posterior(x, y, _odds(), free_ends=True)
    glob = pairhmm.pair_posterior(x, y, _odds())
    assert free[diag].mean() > 0.98 and free[diag][2:28].min() > 0.95 and free[diag].min() > 0.7
    assert free.sum() - free[diag].sum() < 0.05
    # the global model must place every residue: the ends' mass spreads off the diagonal
    assert glob.sum() - glob[diag].sum() > 0.3
    assert glob[diag].mean() < free[diag].mean()
    assert free.sum(axis=1).min() < 0.9  # an end residue may stay unaligned


def test_free_ends_entries_are_the_quantised_oracle_posteriors():
    codes, lengths, xs, ys = _scrambled_pairs(np.random.default_rng(42))
    odds = _odds()
    odds_f = _fractions(odds)
    posts = []
    for p in range(len(xs)):
        x = codes[xs[p], : lengths[xs[p]]].numpy()
        y = codes[ys[p], : lengths[ys[p]]].numpy()
        posts.append(oracle_free(x, y, odds_f, Fraction(0.02), Fraction(0.79)))
    for weight_max in (64, 255):
        got_p, got_i, got_j, got_w = posterior_entries(
            codes, lengths, xs, ys, odds, weight_max=weight_max, free_ends=True
        )
        keys = list(zip(got_p.tolist(), got_i.tolist(), got_j.tolist()))
        assert keys == sorted(keys) and len(set(keys)) == len(keys)
        got = dict(zip(keys, got_w.tolist()))
        want = {}
        for p, post in enumerate(posts):
            for i, row in enumerate(post):
                for j, v in enumerate(row):
                    w = math.floor(v * weight_max + Fraction(1, 2))  # exact: no ties to skip
                    if w >= 1:
                        want[(p, i, j)] = w
        assert got == want
    glob = posterior_entries(codes, lengths, xs, ys, odds)
    assert not all(torch.equal(a, b) for a, b in zip(glob, (got_p, got_i, got_j, got_w)))


def test_free_ends_entries_are_the_dense_posteriors_quantised():
    rng = np.random.default_rng(43)
    codes, lengths = _batch(_family(rng, 12, 120))
    xs, ys = torch.triu_indices(12, 12, 1)
    odds = _odds()
    first = posterior_entries(codes, lengths, xs, ys, odds, free_ends=True)
    host = [t.numpy().astype(np.int64) for t in (codes, lengths, xs, ys)]
    # and each pair's entries are its dense posteriors quantised
    for p in range(0, xs.shape[0], 11):
        x = host[0][xs[p], : host[1][xs[p]]].astype(np.uint8)
        y = host[0][ys[p], : host[1][ys[p]]].astype(np.uint8)
        w = np.floor(pairhmm.pair_posterior(x, y, odds, free_ends=True) * 64 + 0.5)
        at = first[0].numpy() == p
        dense = np.zeros_like(w)
        dense[first[1].numpy()[at], first[2].numpy()[at]] = first[3].numpy()[at]
        assert np.array_equal(dense, w)


@pytest.mark.xfail(strict=True, reason="two alternative alignments of > ~1,000 bits each")
@pytest.mark.parametrize("free_ends", [False, True])
@pytest.mark.parametrize("layout", ["swapped", "tandem"])
def test_two_strong_alternative_alignments_exceed_the_rows_range(layout, free_ends):
    # domains of 400 identical residues (about 1,150 bits each): in swapped order (A B against
    # B A) or a tandem repeat (A A against A); the forward pass keeps one alignment and the
    # backward one the other, so neither comes out (module docstring): a known limit
    rng = np.random.default_rng(2)
    a = rng.integers(0, 20, 400).astype(np.uint8)
    b = rng.integers(0, 20, 400).astype(np.uint8)
    k = np.arange(400)
    if layout == "swapped":
        p = pairhmm.pair_posterior(np.r_[a, b], np.r_[b, a], _odds(), free_ends=free_ends)
        found = max(p[k, 400 + k].mean(), p[400 + k, k].mean())
    else:
        p = pairhmm.pair_posterior(np.r_[a, a], a, _odds(), free_ends=free_ends)
        found = p[k, k].mean() + p[400 + k, k].mean()
    assert p.sum(axis=1).max() <= 1 + 1e-12 and p.sum(axis=0).max() <= 1 + 1e-12
    assert found > 0.95
