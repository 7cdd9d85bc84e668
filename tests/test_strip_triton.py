"""The Triton strip fill (``triton_kernels/strip.py``) against a plain-Python reference of
decision 0038's strip semantics, and against the CPU twin (``torchmsa/cpu/strip.py``) bit for bit.

``interpreter`` tests use tiny shapes (Triton's interpreter on CPU, compiled kernels on a GPU);
``gpu`` tests use real sizes and need CUDA.
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
import torch

from torchmsa._triton.strip import SHAPES, choose_shape, strip_fill
from torchmsa.constants import NEG
from torchmsa.errors import ArgumentError

HAS_CPU_TWIN = importlib.util.find_spec("torchmsa.cpu.strip") is not None


@pytest.fixture(autouse=True)
def poison_empty(monkeypatch):
    """Fresh buffers hold garbage, so output a kernel never wrote cannot pass as zeros (a large
    positive value: a kernel that takes unwritten scratch for a best score fails too)."""
    empty, empty_like = torch.empty, torch.empty_like

    def poison(t):
        return t.fill_(7 if t.dtype in (torch.uint8, torch.bool) else (1 << 28) + 7)

    monkeypatch.setattr(torch, "empty", lambda *a, **k: poison(empty(*a, **k)))
    monkeypatch.setattr(torch, "empty_like", lambda *a, **k: poison(empty_like(*a, **k)))


def reference(q, s, mat, go, ge, W, seg_lo, seg_hi, col_in, slot, forbid, S):
    """Plain-Python strips: ``(ckpt [S][4][n+1], best [S][4])`` as nested lists (untouched
    slots hold None). ``forbid`` is a set of ``(i, j)``."""
    n, m = len(q), len(s)
    ckpt = [None] * S
    best = [None] * S
    for c in range(len(seg_lo)):
        H, E, SH, SE = (list(col_in[c][a]) for a in range(4))
        H[0], E[0], SH[0], SE[0] = 0, NEG, 0, 0  # row 0 is the boundary, whatever col_in says
        for k in range(seg_lo[c], seg_hi[c]):
            b = (0, 0, 0, 0)
            for j in range(k * W + 1, min((k + 1) * W, m) + 1):
                h2, e2, sh2, se2 = [0], [NEG], [0], [0]
                f, sf = NEG, 0
                for i in range(1, n + 1):
                    e_ext, e_open = E[i] - ge, H[i] - go
                    e = max(e_ext, e_open)
                    se = SE[i] if e_ext >= e_open else SH[i]
                    f_ext, f_open = f - ge, h2[i - 1] - go
                    f = max(f_ext, f_open)
                    sf = sf if f_ext >= f_open else sh2[i - 1]
                    if (i, j) in forbid:  # no diagonal move: up, then left
                        h, sh = (f, sf) if f >= e else (e, se)
                    else:
                        h = H[i - 1] + mat[q[i - 1]][s[j - 1]]
                        sh = j if H[i - 1] == 0 else SH[i - 1]
                        if f > h:
                            h, sh = f, sf
                        if e > h:
                            h, sh = e, se
                    if h <= 0:
                        h, sh = 0, 0
                    if h > b[0] or (h == b[0] > 0 and (i, j) < (b[1], b[2])):
                        b = (h, i, j, sh)
                    h2.append(h)
                    e2.append(e)
                    sh2.append(sh)
                    se2.append(se)
                H, E, SH, SE = h2, e2, sh2, se2
            o = slot[c] + k - seg_lo[c]
            ckpt[o] = [list(H), list(E), list(SH), list(SE)]
            best[o] = list(b)
    return ckpt, best


def make_case(seed, n, m, W, n_seg, warm, n_forbid, col="zero", big_scores=False):
    """Random inputs with related query and subject (so alignments score), segments of
    consecutive strips (each after the first starting ``warm`` strips early), slots in reverse
    segment order, and ``col_in``: the zero column, or for ``"true"`` the reference's own
    checkpoint before the segment, or ``"random"`` values."""
    rng = np.random.default_rng(seed)
    A = 5
    base = rng.integers(0, 4, size=max(n, m) + 3)
    qv = base[:n].copy()
    off = int(rng.integers(0, 3))
    sv = np.concatenate([rng.integers(0, A, size=off), base[: max(m - off, 0)]])[:m]
    flip = rng.random(m) < 0.2
    sv[flip] = rng.integers(0, A, size=int(flip.sum()))
    mat = np.full((A, A), -3 if not big_scores else -300, dtype=np.int64)
    np.fill_diagonal(mat, 5 if not big_scores else 400)
    mat[A - 1, :] = -1
    mat[:, A - 1] = -2  # not symmetric: the query's code is the row
    mat[0, 1] = 1
    go, ge = (int(rng.integers(1, 12)), int(rng.integers(0, 3)))
    if big_scores:
        go, ge = go * 60, ge * 60
    n_strips = -(-m // W) if m else 0
    cuts = []
    if n_strips > 1:
        k = min(n_seg - 1, n_strips - 1)
        cuts = sorted(rng.choice(np.arange(1, n_strips), size=k, replace=False).tolist())
    bounds = [0, *cuts, n_strips] if n_strips else [0, 0]
    seg_lo, seg_hi = [], []
    for a, b in zip(bounds[:-1], bounds[1:], strict=True):
        seg_lo.append(max(a - warm, 0) if a > 0 else 0)
        seg_hi.append(b)
    counts = [h - lo for lo, h in zip(seg_lo, seg_hi, strict=True)]
    slot, acc = [0] * len(counts), 0
    for c in reversed(range(len(counts))):
        slot[c] = acc
        acc += counts[c]
    S = acc + 1  # one slot never written
    forbid = set()
    for _ in range(n_forbid):
        if n and m:
            forbid.add((int(rng.integers(1, n + 1)), int(rng.integers(1, m + 1))))
    zero = [[0] * (n + 1), [NEG] * (n + 1), [0] * (n + 1), [0] * (n + 1)]
    if col == "zero":
        col_in = [zero] * len(seg_lo)
    elif col == "random":
        col_in = []
        for _ in seg_lo:
            # row 0 is not read: garbage there must change nothing
            h = rng.integers(0, 30, size=n + 1).tolist()
            e = rng.integers(-40, 20, size=n + 1).tolist()
            sh = rng.integers(0, m + 1, size=n + 1).tolist()
            se = rng.integers(0, m + 1, size=n + 1).tolist()
            col_in.append([h, e, sh, se])
    else:  # the true column before each segment: one reference fill of the whole subject
        full, _ = reference(
            qv, sv, mat.tolist(), go, ge, W, [0], [n_strips], [zero], [0], forbid, n_strips
        )
        col_in = [zero if lo == 0 else full[lo - 1] for lo in seg_lo]
    return dict(
        q=qv.tolist(), s=sv.tolist(), mat=mat.tolist(), go=go, ge=ge, W=W, seg_lo=seg_lo,
        seg_hi=seg_hi, col_in=col_in, slot=slot, forbid=forbid, S=S,
    )  # fmt: skip


def tensors(case, device):
    n = len(case["q"])
    rows = [[] for _ in range(n + 2)]
    for i, j in sorted(case["forbid"]):
        rows[i].append(j)
    ptr = np.zeros(n + 2, dtype=np.int64)
    ptr[1:] = np.cumsum([len(r) for r in rows[:-1]])
    cols = [j for r in rows for j in r]
    S, d = case["S"], device

    def t(x, dtype):
        return torch.tensor(x, dtype=dtype, device=d)

    args = (
        t(case["q"], torch.uint8), t(case["s"], torch.uint8), t(case["mat"], torch.int32),
        case["go"], case["ge"], case["W"], t(case["seg_lo"], torch.int32),
        t(case["seg_hi"], torch.int32),
        t(case["col_in"], torch.int32).reshape(len(case["seg_lo"]), 4, n + 1),
        t(case["slot"], torch.int64), t(ptr, torch.int32), t(cols, torch.int32).reshape(-1),
    )  # fmt: skip
    ckpt = torch.full((S, 4, n + 1), -7, dtype=torch.int32, device=d)
    best = torch.full((S, 4), -7, dtype=torch.int32, device=d)
    return args, ckpt, best


def expected(case):
    n = len(case["q"])
    ck, bs = reference(**{k: case[k] for k in case})
    ckpt = torch.full((case["S"], 4, n + 1), -7, dtype=torch.int32)
    best = torch.full((case["S"], 4), -7, dtype=torch.int32)
    for o, (c, b) in enumerate(zip(ck, bs, strict=True)):
        if c is not None:
            ckpt[o] = torch.tensor(c, dtype=torch.int32)
            best[o] = torch.tensor(b, dtype=torch.int32)
    return ckpt, best


def mismatches(got, want):
    """The first mismatching indices and values, for assertion messages."""
    bad = [tuple(b) for b in (got != want).nonzero().tolist()[:5]]
    pairs = ", ".join(f"{b}: {got[b].item()} vs {want[b].item()}" for b in bad)
    return f"{int((got != want).sum())} mismatches, first (got vs want) {pairs}"


# (seed, n, m, W, segments, warm-up strips, forbidden pairs, col_in, shape (Q, R, warps))
CASES = [
    pytest.param(0, 1, 1, 1, 1, 0, 0, "zero", None, id="n1-m1-W1"),
    pytest.param(1, 2, 7, 2, 2, 1, 0, "zero", None, id="n2-m7-W2-warm"),
    pytest.param(2, 7, 13, 3, 3, 1, 0, "zero", None, id="n7-m13-W3-3seg"),
    pytest.param(3, 9, 11, 4, 2, 0, 0, "true", (2, 4, 1), id="n9-m11-W4-true-Q2R4-3pass"),
    pytest.param(4, 11, 9, 2, 3, 1, 6, "zero", (2, 4, 1), id="n11-m9-W2-forbid-Q2R4"),
    pytest.param(5, 6, 10, 5, 2, 0, 5, "true", None, id="n6-m10-W5-true-forbid"),
    pytest.param(6, 5, 9, 2, 2, 1, 0, "random", (4, 2, 1), id="n5-m9-W2-random-R2"),
    pytest.param(7, 13, 17, 8, 2, 0, 4, "random", (2, 4, 1), id="n13-m17-W8-random-forbid"),
    pytest.param(8, 3, 2, 5, 1, 0, 0, "zero", None, id="n3-m2-W5-wide-strip"),
    pytest.param(9, 8, 12, 12, 1, 0, 0, "true", (8, 1, 1), id="n8-m12-W12-Q8R1"),
    pytest.param(10, 0, 5, 2, 2, 1, 0, "zero", None, id="n0-m5-W2"),
]


@pytest.mark.interpreter
@pytest.mark.parametrize("seed, n, m, W, n_seg, warm, n_forbid, col, shape", CASES)
def test_strip_fill_matches_reference(seed, n, m, W, n_seg, warm, n_forbid, col, shape, device):
    case = make_case(seed, n, m, W, n_seg, warm, n_forbid, col)
    args, ckpt, best = tensors(case, device)
    strip_fill(*args, ckpt, best, shape=shape)
    want_ckpt, want_best = expected(case)
    assert torch.equal(best.cpu(), want_best), mismatches(best.cpu(), want_best)
    assert torch.equal(ckpt.cpu(), want_ckpt), mismatches(ckpt.cpu(), want_ckpt)


# cases whose query takes several passes of Q * R rows: one program per pass when piped
PIPE_CASES = [
    pytest.param(3, 9, 11, 4, 2, 0, 0, "true", (2, 4, 1), 1, id="n9-Q2R4-3pass-sync1"),
    pytest.param(4, 11, 9, 2, 3, 1, 6, "zero", (2, 4, 1), 3, id="n11-forbid-Q2R4-sync3"),
    pytest.param(6, 5, 9, 2, 2, 1, 0, "random", (4, 1, 1), 2, id="n5-random-Q4R1-sync2"),
    pytest.param(7, 13, 17, 8, 2, 0, 4, "random", (2, 2, 1), 5, id="n13-forbid-Q2R2-sync5"),
    pytest.param(12, 17, 23, 3, 1, 0, 3, "true", (2, 1, 1), 4, id="n17-W3-Q2R1-9pass"),
]


@pytest.mark.interpreter
@pytest.mark.parametrize("seed, n, m, W, n_seg, warm, n_forbid, col, shape, sync", PIPE_CASES)
def test_piped_passes_match_reference(seed, n, m, W, n_seg, warm, n_forbid, col, shape, sync,
                                      device):  # fmt: skip
    """Passes run as programs of their own, each a few steps behind the one above, give the
    same checkpoints and best cells as passes run one after another."""
    case = make_case(seed, n, m, W, n_seg, warm, n_forbid, col)
    want_ckpt, want_best = expected(case)
    for pipe in (True, False):
        args, ckpt, best = tensors(case, device)
        strip_fill(*args, ckpt, best, shape=shape, pipe=pipe, sync=sync)
        assert torch.equal(best.cpu(), want_best), (pipe, mismatches(best.cpu(), want_best))
        assert torch.equal(ckpt.cpu(), want_ckpt), (pipe, mismatches(ckpt.cpu(), want_ckpt))


@pytest.mark.interpreter
def test_wide_scores_use_unpacked_profile(device):
    """Scores outside int8 take the 32-bit query profile."""
    case = make_case(11, 6, 8, 3, 2, 1, 2, "zero", big_scores=True)
    args, ckpt, best = tensors(case, device)
    strip_fill(*args, ckpt, best)
    want_ckpt, want_best = expected(case)
    assert torch.equal(best.cpu(), want_best), mismatches(best.cpu(), want_best)
    assert torch.equal(ckpt.cpu(), want_ckpt), mismatches(ckpt.cpu(), want_ckpt)


@pytest.mark.interpreter
@pytest.mark.skipif(not HAS_CPU_TWIN, reason="torchmsa/cpu/strip.py not written yet")
@pytest.mark.parametrize("seed, n, m, W, n_seg, warm, n_forbid, col, shape", CASES[1:])
def test_strip_fill_matches_cpu_twin(seed, n, m, W, n_seg, warm, n_forbid, col, shape, device):
    from torchmsa.cpu.strip import strip_fill as cpu_strip_fill

    case = make_case(seed, n, m, W, n_seg, warm, n_forbid, col)
    args, ckpt, best = tensors(case, device)
    strip_fill(*args, ckpt, best, shape=shape)
    cargs, c_ckpt, c_best = tensors(case, "cpu")
    cpu_strip_fill(*cargs, c_ckpt, c_best)
    assert torch.equal(best.cpu(), c_best), mismatches(best.cpu(), c_best)
    assert torch.equal(ckpt.cpu(), c_ckpt), mismatches(ckpt.cpu(), c_ckpt)


def test_choose_shape_takes_the_menu():
    assert choose_shape(100) == (32, 4, 1)
    assert choose_shape(10_000) == (32, 16, 1)
    assert all(choose_shape(n) in SHAPES for n in (0, 1, 129, 385, 513, 700, 100_000))


def test_bad_arguments_name_the_argument():
    case = make_case(0, 3, 5, 2, 1, 0, 0, "zero")
    args, ckpt, best = tensors(case, "cpu")
    with pytest.raises(ArgumentError, match="`W`"):
        strip_fill(*args[:5], 0, *args[6:], ckpt, best)
    with pytest.raises(ArgumentError, match="`q`"):
        strip_fill(args[0].long(), *args[1:], ckpt, best)
    with pytest.raises(ArgumentError, match="`best`"):
        strip_fill(*args, ckpt, best[:, :3])
    with pytest.raises(ArgumentError, match="segments"):
        strip_fill(*args[:6], args[6] + 5, args[7] + 5, *args[8:], ckpt, best)
    with pytest.raises(ArgumentError, match="`slot`"):
        strip_fill(*args[:9], args[9] + len(ckpt), *args[10:], ckpt, best)
    with pytest.raises(ArgumentError, match="`forbid_ptr`"):
        strip_fill(*args[:10], args[10] + 1, args[11], ckpt, best)
    with pytest.raises(ArgumentError, match="`sync`"):
        strip_fill(*args, ckpt, best, sync=0)


@pytest.mark.gpu
def test_strip_fill_real_size():
    """A 3,000-residue query against 200,000 subject residues in 50 segments: the checkpoints
    and best cells of segments started from a zero column equal those of one uncut fill once
    the boundary is forgotten; the planted copy of the query is found; with its diagonal
    forbidden, a refill equals the CPU twin's (when present)."""
    rng = np.random.default_rng(5)
    dev = "cuda"
    n, m, W, C = 3000, 200_000, 1000, 50
    base = rng.integers(0, 20, size=m)
    q = torch.tensor(base[50_000 : 50_000 + n], dtype=torch.uint8, device=dev)
    s = torch.tensor(base, dtype=torch.uint8, device=dev)
    mat = torch.tensor(np.where(np.eye(20, dtype=bool), 5, -3), dtype=torch.int32, device=dev)
    S = m // W
    per = S // C
    seg_lo = torch.arange(0, S, per, dtype=torch.int32, device=dev)
    seg_hi = torch.clamp(seg_lo + per, max=S)
    col = torch.zeros((C, 4, n + 1), dtype=torch.int32, device=dev)
    col[:, 1] = NEG
    fptr = torch.zeros(n + 2, dtype=torch.int32, device=dev)
    fcol = torch.zeros(0, dtype=torch.int32, device=dev)
    ckpt = torch.empty((S, 4, n + 1), dtype=torch.int32, device=dev)
    best = torch.empty((S, 4), dtype=torch.int32, device=dev)
    slot = seg_lo.long()
    strip_fill(q, s, mat, 11, 1, W, seg_lo, seg_hi, col, slot, fptr, fcol, ckpt, best)
    one = torch.empty_like(ckpt)
    one_best = torch.empty_like(best)
    z = col[:1]
    strip_fill(q, s, mat, 11, 1, W, seg_lo[:1], seg_hi[-1:], z, slot[:1], fptr, fcol, one, one_best)
    # the planted copy of the query scores 5 n in the strip that holds its end
    k = (50_000 + n - 1) // W
    assert one_best[k, 0].item() == 5 * n
    assert one_best[k, 3].item() == 50_001
    # segments after the first restart from a zero column: equal after their first converged
    # checkpoint (random sequence forgets the boundary within a strip)
    converged = 0
    for c in range(C):
        lo, hi = int(seg_lo[c]), int(seg_hi[c])
        if torch.equal(ckpt[lo], one[lo]):
            converged += 1
            assert torch.equal(ckpt[lo:hi], one[lo:hi])
            assert torch.equal(best[lo + 1 : hi], one_best[lo + 1 : hi])
    assert converged >= C // 2
    # refill strips k - 3 .. k + 1 from the checkpoint before them with the hit's pairs
    # (i, 50_000 + i) forbidden, as a Waterman-Eggert recomputation does
    fptr = torch.arange(n + 2, dtype=torch.int32, device=dev).clamp(min=1) - 1
    fcol = torch.arange(50_001, 50_001 + n, dtype=torch.int32, device=dev)
    lo = torch.tensor([k - 3], dtype=torch.int32, device=dev)
    cut = 5
    args = (q, s, mat, 11, 1, W, lo, lo + cut, one[k - 4 : k - 3], torch.zeros_like(slot[:1]))
    re_ckpt = torch.empty((cut, 4, n + 1), dtype=torch.int32, device=dev)
    re_best = torch.empty((cut, 4), dtype=torch.int32, device=dev)
    strip_fill(*args, fptr, fcol, re_ckpt, re_best)
    assert 0 < re_best[3, 0].item() < 5 * n
    if HAS_CPU_TWIN:
        from torchmsa.cpu.strip import strip_fill as cpu_strip_fill

        c_ckpt = torch.empty((cut, 4, n + 1), dtype=torch.int32)
        c_best = torch.empty((cut, 4), dtype=torch.int32)
        cpu_strip_fill(*(a.cpu() if torch.is_tensor(a) else a for a in args), fptr.cpu(),
                       fcol.cpu(), c_ckpt, c_best)  # fmt: skip
        assert torch.equal(c_ckpt, re_ckpt.cpu()), mismatches(re_ckpt.cpu(), c_ckpt)
        assert torch.equal(c_best, re_best.cpu()), mismatches(re_best.cpu(), c_best)
