"""ML features (torchmsa.features) against hand-computed cases and the plain-Python oracles
of tests/feature_oracles.py: identity, weights / Neff, filters, diverse selection, AlphaFold's
feature layout, PSSM."""

from __future__ import annotations

import doctest
import math
import random

import pytest
import torch

from tests import feature_oracles as oracle
from torchmsa import features
from torchmsa.alignment import Alignment
from torchmsa.errors import AlphabetError, ArgumentError, ResourceError
from torchmsa.features import alphafold, filters, identity, logodds, read, weights

AA = "ACDEFGHIKLMNPQRSTVWY"
GAP = 27


def family(seed: int, n: int, width: int, letters: str = AA, gap: float = 0.15, mut=0.3):
    """Rows mutated from one ancestor (so identities spread over 0..1), with gaps."""
    rng = random.Random(seed)
    anc = [rng.choice(letters) for _ in range(width)]
    rows = []
    for _ in range(n):
        m = rng.random() * mut * 2
        row = [rng.choice(letters) if rng.random() < m else c for c in anc]
        row = ["-" if rng.random() < gap else c for c in row]
        rows.append("".join(row))
    return rows


def aln_of(rows):
    return Alignment.from_rows([f"s{i}" for i in range(len(rows))], rows, seqtype="protein")


def test_doctests():
    for module in (identity, weights, filters, read, alphafold, logodds):
        result = doctest.testmod(module)
        assert result.failed == 0, module.__name__


def test_identity_by_hand():
    aln = aln_of(["ACDE", "AC--", "GCDX", "----"])
    ident = aln.identity()
    # aligned: same / both-residue columns
    assert ident[0].tolist() == [1.0, 1.0, 0.5, 0.0]
    assert ident[1, 2].item() == pytest.approx(1 / 2)
    assert aln.identity("width")[0].tolist() == [1.0, 0.5, 0.5, 0.0]
    assert aln.identity("shorter")[0, 1].item() == 1.0  # 2 same / min(4, 2)
    assert aln.identity("hamming")[1].tolist() == [0.5, 1.0, 0.25, 0.5]
    assert aln.identity("hamming")[3, 3].item() == 1.0


@pytest.mark.parametrize("definition", identity.DEFINITIONS)
@pytest.mark.parametrize("dtype", [torch.int8, torch.float32, torch.float16, torch.bfloat16])
def test_identity_matches_oracle(definition, dtype):
    rows = family(1, 23, 300 if dtype == torch.bfloat16 else 41)
    aln = aln_of(rows)
    # a small budget forces several tiles; bfloat16 needs column chunks of 256 for exactness
    got = features.identity_matrix(
        aln.codes, GAP, definition=definition, budget=4_000_000, compute_dtype=dtype,
        dtype=torch.float64,
    )  # fmt: skip
    want = [[oracle.identity(a, b, definition) for b in rows] for a in rows]
    assert got.tolist() == want


def test_identity_tiles_and_budget():
    rows = family(2, 40, 30)
    codes = aln_of(rows).codes
    pairs = identity.PairIdentity(codes, GAP, budget=100_000)
    assert 16 <= pairs.rows < 40  # more than one tile
    full = features.identity_matrix(codes, GAP, dtype=torch.float64)
    some = features.identity_to_rows(codes, GAP, [3, 0], budget=100_000)
    assert torch.equal(some, full[[3, 0]])
    with pytest.raises(ResourceError, match="raise the memory budget"):
        identity.PairIdentity(codes, GAP, budget=1000)
    with pytest.raises(ArgumentError, match="definition"):
        features.identity_matrix(codes, GAP, definition="blast")
    with pytest.raises(ArgumentError, match="outside"):
        features.identity_matrix(codes, 20)


def test_weights_by_hand():
    aln = aln_of(["AAAAA", "AAAAC", "AAACC", "CCCCC"])
    # aligned identities with row 0: 1, 0.8, 0.6, 0
    # row 1 has two neighbours at 0.8 (rows 0 and 2); rows 0 and 2 share 0.6
    assert aln.sequence_weights(0.8).tolist() == [0.5, 1 / 3, 0.5, 1.0]
    assert aln.sequence_weights(0.6).tolist() == [1 / 3, 1 / 3, 1 / 3, 1.0]
    assert aln.neff(0.8) == pytest.approx(7 / 3)
    assert aln.neff(0.8, normalize=True) == pytest.approx(7 / 3 / math.sqrt(5))
    both = aln.sequence_weights([0.6, 0.8])
    assert both.shape == (2, 4) and both[1].tolist() == [0.5, 1 / 3, 0.5, 1.0]


@pytest.mark.parametrize("theta", [0.62, 0.8, 0.9])
@pytest.mark.parametrize("definition", ["aligned", "hamming", "width"])
def test_weights_match_oracle(theta, definition):
    rows = family(3, 20, 29, gap=0.03, mut=0.1) + family(9, 17, 29, gap=0.1, mut=0.3)
    codes = aln_of(rows).codes
    got = features.sequence_weights(codes, GAP, theta, definition=definition, budget=300_000)
    want = oracle.weights(rows, theta, definition)
    assert got.tolist() == want
    assert features.neff(codes, GAP, theta, definition=definition).item() == pytest.approx(
        sum(want)
    )
    assert len(set(want)) > 1  # the case exercises the threshold


def test_weights_checks():
    codes = aln_of(["AC", "AD"]).codes
    for bad in (1.5, -0.1, [], float("nan")):
        with pytest.raises(ArgumentError, match="theta"):
            features.sequence_weights(codes, GAP, bad)


def test_filter_by_hand():
    aln = aln_of(["AAAAAA", "AAAAAC", "AAAACC", "CCCCCC", "A-----", "AAAAAA"])
    # s1 is 5/6 identical to s0, s4 (one residue) and s5 are 1.0 identical to it
    assert aln.filter(max_identity=0.9).names == ["s0", "s1", "s2", "s3"]
    assert aln.filter(max_identity=0.8).names == ["s0", "s2", "s3"]
    assert aln.filter(min_coverage=0.5).names == ["s0", "s1", "s2", "s3", "s5"]
    assert aln.filter(min_query_identity=0.5).names == ["s0", "s1", "s2", "s4", "s5"]
    assert aln.filter(max_identity=0.8, max_seqs=2).names == ["s0", "s2"]
    assert aln.filter(max_identity=0.8, query=5).names == ["s2", "s3", "s5"]
    with pytest.raises(ArgumentError, match="max_identity"):
        aln.filter(max_identity=90)
    with pytest.raises(ArgumentError, match="max_seqs"):
        aln.filter(max_seqs=0)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"max_identity": 0.7},
        {"max_identity": 0.5, "min_coverage": 0.8},
        {"min_query_identity": 0.4, "max_seqs": 30, "max_identity": 0.9},
        {"max_identity": 0.6, "query": 4, "definition": "hamming"},
    ],
)
def test_filter_matches_oracle(kwargs):
    rows = family(4, 120, 14, letters="ACDE", gap=0.1)
    got = features.filter_rows(aln_of(rows).codes, GAP, budget=600_000, **kwargs)
    want = oracle.hhfilter(rows, **kwargs)
    assert got.tolist() == want
    assert 1 < len(want) < len(rows)


@pytest.mark.parametrize("budget", [2_000_000, 8_000_000])
def test_filter_across_blocks(budget):
    # 300 rows: two tiles (2 MB), or one tile of two round blocks of up to 256 rows (8 MB)
    rows = family(5, 300, 10, letters="AC", gap=0.0, mut=0.2)
    codes = aln_of(rows).codes
    tile = identity.PairIdentity(codes, GAP, budget=budget).rows
    assert (tile < 300) if budget == 2_000_000 else (tile == 300)
    got = features.filter_rows(codes, GAP, max_identity=0.8, budget=budget)
    assert got.tolist() == oracle.hhfilter(rows, max_identity=0.8)


@pytest.mark.parametrize("criterion", ["mean", "min"])
def test_select_diverse_matches_oracle(criterion):
    rows = family(6, 60, 25, letters="ACDEF", gap=0.2)
    got = features.select_diverse(aln_of(rows).codes, 12, criterion=criterion)
    assert got.tolist() == oracle.greedy_select(rows, 12, criterion)
    assert aln_of(rows).select_diverse(100).names == [f"s{i}" for i in range(60)]


def test_select_diverse_by_hand():
    aln = aln_of(["AAAA", "AAAC", "CCCC", "AACC", "CCCA"])
    # from s0: s2 (4 differences), then mean: s4 (3 + 1) beats s3 (2 + 2) by index order? no:
    # s1: 1 + 3 = 4, s3: 2 + 2 = 4, s4: 3 + 1 = 4 -> the first, s1
    assert aln.select_diverse(3).names == ["s0", "s1", "s2"]
    # min: s1 min(1, 3) = 1, s3 min(2, 2) = 2, s4 min(3, 1) = 1 -> s3
    assert aln.select_diverse(3, criterion="min").names == ["s0", "s2", "s3"]
    with pytest.raises(ArgumentError, match="criterion"):
        aln.select_diverse(2, criterion="max")


def test_alphafold_ids_and_one_hot():
    aln = aln_of(["ARNDCQEGHILKMFPSTWYV", "BZXUOJ*-AAAAAAAAAAAA"])
    ids = features.alphafold_ids(aln.codes)
    assert ids[0].tolist() == list(range(20))
    assert ids[1, :8].tolist() == [3, 6, 20, 4, 20, 20, 20, 21]
    assert ids.tolist() == [[oracle.af_id(c) for c in r] for r in aln.rows]
    hot = features.alphafold_one_hot(ids, 23)
    assert hot.shape == (2, 20, 23) and hot[1, 7, 21] == 1 and hot[..., 22].sum() == 0
    assert features.alphafold_one_hot(ids, 21)[1, 7].sum() == 0  # a gap in the 21 classes
    assert features.alphafold_one_hot(ids, 22).shape[-1] == 22
    assert features.deletion_value(torch.tensor([0, 3])).tolist() == [0.0, pytest.approx(0.5)]


def test_alphafold_features_by_hand():
    # centres: rows 0, 1; extras 2 (agrees with 0 at 3 columns, with 1 at 1) and 3 (tie: 0)
    aln = Alignment.from_rows(
        ["q", "a", "b", "c"],
        ["ACDE", "WWWE", "ACDW", "----"],
        deletion_matrix=[[0, 0, 0, 0], [0, 3, 0, 0], [1, 0, 0, 0], [0, 0, 0, 6]],
    )
    f = aln.alphafold_features(max_clusters=2, shuffle=False)
    assert f["cluster_assignment"].tolist() == [0, 0]
    assert f["msa_rows"].tolist() == [0, 1] and f["extra_rows"].tolist() == [2, 3]
    count = 1e-6 + 3  # the centre and two extra rows
    assert f["cluster_profile"][0, 0, 0].item() == pytest.approx(2 / count)  # A, A, gap
    assert f["cluster_profile"][0, 0, 21].item() == pytest.approx(1 / count)
    assert f["cluster_profile"][1, 0, 17].item() == pytest.approx(1 / (1e-6 + 1))  # W
    assert f["cluster_deletion_mean"][0].tolist() == pytest.approx([1 / count, 0, 0, 6 / count])
    assert f["has_deletion"][1].tolist() == [0.0, 1.0, 0.0, 0.0]
    assert f["deletion_value"][1, 1].item() == pytest.approx(0.5)
    assert f["msa_feat"].shape == (2, 4, 49)
    assert f["target_feat"].shape == (4, 22) and f["target_feat"][:, 0].sum() == 0
    assert f["target_feat"][0, 1 + 0] == 1  # A
    assert f["extra_msa"].tolist() == [[0, 4, 3, 17], [21] * 4]
    assert f["aatype"].tolist() == [0, 4, 3, 6]


@pytest.mark.parametrize("shuffle", [False, True])
def test_alphafold_features_match_oracle(shuffle):
    rows = family(7, 40, 17, gap=0.2)
    rng = random.Random(1)
    dels = [[rng.choice([0, 0, 0, 1, 2, 7]) for _ in r] for r in rows]
    aln = Alignment.from_rows([f"s{i}" for i in range(40)], rows, deletion_matrix=dels)
    f = aln.alphafold_features(max_clusters=9, max_extra=20, seed=3, shuffle=shuffle)
    centres, extras = f["msa_rows"].tolist(), list(range(40))
    if shuffle:
        gen = torch.Generator().manual_seed(3)
        order = [0] + (torch.randperm(39, generator=gen) + 1).tolist()
        assert centres == order[:9]
        extras = order[9:]
        crop = torch.randperm(31, generator=gen)[:20].tolist()
    else:
        assert centres == list(range(9))
        extras = list(range(9, 40))
        crop = list(range(20))
    assign, profile, del_mean, feat = oracle.af_features(rows, dels, centres, extras)
    assert f["cluster_assignment"].tolist() == assign
    assert torch.allclose(
        f["cluster_profile"].double(), torch.tensor(profile, dtype=torch.float64), atol=1e-6
    )
    assert torch.allclose(
        f["cluster_deletion_mean"].double(), torch.tensor(del_mean, dtype=torch.float64), atol=1e-5
    )
    assert torch.allclose(
        f["msa_feat"].double(), torch.tensor(feat, dtype=torch.float64), atol=1e-5
    )
    assert f["extra_rows"].tolist() == [extras[k] for k in crop]
    assert f["extra_msa"].tolist() == [[oracle.af_id(c) for c in rows[extras[k]]] for k in crop]
    assert f["extra_deletion_matrix"].tolist() == [dels[extras[k]] for k in crop]


def test_alphafold_features_of_a_plain_alignment_use_query_columns():
    aln = Alignment.from_rows(["q", "a"], ["AC--DE", "A-GHD-"])
    f = aln.alphafold_features(shuffle=False)
    assert f["msa"].shape == (2, 4) and f["deletion_matrix"][1].tolist() == [0, 0, 2, 0]
    with pytest.raises(AlphabetError, match="proteins"):
        Alignment.from_rows(["a"], ["ACGT"]).alphafold_features()


def test_pssm_by_hand():
    aln = aln_of(["AC", "AD", "A-"])
    scores = aln.pssm(theta=None, pseudocount=0.0)
    _, _, bg = features.pssm_states(aln.alphabet)
    assert scores[0, 0].item() == pytest.approx(math.log2(1 / bg[0].item()))
    assert scores[1, 4].item() == pytest.approx(math.log2(0.5 / bg[4].item()))  # C
    assert scores[0, 1].item() == -math.inf
    uniform = aln_of(["-", "-"]).pssm(theta=None)
    assert uniform.abs().sum() == 0  # no residues: the background, score 0
    dna = Alignment.from_rows(["a", "b"], ["ACGT", "ACGA"]).pssm(theta=None, pseudocount=1.0)
    assert dna.shape == (4, 4) and dna[3, 0].item() == pytest.approx(math.log2(1.25 / 3 / 0.25))


def test_pssm_matches_oracle():
    rows = family(8, 25, 19)
    aln = aln_of(rows)
    letters, _, bg = features.pssm_states(aln.alphabet)
    w = aln.sequence_weights(0.8)
    want = oracle.pssm(rows, letters, bg.tolist(), w.tolist(), pseudocount=2.0)
    got = features.pssm(
        aln.codes, features.pssm_states(aln.alphabet)[1], bg, weights=w, pseudocount=2.0
    )
    assert torch.allclose(got.double(), torch.tensor(want, dtype=torch.float64), atol=1e-5)
    assert torch.allclose(aln.pssm(0.8, pseudocount=2.0), got)
    assert sum(logodds.ROBINSON_FREQUENCIES) == pytest.approx(1000, rel=1e-3)
