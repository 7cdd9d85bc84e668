"""The CPU column-score kernel (:mod:`torchmsa.cpu.colscores`) against the torch rule: the same
int32 values, bit for bit, pair by pair and packed, whichever side its loops run sparse over."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from torchmsa.alphabet import get_alphabet
from torchmsa.cpu import twins
from torchmsa.cpu.colscores import packed_column_scores
from torchmsa.ops.colscores import batched_column_scores
from torchmsa.ops.rules.column_scores import column_scores
from torchmsa.pipeline import profile_scoring

W_MAX = 1 << 19  # w_a + w_b <= 2^20: the bound of the exactness argument


def _profile(rng, kind: str, cols: int, w: int, n_alpha: int) -> np.ndarray:
    """Integer profile columns of weight at most ``w``: a leaf (one residue of weight ``w`` per
    column, some all-gap), a family-like profile (a few residue types per column), or a dense
    one (every type), each with some empty columns and some sparse ones (below the occupancy
    floor)."""
    prof = np.zeros((cols, n_alpha), np.int64)
    for c in range(cols):
        roll = rng.random()
        if roll < 0.08:
            continue  # an all-gap column
        if kind == "leaf":
            prof[c, rng.integers(n_alpha)] = w
            continue
        total = int(rng.integers(1, 4)) if roll < 0.2 else int(rng.integers(1, w + 1))
        if kind == "family":
            letters = rng.choice(n_alpha, int(rng.integers(1, 5)), replace=False)
        else:
            letters = np.arange(n_alpha)
        prof[c, letters] = rng.multinomial(total, np.ones(len(letters)) / len(letters))
    return prof


def _pairs(rng, n_pairs: int, n_alpha: int, max_cols: int):
    """Profiles packed as rows of one array, and pairs of them (the second profile of a pair
    may sit before the first; sizes from 0 up to ``max_cols``)."""
    profs, weights = [], []
    for _ in range(2 * n_pairs):
        kind = rng.choice(["leaf", "family", "dense"], p=[0.4, 0.4, 0.2])
        w = 1 if kind == "leaf" and rng.random() < 0.5 else int(rng.integers(1, W_MAX + 1))
        if rng.random() < 0.1:
            w = W_MAX
        cols = (
            int(rng.integers(0, max_cols + 1))
            if rng.random() < 0.1
            else int(rng.integers(1, max_cols + 1))
        )
        profs.append(_profile(rng, kind, cols, w, n_alpha))
        weights.append(w)
    sizes = np.array([len(p) for p in profs], np.int64)
    offs = np.cumsum(sizes) - sizes
    order = rng.permutation(2 * n_pairs)
    a, b = order[:n_pairs], order[n_pairs:]
    prof = np.concatenate(profs) if sizes.sum() else np.zeros((0, n_alpha), np.int64)
    w = np.array(weights, np.int64)
    return prof, profs, offs[a], sizes[a], offs[b], sizes[b], w[a], w[b], a, b


def _matrix(rng, n_alpha: int, symmetric: bool) -> np.ndarray:
    mat = rng.integers(-(1 << 12), 1 << 12, (n_alpha, n_alpha)).astype(np.int64)
    return np.triu(mat) + np.triu(mat, 1).T if symmetric else mat


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("occ_shift", [0, 1, 5])
@pytest.mark.parametrize("which", ["parallel", "one-thread"])
def test_packed_kernel_equals_the_torch_rule_pair_by_pair(seed, occ_shift, which, monkeypatch):
    # the parallel function cuts pairs into tasks; its one-thread twin runs each pair whole
    monkeypatch.setattr(twins, "SERIAL_CELLS", -1 if which == "parallel" else 1 << 62)
    rng = np.random.default_rng(seed)
    n_alpha = 24
    mat = _matrix(rng, n_alpha, symmetric=seed % 2 == 0)
    # seeds 2 and 3: pairs of up to 600 columns, which the parallel function cuts into tasks
    prof, profs, off_a, n, off_b, m, w_a, w_b, a, b = _pairs(
        rng, 40 if seed < 2 else 12, n_alpha, 70 if seed < 2 else 600
    )
    cells = n * m
    s_off = np.cumsum(cells) - cells
    out = np.full(int(cells.sum()), -7, np.int32)
    packed_column_scores(
        prof.astype(np.float64), mat.astype(np.float64), off_a, n, off_b, m, w_a, w_b, s_off,
        occ_shift, out,
    )  # fmt: skip
    mat_t = torch.from_numpy(mat).double()
    for p in range(len(n)):
        want = column_scores(
            torch.from_numpy(profs[a[p]]).double(),
            torch.from_numpy(profs[b[p]]).double(),
            mat_t,
            int(w_a[p]),
            int(w_b[p]),
            occ_shift,
        )
        got = out[s_off[p] : s_off[p] + cells[p]].reshape(n[p], m[p])
        assert np.array_equal(got, want.numpy()), p


def test_packed_kernel_at_the_weight_limit_both_sparse_orders():
    """Full columns of weight 2^19 against each other and against leaves (the largest raw
    sums), and a lone large pair cut into tasks: exact, against integer arithmetic."""
    rng = np.random.default_rng(7)
    n_alpha = 24
    mat = _matrix(rng, n_alpha, symmetric=False)
    mat[0, 0] = (1 << 13) - 1
    wa = wb = W_MAX
    pa = np.zeros((1000, n_alpha), np.int64)  # 250,000 cells: cut into tasks
    pa[:, 0] = wa  # one residue type per column, at full weight: the row side is sparse
    pa[::3] = rng.multinomial(wa, np.ones(n_alpha) / n_alpha, 334)
    pb = rng.multinomial(wb, np.ones(n_alpha) / n_alpha, 250)  # dense columns
    pb[::5] = 0
    pb[::5, 0] = wb
    pb[1] = 0  # all-gap
    pb[2, 3] = 1  # sparse column
    pb[2, :3] = 0
    pb[2, 4:] = 0
    for x, y, w_x, w_y in ((pa, pb, wa, wb), (pb, pa, wb, wa)):
        prof = np.concatenate([x, y]).astype(np.float64)
        out = np.empty(len(x) * len(y), np.int32)
        one = np.array([0], np.int64)
        packed_column_scores(
            prof, mat.astype(np.float64), one, np.array([len(x)]), np.array([len(x)]),
            np.array([len(y)]), np.array([w_x]), np.array([w_y]), one, 5, out,
        )  # fmt: skip
        raw = x @ mat @ y.T  # int64: exact
        d_x = np.maximum(np.minimum(x.sum(1) << 5, w_x), 1)
        d_y = np.maximum(np.minimum(y.sum(1) << 5, w_y), 1)
        want = raw // (d_x[:, None] * d_y[None, :])
        assert np.array_equal(out.reshape(len(x), len(y)), want)


@pytest.mark.parametrize("seed", range(3))
def test_batched_cpu_equals_the_dense_torch_path(seed):
    """``batched_column_scores`` on the CPU (the numba kernel) against its bucketed torch
    products (``dense=True``, the GPU's way), under the protein profile matrix."""
    rng = np.random.default_rng(100 + seed)
    mat = profile_scoring(get_alphabet("protein")).matrix.double()
    n_alpha = mat.shape[0]
    prof, _, off_a, n, off_b, m, w_a, w_b, _, _ = _pairs(rng, 120, n_alpha, 140)
    args = (
        torch.from_numpy(prof).double(),
        torch.from_numpy(off_a),
        torch.from_numpy(n),
        torch.from_numpy(off_b),
        torch.from_numpy(m),
        torch.from_numpy(w_a),
        torch.from_numpy(w_b),
        mat,
    )
    for occ_shift in (2, 5):
        S, s_off = batched_column_scores(*args, occ_shift=occ_shift)
        S_ref, s_off_ref = batched_column_scores(*args, occ_shift=occ_shift, dense=True)
        assert S.dtype == S_ref.dtype == torch.int32
        assert torch.equal(s_off, s_off_ref)
        assert torch.equal(S, S_ref)


def test_batched_cpu_with_no_cells():
    prof = torch.zeros(3, 4, dtype=torch.float64)
    z = torch.zeros(2, dtype=torch.int64)
    S, s_off = batched_column_scores(prof, z, torch.tensor([0, 3]), z, z, z + 1, z + 1,
                                     torch.eye(4, dtype=torch.float64))  # fmt: skip
    assert S.numel() == 0 and s_off.tolist() == [0, 0]
