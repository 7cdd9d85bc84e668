"""Identical sequences are aligned once and every copy gets its representative's row back
(torchmsa.pipeline.dedupe): rows in input order, each copy's own name and case, metadata that
says how many were collapsed, and the distinct sequences aligned as they are on their own."""

from __future__ import annotations

import random

import numpy as np
import pytest
import torch

import torchmsa
from torchmsa.pipeline.dedupe import collapse, restore, restore_tree
from torchmsa.sequences import SequenceBatch

AA = "ACDEFGHIKLMNPQRSTVWY"


def _family(n: int, length: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    base = [rng.choice(AA) for _ in range(length)]
    out = []
    for _ in range(n):
        s = list(base)
        for _ in range(length // 8):
            s[rng.randrange(length)] = rng.choice(AA)
        if rng.random() < 0.3:
            del s[rng.randrange(len(s))]
        out.append("".join(s))
    return out


@pytest.mark.parametrize("mode", ["fast", "default", "accurate"])
def test_copies_take_their_representatives_rows(mode):
    distinct = _family(6, 40, seed=1)
    order = [0, 1, 0, 2, 3, 1, 4, 5, 5, 0]
    seqs = {
        f"s{k}": distinct[i].lower() if k % 3 == 0 else distinct[i] for k, i in enumerate(order)
    }
    aln = torchmsa.align(seqs, device="cpu", mode=mode)
    alone = torchmsa.align(
        {f"s{k}": seqs[f"s{k}"] for k in (0, 1, 3, 4, 6, 7)}, device="cpu", mode=mode
    )
    assert aln.names == list(seqs)
    assert [r.replace("-", "") for r in aln.rows] == list(seqs.values())
    assert aln.metadata["collapsed"] == 4
    assert aln.metadata["distinct_sequences"] == 6
    assert aln.metadata["n_sequences"] == 10
    first = {i: k for k, i in reversed(list(enumerate(order)))}
    expected = alone.codes[torch.tensor([[0, 1, 3, 4, 6, 7].index(first[i]) for i in order])]
    assert torch.equal(aln.codes, expected)


def test_identical_and_case_only_differences_collapse_to_one():
    base = _family(1, 300, seed=2)[0]
    seqs = [base.lower() if k % 2 else base for k in range(1000)]
    aln = torchmsa.align(seqs, device="cpu", mode="default")
    assert aln.metadata["collapsed"] == 999
    assert aln.width == 300
    assert aln.rows == seqs
    assert aln.tree.n_leaves == 1000 and len(aln.tree.newick().split(",")) == 1000


def test_distinct_input_is_untouched():
    seqs = _family(8, 50, seed=3)
    assert len(set(seqs)) == 8
    b = SequenceBatch.from_input(seqs)
    same, copies = collapse(b)
    assert same is b and copies is None
    aln = torchmsa.align(seqs, device="cpu", mode="fast")
    assert aln.metadata["collapsed"] == 0


def test_restore_tree_keeps_the_distinct_tree_under_combs():
    seqs = ["MKVLA", "GSTWPQ", "MKVLA", "mkvla", "HHHWK"]
    b = SequenceBatch.from_input(seqs)
    distinct, copies = collapse(b)
    assert len(distinct) == 3 and copies.rep.tolist() == [0, 1, 0, 0, 2]
    tree = torchmsa.build_tree(seqs, device="cpu", method="upgma")
    assert tree.n_leaves == 5
    lengths = dict(zip(range(5), tree.lengths[:5].tolist()))
    assert lengths[2] == 0.0 and lengths[3] == 0.0  # copies hang at distance 0
    alone = torchmsa.build_tree(distinct.residues, device="cpu", method="upgma")
    back = restore_tree(alone, copies)
    assert back.names == b.names
    codes = torch.arange(3, dtype=torch.uint8)[:, None]
    assert restore(codes, copies)[:, 0].tolist() == [0, 1, 0, 0, 2]


def test_only_copies_in_one_alphabet_collapse():
    seqs = ["ACGTACGT", "acgtacgt", "ACGTACGA"]
    aln = torchmsa.align(seqs, device="cpu", seqtype="dna")
    assert aln.metadata["collapsed"] == 1
    assert aln.rows[0].upper() == aln.rows[1].upper()
    assert np.array_equal(aln.codes[0].numpy(), aln.codes[1].numpy())
