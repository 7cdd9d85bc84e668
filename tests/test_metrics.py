"""SP / TC against hand-computed cases and a plain-Python pair-enumeration oracle."""

from __future__ import annotations

import math
import random
from itertools import combinations

import numpy as np
import pytest

from torchmsa.errors import InputError
from torchmsa.metrics import (
    Scores,
    read_core,
    restrict_to_reference,
    score_alignment,
    uppercase_core,
)

REF3 = [("a", "AC-G"), ("b", "ACTG"), ("c", "A-TG")]
# Columns: 3 + 1 + 1 + 3 = 8 reference pairs; the last column's residues are split in TEST3
# (a's G apart from b's and c's), so 6 pairs and 3 of 4 columns are right.
TEST3 = [("a", "ACG-"), ("b", "ACTG"), ("c", "A-TG")]


def oracle(test, ref, core=None) -> tuple[int, int, int, int]:
    """(ref pairs, correct pairs, counted columns, correct columns) by enumerating pairs."""
    test = {name.split()[0]: row for name, row in test}
    width = len(ref[0][1])
    core = core or "1" * width

    def residue_index(row):
        out, k = [], 0
        for ch in row:
            out.append(None if ch in "-." else k)
            k += ch not in "-."
        return out

    def test_column(row, k):
        seen = -1
        for j, ch in enumerate(row):
            seen += ch not in "-."
            if seen == k and ch not in "-.":
                return j
        raise AssertionError("residue not found")

    ref_idx = [(name, residue_index(row)) for name, row in ref]
    pairs = correct = cols = cols_ok = 0
    for j in range(width):
        if core[j] != "1":
            continue
        present = [(name, idx[j]) for name, idx in ref_idx if idx[j] is not None]
        where = [test_column(test[name], k) for name, k in present]
        for x, y in combinations(range(len(present)), 2):
            pairs += 1
            correct += where[x] == where[y]
        if len(present) >= 2:
            cols += 1
            cols_ok += len(set(where)) == 1
    return pairs, correct, cols, cols_ok


def counts(s: Scores) -> tuple[int, int, int, int]:
    return s.n_ref_pairs, s.n_correct_pairs, s.n_cols, s.n_correct_cols


def test_identical_alignment_scores_one():
    s = score_alignment(REF3, REF3)
    assert (s.sp, s.tc) == (1.0, 1.0)
    assert counts(s) == (8, 8, 4, 4)


def test_split_column_with_gaps():
    s = score_alignment(TEST3, REF3)
    assert counts(s) == (8, 6, 4, 3)
    assert s.sp == pytest.approx(6 / 8) and s.tc == pytest.approx(3 / 4)


@pytest.mark.parametrize(
    "test_rows, expected",
    [
        (("ACD-E", "AC-DE"), (4, 3, 4, 3)),  # one residue of b shifted by one column
        (("ACDE-", "-ACDE"), (4, 0, 4, 0)),  # the whole of b shifted
        (("ACDE", "ACDE"), (4, 4, 4, 4)),
    ],
    ids=["one-shift", "all-shift", "same"],
)
def test_shifted_residues(test_rows, expected):
    ref = [("a", "ACDE"), ("b", "ACDE")]
    s = score_alignment(list(zip("ab", test_rows)), ref)
    assert counts(s) == expected


def test_core_mask_forms(tmp_path):
    path = tmp_path / "core.txt"
    path.write_text("1001\n")
    by_str = score_alignment(TEST3, REF3, core="1001")
    # first and last columns: 3 + 3 pairs, 3 + 1 right; one of two columns right
    assert counts(by_str) == (6, 4, 2, 1)
    assert score_alignment(TEST3, REF3, core=path) == by_str
    assert score_alignment(TEST3, REF3, core=str(path)) == by_str
    assert score_alignment(TEST3, REF3, core=[True, False, False, True]) == by_str
    assert score_alignment(TEST3, REF3, core=np.array([1, 0, 0, 1])) == by_str


@pytest.mark.parametrize("core", ["101", "10x1", [1, 0, 2, 1]], ids=["short", "char", "value"])
def test_bad_core_mask_raises(core):
    with pytest.raises(InputError, match="core mask"):
        score_alignment(TEST3, REF3, core=core)


def test_read_core_none_is_all_columns():
    assert read_core(None, 3).tolist() == [True, True, True]


def test_gap_only_columns_change_nothing():
    ref_gappy = [(n, "-" + r[:2] + "--" + r[2:] + "-") for n, r in REF3]
    test_gappy = [(n, "--" + r + "---") for n, r in TEST3]
    assert counts(score_alignment(test_gappy, ref_gappy)) == counts(score_alignment(TEST3, REF3))


def test_lowercase_and_dots_are_accepted():
    test = [("a", "acg."), ("b", "AcTg"), ("c", "a.tG")]
    ref = [(n, r.lower()) for n, r in REF3]
    assert counts(score_alignment(test, ref)) == (8, 6, 4, 3)


def test_names_match_on_first_word_and_extra_rows_are_ignored():
    test = [("c third", "A-TG"), ("extra", "WWWW"), ("a", "ACG-"), ("b x y", "ACTG")]
    assert counts(score_alignment(test, REF3)) == (8, 6, 4, 3)


def test_alignment_object_and_paths(tmp_path):
    class Aln:
        names = [n for n, _ in TEST3]
        rows = [r for _, r in TEST3]

    ref_path = tmp_path / "ref.fasta"
    ref_path.write_text("".join(f">{n} desc\n{r}\n" for n, r in REF3))
    assert counts(score_alignment(Aln(), ref_path)) == (8, 6, 4, 3)


def test_residue_mismatch_names_the_sequence():
    test = [("a", "ACG-"), ("b", "ACWG"), ("c", "A-TG")]
    with pytest.raises(InputError, match="'b'.*residue 3"):
        score_alignment(test, REF3)


def test_missing_and_duplicate_rows_raise():
    with pytest.raises(InputError, match="'c' is missing"):
        score_alignment(TEST3[:2], REF3)
    with pytest.raises(InputError, match="'a' twice"):
        score_alignment(TEST3 + [("a", "ACG-")], REF3)
    with pytest.raises(InputError, match="reference holds the name 'b' twice"):
        score_alignment(TEST3, REF3 + [("b", "ACTG")])
    # duplicates among rows the reference does not name are harmless
    extra = [("x", "WWWW"), ("x", "WW--")]
    assert counts(score_alignment(TEST3 + extra, REF3)) == (8, 6, 4, 3)
    with pytest.raises(InputError, match="differ in length"):
        score_alignment([("a", "ACG"), ("b", "ACTG"), ("c", "A-TG")], REF3)


def test_no_pairs_gives_nan():
    s = score_alignment([("a", "A-"), ("b", "-C")], [("a", "A-"), ("b", "-C")])
    assert counts(s) == (0, 0, 0, 0) and math.isnan(s.sp) and math.isnan(s.tc)


def test_uppercase_core():
    ref = [("a", "ACg-T-"), ("b", "AcG-T-"), ("c", "A-g-T-")]
    assert uppercase_core(ref) == "100010"


def test_restrict_to_reference():
    test = [("x", "WW--W"), ("b", "A-CT-"), ("a", "A--TG"), ("y", "-W--W")]
    ref = [("a", "ATG"), ("b", "ACT")]
    out = restrict_to_reference(test, ref)
    assert [(r.name, r.seq) for r in out] == [("a", "A-TG"), ("b", "ACT-")]
    assert score_alignment(out, ref) == score_alignment(test, ref)
    with pytest.raises(InputError, match="'a' is missing"):
        restrict_to_reference(test[:2], ref)


def _gapped(seq: str, width: int, rng: random.Random) -> str:
    slots = sorted(rng.sample(range(width), len(seq)))
    row = ["-"] * width
    for ch, j in zip(seq, slots):
        row[j] = ch
    return "".join(row)


@pytest.mark.parametrize("seed", range(40))
def test_vectorised_matches_oracle(seed):
    rng = random.Random(seed)
    n = rng.randint(2, 9)
    seqs = ["".join(rng.choice("ACDEFGHIK") for _ in range(rng.randint(0, 12))) for _ in range(n)]
    longest = max(len(s) for s in seqs)
    width = longest + rng.randint(0, 5)
    ref = [(f"s{i}", _gapped(s, width, rng)) for i, s in enumerate(seqs)]
    test_width = longest + rng.randint(0, 3)
    test = [
        (name, _gapped(s.lower() if rng.random() < 0.3 else s, test_width, rng))
        for (name, _), s in zip(ref, seqs)
    ]
    test += [(f"extra{k}", _gapped("WWW"[:test_width], test_width, rng)) for k in range(2)]
    rng.shuffle(test)
    core = "".join(rng.choice("01") for _ in range(width)) if seed % 2 else None
    assert counts(score_alignment(test, ref, core)) == oracle(test, ref, core)


def test_vectorised_matches_oracle_on_mostly_right_alignments():
    # Random independent alignments rarely agree; perturb the reference a little instead.
    rng = random.Random(7)
    for _ in range(20):
        n = rng.randint(3, 8)
        seqs = ["".join(rng.choice("ACDEFG") for _ in range(rng.randint(5, 15))) for _ in range(n)]
        width = max(len(s) for s in seqs) + 4
        ref = [(f"s{i}", _gapped(s, width, rng)) for i, s in enumerate(seqs)]
        test = []
        for name, row in ref:
            chars = list(row)
            j = rng.randrange(width - 1)
            if chars[j] != "-" and chars[j + 1] == "-":
                chars[j], chars[j + 1] = "-", chars[j]
            test.append((name, "".join(chars)))
        assert counts(score_alignment(test, ref)) == oracle(test, ref)
