"""Striped local score kernel (``torchmsa/cpu/dp_long.py``) against ``dp.pair_score_scalar``.

Every comparison is exact: score, end_i and end_j (the first maximum in row-major order), on
random and related pairs whose lengths straddle the lane width (16) and segment boundaries,
with tie-heavy inputs (two-letter alphabets, repeats, zero gap costs) and every routing case of
the batch entry point (local pairs below and above ``STRIPED_MIN_A``, ``open < extend``,
global and semiglobal).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from torchmsa.alphabet import get_alphabet
from torchmsa.constants import GLOBAL, LOCAL, SEMIGLOBAL
from torchmsa.cpu import dp as cpu_dp
from torchmsa.cpu import dp_long
from torchmsa.scoring import get_scoring

GAPS = [(10, 1), (11, 1), (3, 1), (1, 1), (2, 0), (0, 0), (6, 3), (5, 5)]
AWKWARD_N = [0, 1, 2, 3, 15, 16, 17, 31, 32, 33, 47, 63, 64, 65, 100, 255, 257, 511, 513]
AWKWARD_M = [0, 1, 2, 16, 17, 100, 333]


def _matrix(seqtype: str) -> np.ndarray:
    return np.array(get_scoring(get_alphabet(seqtype), None, 10, 1).matrix, np.int32)


MATS = {"protein": (_matrix("protein"), 20), "dna": (_matrix("dna"), 4)}


def _related(rng, size: int, n: int, m: int) -> tuple[np.ndarray, np.ndarray]:
    """``b`` (length m) holds a mutated copy of ``a`` with a long insertion and deletion, so
    that gaps run down many segments and across lanes."""
    a = rng.integers(0, size, n).astype(np.uint8)
    core = a.copy()
    core[rng.random(n) < 0.15] = rng.integers(0, size)
    if n > 8:
        cut = int(rng.integers(0, n - 4))
        core = np.concatenate([core[:cut], core[cut + int(rng.integers(1, n // 3 + 2)) :]])
        at = int(rng.integers(0, len(core) + 1))
        ins = rng.integers(0, size, int(rng.integers(1, n // 2 + 2))).astype(np.uint8)
        core = np.insert(core, at, ins)
    pad = max(0, m - len(core))
    left = int(rng.integers(0, pad + 1))
    b = np.concatenate(
        [rng.integers(0, size, left), core, rng.integers(0, size, pad - left)]
    ).astype(np.uint8)[:m]
    return a, b


KERNELS = {
    "16x16": dp_long._striped16x16,
    "16x32": dp_long._striped16x32,
    "32x16": dp_long._striped32x16,
}


def _check(a, b, mat, go, ge):
    """The dispatcher and each lane type and width on their own."""
    n, m = len(a), len(b)
    want = tuple(int(x) for x in cpu_dp.pair_score_scalar(a, n, b, m, mat, go, ge, LOCAL))
    mat_max = int(np.abs(mat).max())
    got = tuple(int(x) for x in dp_long.local_score_striped(a, n, b, m, mat, go, ge, mat_max))
    assert got == want, f"n={n} m={m} go={go} ge={ge}: got {got}, want {want}"
    for name, kernel in KERNELS.items():
        fit = dp_long.fits16 if name.startswith("16x") else dp_long.fits
        if not fit(n, mat_max, go, ge):
            continue
        ok, *got = (int(x) for x in kernel(a, n, b, m, mat, go, ge))
        if not ok:  # only an int16 kernel gives up, and only on a score past its limit
            assert name.startswith("16x") and want[0] > dp_long.LIMIT16
            continue
        assert tuple(got) == want, f"{name} n={n} m={m} go={go} ge={ge}: {got} != {want}"


@pytest.mark.parametrize("seqtype", ["protein", "dna"])
@pytest.mark.parametrize("go,ge", GAPS, ids=[f"go{g}-ge{e}" for g, e in GAPS])
def test_awkward_sizes(seqtype, go, ge):
    mat, size = MATS[seqtype]
    rng = np.random.default_rng(go * 31 + ge + size)
    for n in AWKWARD_N:
        for m in AWKWARD_M:
            a = rng.integers(0, size, n).astype(np.uint8)
            b = rng.integers(0, size, m).astype(np.uint8)
            _check(a, b, mat, go, ge)


@pytest.mark.parametrize("seqtype", ["protein", "dna"])
@pytest.mark.parametrize("go,ge", GAPS, ids=[f"go{g}-ge{e}" for g, e in GAPS])
def test_related_pairs(seqtype, go, ge):
    mat, size = MATS[seqtype]
    rng = np.random.default_rng(1000 + go * 31 + ge + size)
    for _ in range(40):
        n = int(rng.integers(1, 300))
        a, b = _related(rng, size, n, int(rng.integers(n // 2, 3 * n + 2)))
        _check(a, b, mat, go, ge)


@pytest.mark.parametrize("go,ge", GAPS, ids=[f"go{g}-ge{e}" for g, e in GAPS])
def test_ties(go, ge):
    """Two letters, repeats and identical halves: many cells share the best score."""
    mat, _ = MATS["dna"]
    rng = np.random.default_rng(7 + go + ge)
    for _ in range(60):
        n = int(rng.integers(1, 120))
        m = int(rng.integers(1, 400))
        a = rng.integers(0, 2, n).astype(np.uint8)
        b = rng.integers(0, 2, m).astype(np.uint8)
        _check(a, b, mat, go, ge)
    unit = rng.integers(0, 4, 7).astype(np.uint8)
    for reps_a, reps_b in [(1, 30), (5, 40), (13, 13), (20, 3)]:
        _check(np.tile(unit, reps_a), np.tile(unit, reps_b), mat, go, ge)
    a = rng.integers(0, 4, 50).astype(np.uint8)
    _check(a, np.concatenate([a, a, a]), mat, go, ge)
    _check(np.concatenate([a, a]), np.concatenate([a, a[::-1], a]), mat, go, ge)


def test_fits():
    assert dp_long.fits(1000, 11, 10, 1)
    assert dp_long.fits(1000, 11, 1, 1)
    assert not dp_long.fits(1000, 11, 1, 3)  # open < extend: lazy F is not exact
    assert not dp_long.fits(10**8, 11, 10, 1)  # int32 room
    assert dp_long.fits16(1000, 11, 10, 1)
    assert not dp_long.fits16(20_000, 11, 10, 1)
    assert not dp_long.fits16(100, 11, 9000, 0)


@pytest.mark.parametrize("go,ge", [(7000, 0), (9000, 0), (9000, 2), (40, 40)])
def test_large_gap_costs(go, ge):
    """Opening costs near and past the int16 kernel's bounds (dispatcher picks int32 past)."""
    mat, size = MATS["protein"]
    rng = np.random.default_rng(go + ge)
    for n, m in [(1, 5), (17, 300), (140, 900), (600, 700)]:
        _check(*_related(rng, size, n, m), mat, go, ge)


def test_int16_overflow_falls_back():
    """A score past ``LIMIT16`` reruns the pair in int32 lanes, with the same answer."""
    mat, _ = MATS["protein"]
    w = int(np.argmax(np.diag(mat)))  # the highest self score (W in BLOSUM62: 11)
    n = dp_long.LIMIT16 // int(mat[w, w]) + 40
    a = np.full(n, w, np.uint8)
    a[n // 2] = (w + 1) % 20
    b = np.concatenate([np.zeros(5, np.uint8), a, np.zeros(9, np.uint8)])
    ok, *_ = dp_long._striped16x32(a, n, b, len(b), mat, 10, 1)
    assert not ok
    _check(a, b, mat, 10, 1)


def _batch(rng, size, lens):
    la = np.array([n for n, _ in lens], np.int32)
    lb = np.array([m for _, m in lens], np.int32)
    ca = np.zeros((len(lens), max(1, la.max())), np.uint8)
    cb = np.zeros((len(lens), max(1, lb.max())), np.uint8)
    for p, (n, m) in enumerate(lens):
        ca[p, :n], cb[p, :m] = _related(rng, size, n, m) if n else (ca[p, :0], cb[p, :m])
    return ca, la, cb, lb


@pytest.mark.parametrize("mode", [GLOBAL, LOCAL, SEMIGLOBAL], ids=["global", "local", "semiglobal"])
@pytest.mark.parametrize("go,ge", [(10, 1), (0, 0), (1, 3)], ids=["go10-ge1", "go0-ge0", "go1-ge3"])
def test_batch_routing(mode, go, ge):
    """``pairwise_score`` (striped for local pairs with ``a`` >= STRIPED_MIN_A, rows otherwise)
    equals the scalar loop pair by pair, in every mode."""
    mat, size = MATS["protein"]
    rng = np.random.default_rng(5)
    lens = [
        (0, 0),
        (0, 9),
        (9, 0),
        (1, 1),
        (127, 500),
        (128, 700),
        (129, 129),
        (300, 50),
        (31, 1000),
    ]
    ca, la, cb, lb = _batch(rng, size, lens)
    out = cpu_dp.pairwise_score(
        torch.from_numpy(ca),
        torch.from_numpy(la),
        torch.from_numpy(cb),
        torch.from_numpy(lb),
        torch.from_numpy(mat),
        go,
        ge,
        mode,
    )
    for p, (n, m) in enumerate(lens):
        want = cpu_dp.pair_score_scalar(ca[p], n, cb[p], m, mat, go, ge, mode)
        assert tuple(int(x) for x in out[p]) == tuple(int(x) for x in want), (mode, n, m)
    assert mode != GLOBAL or int(out[0, 0]) == 0


FUZZ_GAPS = [(0, 0), (1, 0), (5, 0), (1, 1), (4, 4), (3, 1), (10, 1), (12, 2), (7, 7)]


@pytest.mark.parametrize("go,ge", FUZZ_GAPS, ids=[f"go{g}-ge{e}" for g, e in FUZZ_GAPS])
def test_fuzz_small(go, ge):
    """Many small random pairs (one to four letters, or protein), ``go == ge`` and ``ge == 0``
    included: every lane width against the scalar loop, score and end cell."""
    rng = np.random.default_rng(4242 + 97 * go + ge)
    for trial in range(150):
        seqtype = "protein" if trial % 3 == 0 else "dna"
        mat, size = MATS[seqtype]
        size = int(rng.integers(1, size + 1))
        n, m = int(rng.integers(1, 90)), int(rng.integers(1, 120))
        if trial % 2:
            a, b = _related(rng, size, n, m)
        else:
            a = rng.integers(0, size, n).astype(np.uint8)
            b = rng.integers(0, size, m).astype(np.uint8)
        _check(a, b, mat, go, ge)


@pytest.mark.parametrize("go,ge", [(10, 1), (2, 1), (1, 0)], ids=["go10-ge1", "go2-ge1", "go1-ge0"])
def test_long_vertical_gaps(go, ge):
    """A query holding an extra block twice a segment long, so the vertical gap (F) crosses lane
    boundaries and wraps around the lazy-F loop more than once before it dies out."""
    mat, size = MATS["protein"]
    rng = np.random.default_rng(11 + go + ge)
    for n_core, extra in [(40, 70), (200, 300), (600, 150)]:
        core = rng.integers(0, size, n_core).astype(np.uint8)
        block = rng.integers(0, size, extra).astype(np.uint8)
        cut = n_core // 3
        a = np.concatenate([core[:cut], block, core[cut:]])
        b = np.concatenate([rng.integers(0, size, 30), core, rng.integers(0, size, 50)])
        _check(a, b.astype(np.uint8), mat, go, ge)
        _check(b.astype(np.uint8), a, mat, go, ge)


def test_lazy_f_needs_the_crossing():
    """A kernel that ignored F crossing from lane to lane (or stopped the lazy loop at once)
    gets this wrong: the best path leaves lane 0 through a vertical gap."""
    mat, _ = MATS["dna"]
    unit = np.array([0, 1, 2, 3, 3, 2, 1, 0, 2, 2, 0, 1], np.uint8)
    core = np.tile(unit, 6)  # 72 residues: every lane of 16x16 holds 5 of 72 + pad
    block = np.full(19, 3, np.uint8)
    a = np.concatenate([core[:30], block, core[30:]])  # 91: a vertical gap of 19 after row 30
    b = core.copy()
    want = tuple(int(x) for x in cpu_dp.pair_score_scalar(a, len(a), b, len(b), mat, 3, 1, LOCAL))
    assert want[1] == len(a)  # the end is past the gap: the path must cross it
    _check(a, b, mat, 3, 1)


def test_buffers_any_alignment():
    """The kernels align their buffer to 64 bytes themselves: views of odd offsets (a and b
    start anywhere) give the same answers."""
    mat, size = MATS["protein"]
    rng = np.random.default_rng(3)
    a0, b0 = _related(rng, size, 300, 900)
    for off in range(4):
        a = np.concatenate([np.zeros(off, np.uint8), a0])[off:]
        b = np.concatenate([np.zeros(off, np.uint8), b0])[off:]
        _check(a, b, mat, 10, 1)
