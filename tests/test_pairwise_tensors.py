"""The tensor-level pairwise API (``encode_sequences``, ``pairwise_scores``,
``pairwise_traceback``) and the vectorised string path of ``pairwise_align`` built on it: both
against the per-sequence reference (``encode`` one by one, ``ops_to_rows`` pair by pair) and the
plain-Python oracle.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import torchmsa
from torchmsa.alphabet import DNA, PROTEIN, detect_seqtype, encode, get_alphabet
from torchmsa.constants import MODES as MODE_CODES
from torchmsa.errors import AlphabetError, ArgumentError, DeviceError, InvalidCharacterError
from torchmsa.ops.pairwise import (
    PairwiseAlignment,
    pairwise_align_codes,
    pairwise_score_codes,
    rows_from_ops,
)
from torchmsa.scoring import get_scoring

from oracles import align as oracle_align
from oracles import ops_to_rows, pair_inputs

MODES = ["global", "local", "semiglobal"]
AMINO = "ARNDCQEGHILKMFPSTWYV"
# letters of each alphabet, either case, and the gap characters that input may hold
POOLS = {
    "protein": PROTEIN.letters + PROTEIN.letters.lower() + "-.",
    "dna": "ACGTN" * 4 + "acgtnRYKM" + "-.",
    "rna": "ACGUN" * 4 + "acgunRY" + "-.",
}
BAD = ["#", "1", " ", "é", "~", "\n"]


def _random_seqs(rng, pool: str, n: int, max_len: int) -> list[str]:
    return ["".join(rng.choice(list(pool), int(rng.integers(0, max_len + 1)))) for _ in range(n)]


def _related_pairs(rng, n: int, max_len: int) -> tuple[list[str], list[str]]:
    """Protein pairs, b often a mutated copy of a (alignments with structure), some empty, some
    with lower case and gap characters."""
    a, b = [], []
    for _ in range(n):
        x = "".join(rng.choice(list(AMINO), int(rng.integers(0, max_len + 1))))
        y = "".join(c for c in x if rng.random() > 0.2) if rng.random() < 0.6 else x[::-1]
        if rng.random() < 0.3:
            y = y.lower()
        if x and rng.random() < 0.3:
            k = int(rng.integers(len(x)))
            x = x[:k] + "-." + x[k:]
        a.append(x)
        b.append(y)
    return a, b


def _reference_align(a, b, *, mode, traceback, seqtype="auto", **kw):
    """``pairwise_align`` as it was before vectorising: one ``encode`` per sequence, one padded
    row per sequence, one ``ops_to_rows`` per pair (same dispatchers underneath)."""
    alphabet = detect_seqtype(a + b) if seqtype == "auto" else get_alphabet(seqtype)
    scoring = get_scoring(alphabet, kw.get("matrix"), kw.get("gap_open"), kw.get("gap_extend"))
    enc_a = [encode(s, alphabet, f"a[{k}]", k) for k, s in enumerate(a)]
    enc_b = [encode(s, alphabet, f"b[{k}]", k) for k, s in enumerate(b)]

    def pad(enc):
        out = torch.full((len(enc), max([1] + [len(c) for c, _ in enc])), alphabet.gap_code)
        for i, (c, _) in enumerate(enc):
            out[i, : len(c)] = torch.from_numpy(c)
        return out.to(torch.uint8), torch.tensor([len(c) for c, _ in enc], dtype=torch.int32)

    mat = torch.from_numpy(scoring.matrix.copy())
    args = (*pad(enc_a), *pad(enc_b), mat, scoring.gap_open, scoring.gap_extend)
    results = []
    if not traceback:
        for k, (score, ei, ej) in enumerate(
            pairwise_score_codes(*args, MODE_CODES[mode], "cpu").tolist()
        ):
            if mode != "local":
                ranges = (0, len(enc_a[k][0])), (0, len(enc_b[k][0]))
            else:
                ranges = (None, ei), (None, ej)
            results.append(PairwiseAlignment(score, None, *ranges))
        return results
    info, ops = pairwise_align_codes(*args, MODE_CODES[mode], "cpu")
    for k, (score, n_ops, si, sj, ei, ej) in enumerate(info.tolist()):
        rows = ops_to_rows(ops[k, :n_ops].numpy(), enc_a[k][1], enc_b[k][1], si, sj)
        if mode != "local":
            ei, ej = len(enc_a[k][0]), len(enc_b[k][0])
        results.append(PairwiseAlignment(score, rows, (si, ei), (sj, ej)))
    return results


@pytest.mark.parametrize("traceback", [False, True], ids=["score", "traceback"])
@pytest.mark.parametrize("mode", MODES)
def test_list_api_equals_the_per_sequence_reference(mode, traceback):
    rng = np.random.default_rng(MODE_CODES[mode] * 2 + traceback)
    for _ in range(6):
        a, b = _related_pairs(rng, int(rng.integers(1, 30)), 40)
        go, ge = (10, 1) if rng.random() < 0.5 else (5, 2)
        kw = dict(mode=mode, traceback=traceback, gap_open=go, gap_extend=ge)
        got = torchmsa.pairwise_align(a, b, device="cpu", **kw)
        assert got == _reference_align(a, b, **kw)
        assert all(type(r.score) is int and type(r.a_range[1]) is int for r in got)


@pytest.mark.parametrize("seqtype", ["dna", "rna"])
def test_list_api_on_nucleotides_equals_the_reference(seqtype):
    rng = np.random.default_rng(len(seqtype))
    a, b = (_random_seqs(rng, POOLS[seqtype], 25, 30) for _ in range(2))
    for mode in MODES:
        for traceback in (False, True):
            for st in ("auto", seqtype):
                kw = dict(mode=mode, traceback=traceback, seqtype=st)
                assert torchmsa.pairwise_align(a, b, device="cpu", **kw) == _reference_align(
                    a, b, **kw
                )


@pytest.mark.parametrize("mode", MODES)
def test_tensor_api_equals_the_list_api(mode):
    rng = np.random.default_rng(20 + MODE_CODES[mode])
    a, b = _related_pairs(rng, 40, 50)
    ea = torchmsa.encode_sequences(a, seqtype="protein")
    eb = torchmsa.encode_sequences(b, seqtype=ea.seqtype)
    tensors = (ea.codes, ea.lengths, eb.codes, eb.lengths)
    scores = torchmsa.pairwise_scores(*tensors, mode=mode, gap_open=5, gap_extend=2)
    full = torchmsa.pairwise_traceback(*tensors, mode=mode, gap_open=5, gap_extend=2)
    ref = torchmsa.pairwise_align(a, b, mode=mode, gap_open=5, gap_extend=2, device="cpu")
    assert all(t.dtype == torch.int32 and t.shape == (40,) for t in (*scores, *full[:6]))
    assert full.ops.dtype == torch.uint8
    assert full.ops.shape == (40, ea.codes.shape[1] + eb.codes.shape[1])
    assert scores.score.tolist() == full.score.tolist() == [r.score for r in ref]
    assert scores.end_a.tolist() == full.end_a.tolist() == [r.a_range[1] for r in ref]
    assert scores.end_b.tolist() == full.end_b.tolist() == [r.b_range[1] for r in ref]
    assert full.start_a.tolist() == [r.a_range[0] for r in ref]
    assert full.start_b.tolist() == [r.b_range[0] for r in ref]
    res_a = [s.replace("-", "").replace(".", "") for s in a]
    res_b = [s.replace("-", "").replace(".", "") for s in b]
    rows = rows_from_ops(full.ops, full.n_ops, res_a, res_b, full.start_a, full.start_b)
    assert rows == [r.aligned for r in ref]
    for p in range(40):  # nothing but zeros after a pair's ops
        assert not full.ops[p, full.n_ops[p] :].any()


@pytest.mark.parametrize("mode", MODES)
def test_tensor_api_matches_the_oracle(mode):
    rng = np.random.default_rng(30 + MODE_CODES[mode])
    mat = get_scoring("protein").matrix
    pairs = [_related_pairs(rng, 1, 10) for _ in range(60)]
    a, b = [x[0][0].replace("-", "").replace(".", "") for x in pairs], [x[1][0] for x in pairs]
    ea, eb = (torchmsa.encode_sequences(s, seqtype="protein") for s in (a, b))
    tensors = (ea.codes, ea.lengths, eb.codes, eb.lengths)
    got = torchmsa.pairwise_traceback(*tensors, mode=mode, gap_open=3, gap_extend=1)
    scores = torchmsa.pairwise_scores(*tensors, mode=mode, gap_open=3, gap_extend=1)
    for p, (x, y) in enumerate(zip(a, b)):
        ca, cb = encode(x, PROTEIN)[0], encode(y, PROTEIN)[0]
        score, ops, start, end = oracle_align(*pair_inputs(ca, cb, mat, 3, 1), mode)
        if mode != "local":
            end = (len(ca), len(cb))
        k = int(got.n_ops[p])
        assert (int(got.score[p]), got.ops[p, :k].tolist()) == (score, ops), (x, y)
        assert (int(got.start_a[p]), int(got.start_b[p])) == start
        assert (int(got.end_a[p]), int(got.end_b[p])) == end
        assert (int(scores.score[p]), int(scores.end_a[p]), int(scores.end_b[p])) == (score, *end)


def test_hand_computed_dna_example():
    a, b = (torchmsa.encode_sequences([s], seqtype="dna") for s in ("GAT", "GT"))
    r = torchmsa.pairwise_traceback(
        a.codes, a.lengths, b.codes, b.lengths, gap_open=3, gap_extend=1, seqtype="dna"
    )
    assert (r.score.item(), r.ops[0, : r.n_ops[0]].tolist()) == (7, [0, 1, 0])


@pytest.mark.parametrize("seqtype", ["protein", "dna", "rna", "auto"])
def test_encode_sequences_equals_encode_one_by_one(seqtype):
    rng = np.random.default_rng(40 + len(seqtype))
    for _ in range(40):
        pool = POOLS[seqtype if seqtype != "auto" else str(rng.choice(list(POOLS)))]
        seqs = _random_seqs(rng, pool, int(rng.integers(0, 8)), 20)
        alphabet = detect_seqtype(seqs) if seqtype == "auto" else get_alphabet(seqtype)
        enc = torchmsa.encode_sequences(seqs, seqtype=seqtype)
        one = [encode(s, alphabet)[0] for s in seqs]
        assert enc.seqtype == alphabet.name
        assert enc.codes.dtype == torch.uint8 and enc.lengths.dtype == torch.int32
        assert enc.codes.shape == (len(seqs), max([1] + [len(c) for c in one]))
        assert enc.lengths.tolist() == [len(c) for c in one]
        for row, c in zip(enc.codes.tolist(), one):
            assert row == c.tolist() + [alphabet.gap_code] * (enc.codes.shape[1] - len(c))


def _plant(rng, seqs: list[str]) -> None:
    k = int(rng.integers(len(seqs)))
    at = int(rng.integers(len(seqs[k]) + 1))
    seqs[k] = seqs[k][:at] + str(rng.choice(BAD)) + seqs[k][at:]


def _first_error(seqs_by_label, alphabet):
    try:
        for label, seqs in seqs_by_label:
            for k, s in enumerate(seqs):
                encode(s, alphabet, f"{label}[{k}]", k)
    except InvalidCharacterError as err:
        return err
    return None


@pytest.mark.parametrize("seqtype", ["protein", "dna", "auto"])
def test_bad_characters_raise_the_per_sequence_error(seqtype):
    rng = np.random.default_rng(50 + len(seqtype))
    pool = POOLS["dna" if seqtype == "dna" else "protein"]
    for _ in range(40):
        n = int(rng.integers(1, 6))
        a, b = _random_seqs(rng, pool, n, 15), _random_seqs(rng, pool, n, 15)
        for side in (a, b):
            if rng.random() < 0.6:
                _plant(rng, side)
        alphabet = detect_seqtype(a + b) if seqtype == "auto" else get_alphabet(seqtype)
        want = _first_error([("a", a), ("b", b)], alphabet)
        if want is None:
            continue
        with pytest.raises(InvalidCharacterError) as got:
            torchmsa.pairwise_align(a, b, seqtype=seqtype, device="cpu")
        assert str(got.value) == str(want)
        assert (got.value.name, got.value.index, got.value.position) == (
            want.name,
            want.index,
            want.position,
        )
        alphabet = detect_seqtype(a) if seqtype == "auto" else alphabet
        want = _first_error([("seqs", a)], alphabet)
        if want is not None:
            with pytest.raises(InvalidCharacterError, match=r"'seqs\[\d+\]'") as got:
                torchmsa.encode_sequences(a, seqtype=seqtype)
            assert str(got.value) == str(want)


@pytest.mark.parametrize("per_thread", [None, 1, 7], ids=["one-thread", "1-op", "7-ops"])
def test_rows_from_ops_equals_ops_to_rows_on_random_ops(per_thread, monkeypatch):
    """Filled by one thread, or (a few ops per thread) by several threads over contiguous
    ranges of pairs: the same rows."""
    from torchmsa.ops import pairwise

    if per_thread is not None:
        monkeypatch.setattr(pairwise, "ROWS_PER_THREAD", per_thread)
        monkeypatch.setattr("numba.get_num_threads", lambda: 4)
    rng = np.random.default_rng(60)
    for _ in range(30):
        P = int(rng.integers(0, 12))
        ops = np.zeros((P, 40), np.uint8)
        n_ops, a, b, sa, sb = [], [], [], [], []
        for p in range(P):
            k = int(rng.integers(0, 41))
            ops[p, :k] = rng.integers(0, 3, k)
            used_a = int(np.sum(ops[p, :k] != 2))
            used_b = int(np.sum(ops[p, :k] != 1))
            sa.append(int(rng.integers(0, 4)))
            sb.append(int(rng.integers(0, 4)))
            a.append("".join(rng.choice(list("ACDEacde"), sa[-1] + used_a + int(rng.integers(3)))))
            b.append("".join(rng.choice(list("WYKLwykl"), sb[-1] + used_b + int(rng.integers(3)))))
            n_ops.append(k)
        want = [ops_to_rows(ops[p, : n_ops[p]], a[p], b[p], sa[p], sb[p]) for p in range(P)]
        assert rows_from_ops(ops, n_ops, a, b, sa, sb) == want
        if P:
            starts_zero = [ops_to_rows(ops[p, : n_ops[p]], a[p], b[p]) for p in range(P)]
            assert rows_from_ops(torch.from_numpy(ops), n_ops, a, b) == starts_zero


def test_rows_past_a_text_name_the_first_such_pair_for_any_thread_count(monkeypatch):
    from torchmsa.ops import pairwise

    ops = np.zeros((6, 4), np.uint8)  # four matches each
    a, b = ["ACDE"] * 6, ["WYKL"] * 6
    a[3] = a[5] = "AC"  # pairs 3 and 5 need more of a than they hold
    for per_thread in (1 << 20, 1):
        monkeypatch.setattr(pairwise, "ROWS_PER_THREAD", per_thread)
        monkeypatch.setattr("numba.get_num_threads", lambda: 3)
        with pytest.raises(ValueError, match="pair 3's ops use more residues"):
            # texts joined: pair 3 runs into pair 4's letters unless it is the last one;
            # starts past the end make both bad pairs read past the joined text
            rows_from_ops(ops, [4] * 6, a, b, [0, 0, 0, 30, 0, 30], [0] * 6)


def test_empty_sequences_and_empty_lists():
    assert torchmsa.pairwise_align([], [], device="cpu") == []
    assert torchmsa.pairwise_align([], [], traceback=False, device="cpu") == []
    for a, b in ((["", "", ""], ["", "AC", "-"]), (["", "A-"], ["", ""])):
        for mode in MODES:
            for tb in (False, True):
                kw = dict(mode=mode, traceback=tb)
                assert torchmsa.pairwise_align(a, b, device="cpu", **kw) == _reference_align(
                    a, b, **kw
                )
    enc = torchmsa.encode_sequences([])
    assert enc.codes.shape == (0, 1) and enc.lengths.shape == (0,) and enc.seqtype == "protein"
    enc = torchmsa.encode_sequences(["", "-."], seqtype="dna")
    assert enc.codes.tolist() == [[DNA.gap_code]] * 2 and enc.lengths.tolist() == [0, 0]
    empty = torch.zeros((0, 3), dtype=torch.uint8), torch.zeros(0, dtype=torch.int32)
    r = torchmsa.pairwise_scores(*empty, *empty, mode="local")
    assert [t.shape for t in r] == [(0,)] * 3
    r = torchmsa.pairwise_traceback(*empty, *empty)
    assert r.ops.shape == (0, 6) and r.n_ops.shape == (0,)
    # codes of width 0: every length is 0
    zero = torch.zeros((2, 0), dtype=torch.uint8), torch.zeros(2, dtype=torch.int32)
    b = torchmsa.encode_sequences(["ACD", ""])
    r = torchmsa.pairwise_traceback(*zero, b.codes, b.lengths)
    assert r.score.tolist() == [-12, 0] and r.ops.shape == (2, 3)
    assert r.ops[0].tolist() == [2, 2, 2]


def test_tensor_arguments_are_checked():
    ca, cb = torch.zeros((2, 4), dtype=torch.uint8), torch.zeros((2, 3), dtype=torch.uint8)
    la, lb = torch.tensor([4, 1]), torch.tensor([3, 0], dtype=torch.int32)  # int64 is fine
    ref = torchmsa.pairwise_align(["AAAA", "A"], ["AAA", ""], seqtype="protein", device="cpu")
    want = [r.score for r in ref]
    assert torchmsa.pairwise_scores(ca, la, cb, lb).score.tolist() == want
    calls = [
        ((ca.long(), la, cb, lb), {}, r"`codes_a` must be a uint8 \[P, L\] tensor"),
        ((ca, la, cb[0], lb), {}, r"`codes_b` must be a uint8 \[P, L\] tensor"),
        ((ca, la.float(), cb, lb), {}, r"`len_a` must be an integer \[P\] tensor with P = 2"),
        ((ca, la, cb, lb[:1]), {}, r"`len_b` must be an integer \[P\] tensor"),
        ((ca, la, cb[:1], lb[:1]), {}, "hold 2 and 1 sequences"),
        ((ca.numpy(), la, cb, lb), {}, "`codes_a` is a ndarray, not a torch.Tensor"),
        ((ca, torch.tensor([5, 1]), cb, lb), {}, r"`len_a\[0\]` is 5 but must lie in 0\.\.4"),
        ((ca, la, cb, torch.tensor([3, -1])), {}, r"`len_b\[1\]` is -1"),
        ((ca, la, cb, lb), {"seqtype": "auto"}, "codes carry no letters"),
        ((ca, la, cb, lb), {"mode": "glocal"}, "`mode`"),
        ((ca, la, cb, lb), {"backend": "gpu"}, "`backend`"),
    ]
    for args, kw, message in calls:
        for fn in (torchmsa.pairwise_scores, torchmsa.pairwise_traceback):
            with pytest.raises(ArgumentError, match=message):
                fn(*args, **kw)
    bad = cb.clone()
    bad[0, 2] = PROTEIN.gap_code  # inside len_b[0] = 3
    with pytest.raises(ArgumentError, match=r"`codes_b\[0, 2\]` is 27, inside `len_b\[0\]`"):
        torchmsa.pairwise_traceback(ca, la, bad, lb)
    bad[1, 1] = 200  # past len_b[1] = 0: padding, never read
    with pytest.raises(ArgumentError, match=r"dna alphabet's residue codes are 0\.\.15"):
        torchmsa.pairwise_scores(ca, la, bad, lb, seqtype="dna")
    bad[0, 2] = 0
    assert torchmsa.pairwise_scores(ca, la, bad, lb).score.tolist() == want
    wide = torch.zeros((1, 300), dtype=torch.uint8)
    for dtype in (torch.uint8, torch.int16):  # compared as int64, not wrapped to the dtype
        n = torch.tensor([250], dtype=dtype)
        assert torchmsa.pairwise_scores(wide, n, wide, n).score.tolist() == [250 * 4]
    with pytest.raises(ArgumentError, match=r"`len_a\[0\]` is 3000 but must lie in 0\.\.300"):
        torchmsa.pairwise_scores(wide, torch.tensor([3000], dtype=torch.int16), wide, n)
    with pytest.raises(AlphabetError):
        torchmsa.pairwise_scores(ca, la, cb, lb, seqtype="amino")
    with pytest.raises(ArgumentError, match="one string"):
        torchmsa.encode_sequences("ACD")
    with pytest.raises(ArgumentError, match=r"'seqs\[1\]' \(#2\) is a int"):
        torchmsa.encode_sequences(["ACD", 7])


def test_tensor_api_wrong_backend_for_the_device(monkeypatch):
    ca, la = torch.zeros((1, 2), dtype=torch.uint8), torch.tensor([2])
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    with pytest.raises(DeviceError, match="backend='triton'"):
        torchmsa.pairwise_scores(ca, la, ca, la, backend="triton")


@pytest.mark.interpreter
def test_tensor_api_on_triton_equals_cpu(device):
    rng = np.random.default_rng(70)
    a, b = _related_pairs(rng, 5, 9)
    a[0], b[1] = "", ""
    ea = torchmsa.encode_sequences(a, seqtype="protein", device=device)
    eb = torchmsa.encode_sequences(b, seqtype="protein", device=device)
    zero = torch.zeros((5, 0), dtype=torch.uint8, device=device)
    cases = [
        (torchmsa.pairwise_scores, (ea.codes, ea.lengths, eb.codes, eb.lengths), "local"),
        (torchmsa.pairwise_traceback, (ea.codes, ea.lengths, eb.codes, eb.lengths), "local"),
        (torchmsa.pairwise_traceback, (zero, 0 * ea.lengths, eb.codes, eb.lengths), "global"),
    ]
    for fn, tensors, mode in cases:
        got = fn(*tensors, mode=mode, backend="triton")
        want = fn(*tensors, mode=mode, backend="cpu")
        assert all(g.device == ea.codes.device for g in got)
        assert all(torch.equal(g.cpu(), w.cpu()) for g, w in zip(got, want)), (fn, mode)
