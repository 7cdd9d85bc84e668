import numpy as np
import pytest
import torch
from Bio.Align import PairwiseAligner, substitution_matrices

import torchmsa
from torchmsa.alphabet import DNA, PROTEIN, encode
from torchmsa.constants import GLOBAL, NEG
from torchmsa.constants import MODES as MODE_CODES
from torchmsa.cpu import dp
from torchmsa.cpu.rules.path_score import path_score
from torchmsa.errors import ArgumentError, InvalidCharacterError, ScoringError
from torchmsa.scoring import get_scoring

from oracles import align as oracle_align
from oracles import dp_matrices, pair_inputs, rescore

MODES = ["global", "local", "semiglobal"]
GAPS = [(10, 1), (5, 2), (3, 3), (11, 0), (0, 0)]
AMINO = "ARNDCQEGHILKMFPSTWYV"


def _random_pair(rng, letters, max_len):
    a = "".join(rng.choice(list(letters), rng.integers(0, max_len + 1)))
    b = "".join(rng.choice(list(letters), rng.integers(0, max_len + 1)))
    if a and rng.random() < 0.6:  # a mutated copy gives alignments with structure
        b = "".join(c for c in a if rng.random() > 0.15)
        b = b[: len(b) // 2] + "".join(rng.choice(list(letters), 3)) + b[len(b) // 2 :]
    return a, b


# Hand-computed DP matrices for a=GAT, b=GT with NUC.4.4 (match 5, mismatch -4), open 3, extend 1.
HAND = {
    "global": [[0, -3, -4], [-3, 5, 2], [-4, 2, 1], [-5, 1, 7]],
    "local": [[0, 0, 0], [0, 5, 2], [0, 2, 1], [0, 1, 7]],
    "semiglobal": [[0, 0, 0], [0, 5, 2], [0, 2, 1], [0, 1, 7]],
}


@pytest.mark.parametrize("mode", MODES)
def test_oracle_matches_hand_computed_matrix(mode):
    mat = get_scoring("dna").matrix
    a, b = encode("GAT", DNA)[0], encode("GT", DNA)[0]
    H, _, _ = dp_matrices(*pair_inputs(a, b, mat, 3, 1), mode)
    assert H == HAND[mode]
    score, ops, start, end = oracle_align(*pair_inputs(a, b, mat, 3, 1), mode)
    assert (score, ops, end) == (7, [0, 1, 0], (3, 2))


def _residue_factors(rng, n, m):
    """Random column residue factors: often 256 (no gaps), sometimes 0, else in between."""

    def one(k):
        r = rng.integers(0, 257, k + 1)
        pick = rng.random(k + 1)
        return np.where(pick < 0.4, 256, np.where(pick < 0.5, 0, r)).astype(np.int32)

    return one(n), one(m)


@pytest.mark.parametrize("mode", MODES)
def test_cpu_profile_dp_matches_oracle_with_position_specific_costs(mode):
    rng = np.random.default_rng(1)
    for _ in range(150):
        n, m = rng.integers(0, 9, size=2)
        S = rng.integers(-6, 7, size=(n, m)).astype(np.int32)
        oa, ob = (
            rng.integers(0, 8, n + 1).astype(np.int32),
            rng.integers(0, 8, m + 1).astype(np.int32),
        )
        ca, cb = (
            rng.integers(0, 3, n + 1).astype(np.int32),
            rng.integers(0, 3, m + 1).astype(np.int32),
        )
        ext = int(rng.integers(0, 3))
        ra, rb = _residue_factors(rng, n, m)
        ops = np.zeros(n + m, np.uint8)
        score, k, si, sj, ei, ej = dp.profile_align_one(
            S, oa, ca, ob, cb, ra, rb, ext, MODE_CODES[mode], ops
        )
        ref = oracle_align(
            S.tolist(),
            oa.tolist(),
            ca.tolist(),
            ob.tolist(),
            cb.tolist(),
            ext,
            mode,
            ra.tolist(),
            rb.tolist(),
        )
        assert (score, ops[:k].tolist(), (si, sj), (ei, ej)) == ref, (S, oa, ca, ob, cb, ext)


def _biopython(mode, go, ge, matrix="BLOSUM62"):
    al = PairwiseAligner(
        mode="local" if mode == "local" else "global",
        substitution_matrix=substitution_matrices.load(matrix),
        open_gap_score=-go,
        extend_gap_score=-ge,
    )
    if mode == "semiglobal":
        al.end_gap_score = 0
    return al


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("gaps", GAPS, ids=lambda g: f"open{g[0]}-ext{g[1]}")
def test_scores_and_rows_match_biopython(mode, gaps):
    rng = np.random.default_rng(hash((mode, gaps)) % 2**32)
    go, ge = gaps
    pairs = [_random_pair(rng, AMINO, 40) for _ in range(40)]
    pairs = [(a, b) for a, b in pairs if a and b]
    res = torchmsa.pairwise_align(
        [a for a, _ in pairs],
        [b for _, b in pairs],
        mode=mode,
        gap_open=go,
        gap_extend=ge,
        device="cpu",
    )
    al = _biopython(mode, go, ge)
    sub = substitution_matrices.load("BLOSUM62")
    for (a, b), r in zip(pairs, res):
        assert r.score == al.score(a, b), (a, b)
        ra, rb = r.aligned
        assert ra.replace("-", "") == a[r.a_range[0] : r.a_range[1]]
        assert rb.replace("-", "") == b[r.b_range[0] : r.b_range[1]]
        assert rescore(ra, rb, lambda x, y: sub[x][y], go, ge, mode) == r.score


@pytest.mark.parametrize("mode", MODES)
def test_dna_scores_match_biopython(mode):
    rng = np.random.default_rng(7)
    pairs = [_random_pair(rng, "ACGT", 50) for _ in range(30)]
    pairs = [(a, b) for a, b in pairs if a and b]
    res = torchmsa.pairwise_align(
        [a for a, _ in pairs], [b for _, b in pairs], mode=mode, traceback=False, device="cpu"
    )
    al = _biopython(mode, 10, 1, "NUC.4.4")
    assert [r.score for r in res] == [al.score(a, b) for a, b in pairs]


@pytest.mark.parametrize("mode", MODES)
def test_numba_matches_oracle_on_pairs(mode):
    rng = np.random.default_rng(3)
    mat = get_scoring("protein").matrix
    for _ in range(100):
        a, b = _random_pair(rng, AMINO, 10)
        ca, cb = encode(a, PROTEIN)[0], encode(b, PROTEIN)[0]
        go, ge = GAPS[rng.integers(len(GAPS))]
        ref = oracle_align(*pair_inputs(ca, cb, mat, go, ge), mode)
        code = MODE_CODES[mode]
        score, ei, ej = dp.pair_score_scalar(ca, len(ca), cb, len(cb), mat, go, ge, code)
        assert (score, (ei, ej)) == (ref[0], ref[3])
        r = torchmsa.pairwise_align(a, b, mode=mode, gap_open=go, gap_extend=ge, device="cpu")
        ops = [0 if x != "-" and y != "-" else 1 if y == "-" else 2 for x, y in zip(*r.aligned)]
        assert (r.score, ops, r.a_range[0], r.b_range[0]) == (ref[0], ref[1], *ref[2])


def test_batch_equals_single_and_score_only():
    rng = np.random.default_rng(5)
    pairs = [_random_pair(rng, AMINO, 60) for _ in range(25)]
    a, b = [p[0] for p in pairs], [p[1] for p in pairs]
    for mode in MODES:
        batch = torchmsa.pairwise_align(a, b, mode=mode, device="cpu")
        single = [torchmsa.pairwise_align(x, y, mode=mode, device="cpu") for x, y in pairs]
        assert batch == single
        scores = torchmsa.pairwise_align(a, b, mode=mode, traceback=False, device="cpu")
        assert [s.score for s in scores] == [r.score for r in batch]
        if mode == "local":
            assert [s.a_range[1] for s in scores] == [r.a_range[1] for r in batch]


def test_empty_and_tiny_sequences():
    r = torchmsa.pairwise_align("", "ACD", mode="global", device="cpu")
    assert r.score == -(10 + 2 * 1) and r.aligned == ("---", "ACD")
    assert torchmsa.pairwise_align("", "", device="cpu").score == 0
    assert torchmsa.pairwise_align("W", "", mode="semiglobal", device="cpu").score == 0
    r = torchmsa.pairwise_align("W", "C", mode="local", device="cpu")
    assert (r.score, r.aligned, r.a_range) == (0, ("", ""), (0, 0))


def test_case_and_gaps_in_input_are_handled():
    r = torchmsa.pairwise_align("ac-dE", "ACDE", device="cpu")
    assert r.aligned == ("acdE", "ACDE")
    assert r.score == torchmsa.pairwise_align("ACDE", "ACDE", device="cpu").score


def test_bad_arguments_raise_value_errors():
    with pytest.raises(ArgumentError, match="mode"):
        torchmsa.pairwise_align("AC", "AC", mode="glocal")
    with pytest.raises(ArgumentError, match="equal counts"):
        torchmsa.pairwise_align(["AC", "D"], ["AC"])
    with pytest.raises(ScoringError, match="gap_open"):
        torchmsa.pairwise_align("AC", "AC", gap_open=-1)
    with pytest.raises(ScoringError, match="gap_extend"):
        torchmsa.pairwise_align("AC", "AC", gap_open=1, gap_extend=2)
    with pytest.raises(ScoringError, match="matrix"):
        torchmsa.pairwise_align("AC", "AC", matrix="BLOSUM999")
    with pytest.raises(InvalidCharacterError) as err:
        torchmsa.pairwise_align(["ACD", "AC#D"], ["ACD", "ACD"], seqtype="protein")
    assert (err.value.name, err.value.position, err.value.character) == ("a[1]", 3, "#")
    assert isinstance(err.value, ValueError)


def test_tensor_launchers_shapes_and_dtypes():
    mat = torch.from_numpy(get_scoring("protein").matrix.copy())
    ca = torch.randint(0, 20, (3, 7), dtype=torch.uint8)
    cb = torch.randint(0, 20, (3, 5), dtype=torch.uint8)
    la, lb = torch.tensor([7, 0, 3], dtype=torch.int32), torch.tensor([5, 5, 0], dtype=torch.int32)
    out = dp.pairwise_score(ca, la, cb, lb, mat, 10, 1, GLOBAL)
    assert out.dtype == torch.int32 and out.shape == (3, 3)
    info, ops = dp.pairwise_align(ca, la, cb, lb, mat, 10, 1, GLOBAL)
    assert info.shape == (3, 6) and ops.shape == (3, 12) and ops.dtype == torch.uint8
    assert torch.equal(info[:, 0], out[:, 0])
    assert 7 <= info[0, 1] <= 12 and info[1:, 1].tolist() == [5, 3]


@pytest.mark.parametrize("mode", MODES)
def test_row_vectorised_fill_equals_scalar_fill(mode):
    from torchmsa.cpu import dp_rows

    rng = np.random.default_rng(11)
    for _ in range(300):
        n, m = (int(x) for x in rng.integers(0, 15, 2))
        S = rng.integers(-6, 7, size=(n, m)).astype(np.int32)
        ext = int(rng.integers(0, 4))  # often above open + close: the scalar fallback rows
        oa, ob = (
            rng.integers(0, 8, n + 1).astype(np.int32),
            rng.integers(0, 8, m + 1).astype(np.int32),
        )
        ca, cb = (
            rng.integers(0, 3, n + 1).astype(np.int32),
            rng.integers(0, 3, m + 1).astype(np.int32),
        )
        ra, rb = _residue_factors(rng, n, m)
        t1, t2 = np.zeros((n + 1, m + 1), np.uint8), np.zeros((n + 1, m + 1), np.uint8)
        r1 = dp.fill_scalar(n, m, S, oa, ca, ob, cb, ra, rb, ext, MODE_CODES[mode], t1)
        r2 = dp_rows.fill_rows(n, m, S, oa, ca, ob, cb, ra, rb, ext, MODE_CODES[mode], t2)
        assert r1 == r2
        assert np.array_equal(t1[1:, 1:], t2[1:, 1:])
        a = rng.integers(0, 20, n).astype(np.uint8)
        b = rng.integers(0, 20, m).astype(np.uint8)
        mat = get_scoring("protein").matrix
        go, ge = (int(x) for x in rng.integers(0, 6, 2))
        args = (a, n, b, m, mat, go, ge, MODE_CODES[mode])
        assert dp.pair_score_scalar(*args) == dp_rows.pair_score_rows(*args)


def test_prefix_max_equals_a_running_maximum():
    from torchmsa.cpu import dp_rows

    rng = np.random.default_rng(13)
    for m in list(range(42)) + [301, 1000]:
        u = rng.integers(-(1 << 30), 1 << 30, m + 1).astype(np.int32)
        e = np.full(m + 1, 7, np.int32)
        dp_rows.prefix_max(u, e, m)
        want = np.maximum.accumulate(np.maximum(u[:m], NEG))
        assert e[0] == 7 and np.array_equal(e[1:], want)


def test_path_score_of_the_optimal_path_is_the_dp_score():
    rng = np.random.default_rng(12)
    for _ in range(400):
        n, m = (int(x) for x in rng.integers(0, 12, 2))
        S = rng.integers(-6, 7, size=(n, m)).astype(np.int32)
        ext = int(rng.integers(0, 4))
        oa, ob = (
            rng.integers(0, 8, n + 1).astype(np.int32),
            rng.integers(0, 8, m + 1).astype(np.int32),
        )
        ca, cb = (
            rng.integers(0, 3, n + 1).astype(np.int32),
            rng.integers(0, 3, m + 1).astype(np.int32),
        )
        ra, rb = _residue_factors(rng, n, m)
        ops = np.zeros(n + m, np.uint8)
        score, k, *_ = dp.profile_align_one(S, oa, ca, ob, cb, ra, rb, ext, GLOBAL, ops)
        assert path_score(S, oa, ca, ob, cb, ra, rb, ext, ops, k) == score
        # any other path scores no higher
        other = rng.permutation([0] * min(n, m) + [1] * (n - min(n, m)) + [2] * (m - min(n, m)))
        other = other.astype(np.uint8)
        assert path_score(S, oa, ca, ob, cb, ra, rb, ext, other, len(other)) <= score


@pytest.mark.parametrize("seqtype", ["auto", "protein"])
@pytest.mark.parametrize(
    "a, b, named",
    [
        (["MKV", 5], ["MKV", "MKA"], "'a[1]' (#2) is a int"),
        ([b"MKV"], ["MKV"], "'a[0]' (#1) is a bytes"),
        (["MKV"], [None], "'b[0]' (#1) is a NoneType"),
    ],
)
def test_pairwise_align_names_an_item_that_is_not_a_string(a, b, named, seqtype):
    """Also when the alphabet is detected: a torchmsa error naming the item, not Python's
    TypeError from joining the texts."""
    with pytest.raises(ArgumentError, match="not a string") as exc:
        torchmsa.pairwise_align(a, b, seqtype=seqtype)
    assert named in str(exc.value)
