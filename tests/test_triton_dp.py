"""Triton DP kernels against the numba CPU twin (bit for bit) and Biopython.

``interpreter`` tests use tiny shapes (Triton's interpreter on CPU, compiled kernels on a GPU);
``gpu`` tests use real sizes and need CUDA.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from Bio.Align import PairwiseAligner, substitution_matrices

import torchmsa
from torchmsa._triton import dp as tdp
from torchmsa._triton import dp_plan
from torchmsa.constants import GLOBAL, LOCAL, SEMIGLOBAL
from torchmsa.cpu import dp as cdp
from torchmsa.errors import ArgumentError, ResourceError
from torchmsa.ops.backend import resolve_backend
from torchmsa.scoring import get_scoring

MODES = [GLOBAL, LOCAL, SEMIGLOBAL]
MODE_IDS = ["global", "local", "semiglobal"]
AMINO = "ARNDCQEGHILKMFPSTWYV"
# (lanes per pair, rows per lane, pairs per program, packed best cells, gap open, gap extend)
SHAPES = [
    pytest.param(None, True, 10, 1, id="auto-packed-o10e1"),
    pytest.param((1, 4, 2), False, 5, 2, id="Q1-R4-o5e2"),
    pytest.param((2, 8, 8), True, 3, 3, id="Q2-R8-packed-o3e3"),
    pytest.param((4, 12, 8), False, 11, 0, id="Q4-R12-o11e0"),
]


@pytest.fixture(autouse=True)
def poison_empty(monkeypatch):
    """Fresh buffers hold garbage, so output a kernel never wrote cannot pass as zeros."""
    empty, empty_like = torch.empty, torch.empty_like

    def poison(t):
        return t.fill_(7 if t.dtype in (torch.uint8, torch.bool) else -7)

    def poisoned(*args, **kwargs):
        return poison(empty(*args, **kwargs))

    def poisoned_like(*args, **kwargs):
        return poison(empty_like(*args, **kwargs))

    monkeypatch.setattr(torch, "empty", poisoned)
    monkeypatch.setattr(torch, "empty_like", poisoned_like)


@pytest.fixture
def shape(request) -> dict:
    """The launchers' options that pin the launch shape and the best-cell tracking of a
    ``SHAPES`` entry."""
    config, packed = request.param
    force = None if config is None else dp_plan.Config(*config)
    return {"force_config": force, "packed_tracking": packed}


def _matrix(rng, size=24, lo=-4, hi=6):
    m = rng.integers(lo, hi, size=(size, size))
    return torch.from_numpy(((m + m.T) // 2).astype(np.int32))


def _pairs(rng, lengths_a, lengths_b, size=24):
    """Codes ``uint8 [P, L]`` padded with ``size`` (the gap code), and ``int32`` lengths."""
    la, lb = np.asarray(lengths_a), np.asarray(lengths_b)
    ca = np.full((len(la), max(1, la.max(initial=0))), size, np.uint8)
    cb = np.full((len(lb), max(1, lb.max(initial=0))), size, np.uint8)
    for p, (x, y) in enumerate(zip(la, lb)):
        ca[p, :x] = rng.integers(0, size - 4, x)
        cb[p, :y] = rng.integers(0, size - 4, y)
        if x and y and rng.random() < 0.5:  # related pairs give alignments with structure
            k = min(x, y)
            cb[p, :k] = np.where(rng.random(k) < 0.7, ca[p, :k], cb[p, :k])
    to = torch.from_numpy
    return to(ca), to(la.astype(np.int32)), to(cb), to(lb.astype(np.int32))


def _to(device, *tensors):
    return [t.to(device) for t in tensors]


def _check_pairwise(device, rng, lengths_a, lengths_b, mat, go, ge, mode, options=None):
    """Triton against the CPU twin; ``options``: the launchers' keyword options."""
    options = options or {}
    ca, la, cb, lb = _pairs(rng, lengths_a, lengths_b, mat.shape[0])
    ref_score = cdp.pairwise_score(ca, la, cb, lb, mat, go, ge, mode)
    ref_info, ref_ops = cdp.pairwise_align(ca, la, cb, lb, mat, go, ge, mode)
    args = _to(device, ca, la, cb, lb, mat)
    score = tdp.pairwise_score(*args, go, ge, mode, **options)
    info, ops = tdp.pairwise_align(*args, go, ge, mode, **options)
    assert score.device.type == device and ops.device.type == device
    assert score.dtype == torch.int32 and info.dtype == torch.int32 and ops.dtype == torch.uint8
    for name, ref, got in [
        ("score", ref_score, score),
        ("info", ref_info, info),
        ("ops", ref_ops, ops),
    ]:
        got = got.cpu()
        assert ref.shape == got.shape, name
        bad = (ref != got).reshape(len(ref), -1).any(1).nonzero().flatten().tolist()
        assert not bad, (
            f"{name} differs for pairs {bad} (lengths {la[bad].tolist()} x {lb[bad].tolist()})"
        )


@pytest.mark.interpreter
@pytest.mark.parametrize("mode", MODES, ids=MODE_IDS)
@pytest.mark.parametrize(("shape", "go", "ge"), [(p.values[:2], *p.values[2:]) for p in SHAPES],
                         ids=[p.id for p in SHAPES], indirect=["shape"])  # fmt: skip
def test_pairwise_matches_cpu(device, shape, go, ge, mode):
    rng = np.random.default_rng(100 + mode)
    lengths_a = [0, 0, 1, 3, 12, 9, 1, 7]
    lengths_b = [0, 5, 1, 12, 4, 9, 0, 8]
    _check_pairwise(device, rng, lengths_a, lengths_b, _matrix(rng), go, ge, mode, shape)


@pytest.mark.interpreter
@pytest.mark.parametrize("eb", [16, 32])
def test_wide_substitution_scores(device, eb):
    rng = np.random.default_rng(eb)
    big = 1000 if eb == 16 else 100_000
    mat = _matrix(rng, lo=-big, hi=big)
    _check_pairwise(device, rng, [6, 11, 2], [9, 4, 0], mat, 3 * big // 2, big // 4, LOCAL)


def _profile_batch(rng, ns, ms, lo=-20, hi=20, cost_hi=12):
    n, m = np.asarray(ns), np.asarray(ms)
    S = rng.integers(lo, hi, int((n * m).sum())).astype(np.int32)
    offs = [
        np.concatenate([[0], np.cumsum(x)[:-1]]).astype(np.int64) for x in (n * m, n + 1, m + 1)
    ]
    na, nb = int((n + 1).sum()), int((m + 1).sum())
    costs = [
        rng.integers(2, cost_hi, na), rng.integers(0, 4, na),
        rng.integers(2, cost_hi, nb), rng.integers(0, 4, nb),
    ]  # fmt: skip
    oa, ca, ob, cb = (torch.from_numpy(c.astype(np.int32)) for c in costs)
    to = torch.from_numpy
    n32, m32 = to(n.astype(np.int32)), to(m.astype(np.int32))
    return to(S), to(offs[0]), n32, m32, oa, ca, to(offs[1]), ob, cb, to(offs[2])


def _residue_factors(rng, size):
    """Column residue factors: many 256 (no gaps), some 0 (all gaps), the rest in between."""
    pick = rng.random(size)
    res = np.where(pick < 0.4, 256, np.where(pick < 0.5, 0, rng.integers(0, 257, size)))
    return torch.from_numpy(res.astype(np.int32))


def _check_profile(device, batch, ext, mode, rng=None, options=None):
    res = ()
    if rng is not None:  # gap costs scaled by the columns they face
        res = (_residue_factors(rng, batch[4].numel()), _residue_factors(rng, batch[7].numel()))
    ref = cdp.profile_align(*batch, ext, mode, *res)
    got = tdp.profile_align(*_to(device, *batch), ext, mode, *_to(device, *res), **(options or {}))
    for name, r, g in zip(("info", "ops", "ops_off"), ref, got):
        assert g.device.type == device and g.dtype == r.dtype, name
        assert torch.equal(r, g.cpu()), name


@pytest.mark.interpreter
@pytest.mark.parametrize("mode", MODES, ids=MODE_IDS)
@pytest.mark.parametrize("shape", [(None, True), ((2, 4, 4), False)], ids=["auto", "Q2-R4"],
                         indirect=True)  # fmt: skip
def test_profile_matches_cpu(device, shape, mode):
    rng = np.random.default_rng(7 + mode)
    batch = _profile_batch(rng, [0, 1, 6, 10, 3], [4, 0, 1, 9, 10])
    _check_profile(device, batch, int(rng.integers(0, 3)), mode, options=shape)
    _check_profile(device, batch, int(rng.integers(0, 3)), mode, rng, shape)


@pytest.mark.interpreter
@pytest.mark.parametrize("mode", ["global", "local", "semiglobal"])
def test_scores_match_biopython(device, mode):
    rng = np.random.default_rng(3)
    a = ["".join(rng.choice(list(AMINO), rng.integers(1, 13))) for _ in range(5)]
    b = [s[1:] + "W" if k % 2 else "".join(rng.choice(list(AMINO), 7)) for k, s in enumerate(a)]
    res = torchmsa.pairwise_align(a, b, mode=mode, traceback=False, device=device,
                                  backend="triton")  # fmt: skip
    aligner = PairwiseAligner(
        mode="local" if mode == "local" else "global",
        substitution_matrix=substitution_matrices.load("BLOSUM62"),
        open_gap_score=-10,
        extend_gap_score=-1,
    )
    if mode == "semiglobal":
        aligner.end_gap_score = 0
    assert [r.score for r in res] == [int(aligner.score(x, y)) for x, y in zip(a, b)]


@pytest.mark.interpreter
def test_public_pairwise_align_same_on_both_backends(device):
    a = ["HEAGAWGHEE", "", "M", "PAWHEAE"]
    b = ["PAWHEAE", "AC", "M", "HEAGAWGHEE"]
    for mode in ("global", "local", "semiglobal"):
        cpu = torchmsa.pairwise_align(a, b, mode=mode, device="cpu", backend="cpu")
        gpu = torchmsa.pairwise_align(a, b, mode=mode, device=device, backend="triton")
        assert cpu == gpu


@pytest.mark.interpreter
def test_empty_batch(device):
    z8, z32 = torch.zeros((0, 3), dtype=torch.uint8), torch.zeros(0, dtype=torch.int32)
    mat = get_scoring("protein").matrix
    args = _to(device, z8, z32, z8, z32, torch.from_numpy(mat.copy()))
    assert tdp.pairwise_score(*args, 10, 1, LOCAL).shape == (0, 3)
    info, ops = tdp.pairwise_align(*args, 10, 1, LOCAL)
    assert info.shape == (0, 6) and ops.shape == (0, 6)


@pytest.mark.interpreter
def test_small_memory_budget_splits_launches(device):
    # launches of 1,200 bytes of buffers: the caller's budget times LAUNCH_SHARE
    budget = int(1200 / dp_plan.LAUNCH_SHARE)
    options = {"force_config": dp_plan.Config(q=2, r=4, pb=2), "budget": budget}
    rng = np.random.default_rng(11)
    lengths_a, lengths_b, mat = [9, 10, 8, 2, 10], [10, 7, 9, 10, 3], _matrix(rng)
    args = _to(device, *_pairs(rng, lengths_a, lengths_b), mat)
    launch = dp_plan.plan(dp_plan.pair_args(*args, 10, 1, LOCAL), True, **options)
    assert len(launch.chunks) > 2
    _check_pairwise(device, rng, lengths_a, lengths_b, mat, 10, 1, LOCAL, options)


def test_pair_too_large_raises_resource_error():
    rng = np.random.default_rng(0)
    ca, la, cb, lb = _pairs(rng, [40], [30])
    args = dp_plan.pair_args(ca, la, cb, lb, _matrix(rng), 10, 1, GLOBAL)
    with pytest.raises(ResourceError, match=r"DP of pair 0 \(40 x 30 cells\)") as err:
        dp_plan.plan(args, trace=True, budget=160)
    assert err.value.available == int(160 * dp_plan.LAUNCH_SHARE) == 100
    assert err.value.needed > 100


@pytest.mark.gpu
@pytest.mark.parametrize("mode", MODES, ids=MODE_IDS)
def test_gpu_mixed_lengths_up_to_2000(mode):
    rng = np.random.default_rng(20 + mode)
    lengths = np.concatenate([rng.integers(0, 2001, 40), [0, 1, 2, 2000, 1024, 1023, 1025]])
    other = np.concatenate([rng.integers(0, 2001, 40), [2000, 0, 1, 2000, 1000, 1, 1025]])
    mat = torch.from_numpy(get_scoring("protein").matrix.copy())
    _check_pairwise("cuda", rng, lengths, other, mat, 10, 1, mode)


@pytest.mark.gpu
@pytest.mark.parametrize("mode", MODES, ids=MODE_IDS)
def test_gpu_lone_pairs_per_length_class(mode):
    # one to three pairs per call, mostly each in a length class of its own: nearly all of a
    # program's slots are idle and must not read past their launch's query profile or
    # horizontal buffers. The first call's shapes (accurate mode's remainder alignments)
    # hit an illegal address on an H100 before idle slots were kept in bounds.
    rng = np.random.default_rng(40 + mode)
    mat = torch.from_numpy(get_scoring("protein").matrix.copy())
    _check_pairwise("cuda", rng, [44, 10], [181, 106], mat, 11, 1, mode)
    for _ in range(40):
        k = int(rng.integers(1, 4))
        la, lb = rng.integers(1, 400, k), rng.integers(1, 400, k)
        _check_pairwise("cuda", rng, la, lb, mat, 11, 1, mode)


@pytest.mark.gpu
@pytest.mark.parametrize("mode", MODES, ids=MODE_IDS)
def test_gpu_profile_real_sizes(mode):
    rng = np.random.default_rng(30 + mode)
    ns = np.concatenate([rng.integers(1, 700, 20), [0, 1, 700]])
    ms = np.concatenate([rng.integers(1, 700, 20), [5, 0, 650]])
    batch = _profile_batch(rng, ns, ms, lo=-3000, hi=3000, cost_hi=4000)
    _check_profile("cuda", batch, int(rng.integers(0, 300)), mode, rng)


@pytest.mark.gpu
def test_gpu_long_pair_runs_in_bounded_memory():
    rng = np.random.default_rng(40)
    mat = torch.from_numpy(get_scoring("protein").matrix.copy())
    ca, la, cb, lb = _pairs(rng, [12_000], [11_000], mat.shape[0])
    ref = cdp.pairwise_score(ca, la, cb, lb, mat, 10, 1, LOCAL)
    args = _to("cuda", ca, la, cb, lb, mat)
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    got = tdp.pairwise_score(*args, 10, 1, LOCAL)
    peak = torch.cuda.max_memory_allocated() - base
    assert torch.equal(ref, got.cpu())
    assert peak < 16 * 2**20, f"score-only DP of 12,000 x 11,000 took {peak} bytes"


@pytest.mark.gpu
def test_gpu_auto_backend_is_triton():
    assert resolve_backend("auto", torch.device("cuda")) == "triton"
    a, b = ["HEAGAWGHEE" * 30, "MKV"], ["PAWHEAE" * 40, "MKKV"]
    for mode in ("global", "local", "semiglobal"):
        assert torchmsa.pairwise_align(a, b, mode=mode, device="cuda") == torchmsa.pairwise_align(
            a, b, mode=mode, device="cpu"
        )


def test_length_beyond_codes_raises_argument_error():
    rng = np.random.default_rng(0)
    ca, la, cb, lb = _pairs(rng, [3, 4], [5, 2])
    la[1] = 9
    with pytest.raises(ArgumentError, match=r"`len_a\[1\]` is 9"):
        tdp.pairwise_score(ca, la, cb, lb, _matrix(rng), 10, 1, LOCAL)


def test_plan_groups_and_orders_pairs_as_unique_and_lexsort_did():
    """The planner's length classes and in-class order (decision 0066) against the
    ``np.unique`` / ``np.lexsort`` forms they replaced, on random batches."""
    rng = np.random.default_rng(1)
    for _ in range(200):
        P = int(rng.integers(1, 300))
        n = rng.integers(0, int(rng.choice([5, 100, 5000, 70000])), P).astype(np.int64)
        m = rng.integers(0, 3000, P).astype(np.int64)
        group = np.ceil(np.log2(np.maximum(n, 1)) / 2).astype(np.int64)
        old = [np.nonzero(group == g)[0] for g in np.unique(group)]
        new = dp_plan._length_groups(n, True)
        assert len(old) == len(new) and all((a == b).all() for a, b in zip(old, new))
        passes = -(-n // int(rng.integers(1, 400)))
        assert (np.lexsort((n, m, passes)) == dp_plan._shape_order(n, m, passes)).all()
    assert [g.tolist() for g in dp_plan._length_groups(np.array([3, 900, 5]), False)] == [[0, 1, 2]]
