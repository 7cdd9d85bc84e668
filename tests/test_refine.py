import numpy as np
import torch

from torchmsa.alphabet import PROTEIN, encode
from torchmsa.pipeline import profile_scoring
from torchmsa.progressive import quantize_weights
from torchmsa.refine import partitions, refine
from torchmsa.tree import build_tree

GAP = PROTEIN.gap_code


def _codes(rows):
    return torch.tensor(
        np.stack([[GAP if ch == "-" else encode(ch, PROTEIN)[0][0] for ch in r] for r in rows]),
        dtype=torch.uint8,
    )


def _rows(codes):
    letters = PROTEIN.letters + "-"
    return ["".join(letters[c] for c in row) for row in codes.tolist()]


def _tree(n, seed=0):
    rng = np.random.default_rng(seed)
    d = rng.random((n, n))
    d = (d + d.T) / 2
    np.fill_diagonal(d, 0)
    return build_tree(d, "upgma")


def test_partitions_are_the_distinct_tree_splits():
    for n in (3, 4, 7, 12):
        tree = _tree(n, n)
        parts = partitions(tree)
        assert len(parts) == 2 * n - 3
        splits = set()
        for p in parts:
            side = frozenset(int(x) for x in p)
            assert 0 < len(side) < n
            key = min(side, frozenset(range(n)) - side, key=sorted)
            assert key not in splits
            splits.add(key)
    assert partitions(_tree(2)) == []


def test_refine_repairs_a_misplaced_row_and_keeps_residues():
    core = "MKVLAAGHWTEQRDLLPSNAIFKCW"
    rows = [core + "--", core + "--", core + "--", "--" + core, core + "--"]
    codes = _codes(rows)
    tree = _tree(5, 3)
    weights = quantize_weights(tree.weights())
    scoring = profile_scoring(PROTEIN)
    new, applied = refine(codes, tree, weights, scoring, GAP, max_rounds=4, backend="cpu")
    out = _rows(new)
    assert applied >= 1
    assert [r.replace("-", "") for r in out] == [core] * 5
    assert len(set(out)) == 1
    again, _ = refine(codes, tree, weights, scoring, GAP, max_rounds=4, backend="cpu")
    assert torch.equal(new, again)


def test_refine_leaves_an_optimal_alignment_alone():
    rows = ["MKVLA-GHW", "MKVLAAGHW", "MK-LAAGHW", "MKVLAAGH-"]
    codes = _codes(rows)
    tree = _tree(4, 5)
    scoring = profile_scoring(PROTEIN)
    new, applied = refine(
        codes, tree, quantize_weights(tree.weights()), scoring, GAP, max_rounds=3, backend="cpu"
    )
    assert [r.replace("-", "") for r in _rows(new)] == [r.replace("-", "") for r in rows]
    assert len({len(r) for r in _rows(new)}) == 1
    if applied == 0:
        assert torch.equal(new, codes)
