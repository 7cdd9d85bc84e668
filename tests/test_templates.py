"""torchmsa.templates.realign: one batched call of the pairwise DP, checked by hand and against
the string API (torchmsa.pairwise_align) read by a plain-Python oracle."""

from __future__ import annotations

import random

import pytest
import torch

from tests.feature_oracles import template_mapping
from torchmsa import pairwise_align
from torchmsa.errors import ArgumentError, InvalidCharacterError
from torchmsa.templates import realign

AA = "ACDEFGHIKLMNPQRSTVWY"


def test_by_hand():
    r = realign("MKVLAG", ["MKVLG", "WWWW", "MKVLAG"], device="cpu")
    assert r.mappings()[0] == {0: 0, 1: 1, 2: 2, 3: 3, 5: 4}
    assert r.mapping[2].tolist() == [0, 1, 2, 3, 4, 5]
    assert r.identity[0].item() == 1.0  # 5 identical pairs / min(6, 5)
    assert r.identity[2].item() == 1.0
    assert r.accepted.tolist() == [True, False, True]
    assert r.score.dtype == torch.long and r.score[2] > r.score[0]


@pytest.mark.parametrize("mode", ["global", "local", "semiglobal"])
def test_matches_pairwise_align(mode):
    rng = random.Random(0)
    query = "".join(rng.choice(AA) for _ in range(40))
    templates = []
    for k in range(12):
        t = [c if rng.random() > 0.3 else rng.choice(AA) for c in query]
        a, b = sorted(rng.sample(range(len(t) + 1), 2))
        t = t[a:b] if k % 3 == 0 else t
        if t:  # a deletion of up to 5 residues
            at = rng.randrange(len(t))
            del t[at : at + rng.randint(0, 5)]
        templates.append("".join(t).lower() if k == 5 else "".join(t))
    templates.append("")
    r = realign(query, templates, mode=mode, min_identity=0.5, device="cpu")
    for k, t in enumerate(templates):
        if not t:
            assert r.mapping[k].tolist() == [-1] * 40 and r.identity[k] == 0
            continue
        ref = pairwise_align(query, t, mode=mode, seqtype="protein")
        assert r.score[k].item() == ref.score
        ra, rb = ref.aligned
        mapping, ident = template_mapping(ra, rb, len(query), len(t))
        mapping = {q + ref.a_range[0]: s + ref.b_range[0] for q, s in mapping.items()}
        assert r.mappings()[k] == mapping, k
        if mode == "local":  # identical pairs over the shorter sequence's full length
            same = sum(a.upper() == b.upper() and a != "-" for a, b in zip(ra, rb))
            ident = same / min(len(query), len(t))
        assert r.identity[k].item() == pytest.approx(ident)
        assert bool(r.accepted[k]) == (ident >= 0.5)


def test_empty_and_errors():
    r = realign("MKV", [], device="cpu")
    assert r.mapping.shape == (0, 3) and r.identity.shape == (0,)
    with pytest.raises(ArgumentError, match="min_identity"):
        realign("MKV", ["MKV"], min_identity=60)
    with pytest.raises(ArgumentError, match="mode"):
        realign("MKV", ["MKV"], mode="glocal")
    with pytest.raises(InvalidCharacterError, match="templates\\[1\\]"):
        realign("MKV", ["MKV", "MK1"], device="cpu")
