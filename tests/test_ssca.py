"""The SSCA#1-style generator (``benchmarks/ssca.py``) and the pure parts of
``benchmarks/long_local.py``: no timing is asserted."""

from __future__ import annotations

import gzip
from collections import Counter
from types import SimpleNamespace
from typing import NamedTuple

import numpy as np
import pytest
from Bio.Align import substitution_matrices

from benchmarks import long_local
from benchmarks.ssca import LETTERS, SSCAPair, _mutate, _table, make_pair, write_fasta

BLOSUM62 = substitution_matrices.load("BLOSUM62")


class Hit(NamedTuple):  # the fields of torchmsa's LocalHit that the benchmark reads
    score: int
    query: tuple[int, int]
    subject: tuple[int, int]
    aligned: tuple[str, str]


@pytest.mark.parametrize("seqtype", ["protein", "dna"])
@pytest.mark.parametrize("n,m,planted", [(1, 1, 0), (64, 5000, 4), (300, 20_000, 7)],
                         ids=lambda v: str(v))  # fmt: skip
def test_sizes_and_letters(seqtype, n, m, planted):
    pair = make_pair(n, m, seqtype=seqtype, planted=planted, seed=3)
    assert len(pair.query) == n and len(pair.subject) == m and len(pair.planted) == planted
    assert set(pair.query + pair.subject) <= set(LETTERS[seqtype])
    assert pair.seqtype == seqtype and pair.seed == 3


def test_same_arguments_same_pair_and_another_seed_another():
    a, b = (make_pair(200, 30_000, planted=5, seed=11) for _ in range(2))
    assert a == b
    c = make_pair(200, 30_000, planted=5, seed=12)
    assert c.subject != a.subject and c.planted != a.planted


def test_segments_are_inside_sorted_and_spaced():
    pair = make_pair(500, 100_000, planted=40, seg_len=(30, 90), spacing=100, seed=5)
    spans = [(p.s_start, p.s_end) for p in pair.planted]
    assert spans == sorted(spans) and spans[0][0] >= 0 and spans[-1][1] <= 100_000
    assert all(b[0] - a[1] >= 100 for a, b in zip(spans, spans[1:]))
    for p in pair.planted:
        assert 0 <= p.q_start < p.q_end <= 500 and 30 <= p.q_end - p.q_start <= 90
        assert p.s_end - p.s_start == p.q_end - p.q_start + p.inserted - p.deleted


def test_default_spacing_is_ten_segments_or_what_fits():
    assert make_pair(300, 10**6, planted=20, seg_len=(50, 100), seed=0).spacing == 1000
    tight = make_pair(300, 20_000, planted=20, seg_len=(50, 100), seed=0)
    spans = [(p.s_start, p.s_end) for p in tight.planted]
    assert 0 < tight.spacing < 1000 and all(
        b[0] - a[1] >= tight.spacing for a, b in zip(spans, spans[1:])
    )


def test_unmutated_segments_are_exact_copies_of_the_query():
    pair = make_pair(150, 20_000, planted=6, sub_rate=0, indel_rate=0, seed=2)
    for p in pair.planted:
        assert pair.subject[p.s_start : p.s_end] == pair.query[p.q_start : p.q_end]
        assert p.substitutions == p.inserted == p.deleted == 0


def test_substitutions_are_counted_exactly_without_indels():
    pair = make_pair(400, 50_000, planted=10, sub_rate=0.3, indel_rate=0, seed=9)
    for p in pair.planted:
        piece, copy = pair.query[p.q_start : p.q_end], pair.subject[p.s_start : p.s_end]
        assert sum(x != y for x, y in zip(piece, copy)) == p.substitutions > 0


def test_mutation_counts_match_the_copy():
    rng = np.random.default_rng(0)
    table = _table("protein")
    piece = table[rng.integers(0, len(table), 500)]
    copy, subs, ins, dels = _mutate(rng, table, piece, 0.2, 0.1, 3)
    assert len(copy) == 500 + ins - dels and ins > 0 and dels > 0 and subs > 0


def test_background_follows_the_frequencies():
    table = _table("protein")
    assert len(table) == 4096
    counts = Counter(table.tobytes().decode())
    assert counts["L"] > counts["A"] > counts["W"] > 0 and len(counts) == 20
    assert Counter(_table("dna").tobytes().decode()) == {c: 1024 for c in "ACGT"}


@pytest.mark.parametrize(
    "kwargs",
    [dict(seqtype="rna"), dict(planted=100, m=1000), dict(seg_len=(0, 5)), dict(sub_rate=2.0)],
    ids=["seqtype", "does-not-fit", "seg_len", "sub_rate"],
)
def test_bad_arguments_are_named(kwargs):
    args = dict(n=50, m=10_000) | kwargs
    with pytest.raises(ValueError):
        make_pair(args.pop("n"), args.pop("m"), **args)


def test_fasta_files_round_trip(tmp_path):
    pair = make_pair(161, 3_000, planted=2, spacing=100, seed=4)
    paths = write_fasta(pair, tmp_path)
    for name, text in (("query", pair.query), ("subject", pair.subject)):
        with gzip.open(paths[name], "rt") as fh:
            lines = fh.read().splitlines()
        assert lines[0].startswith(f">{name}") and all(len(x) <= 80 for x in lines[1:])
        assert "".join(lines[1:]) == text
    rows = paths["planted"].read_text().splitlines()
    assert rows[0].split("\t")[:4] == ["q_start", "q_end", "s_start", "s_end"]
    assert [int(x) for x in rows[1].split("\t")[:4]] == list(vars(pair.planted[0]).values())[:4]
    plain = write_fasta(pair, tmp_path / "plain", gz=False)
    assert plain["query"].read_text().splitlines()[1] == pair.query[:80]


def test_repr_shows_sizes_not_sequences():
    assert repr(make_pair(10, 100, planted=1, seed=0)) == (
        "SSCAPair(n=10, m=100, planted=1, seqtype='protein', seed=0)"
    )
    assert isinstance(make_pair(10, 100, planted=0), SSCAPair)


# ---- long_local's pure functions -------------------------------------------------------------


def test_parse_sizes_and_gcups():
    assert long_local.parse_sizes("128, 1e5,2e5") == [128, 100_000, 200_000]
    assert long_local.gcups(1000, 10**6, 2.0) == 0.5
    assert np.isnan(long_local.gcups(1, 1, None))


def test_rescore_by_hand():
    # A/A 4, W/W 11, G against a gap -10, H/H 8, E/E 5
    assert long_local.rescore("AWGHE", "AW-HE", BLOSUM62, 10, 1) == 18
    # a gap of 3 costs 10 + 2; gaps in the two rows are separate runs
    assert long_local.rescore("A---W", "AKKKW", BLOSUM62, 10, 1) == 4 - 12 + 11
    assert long_local.rescore("A-W", "AK-", BLOSUM62, 10, 1) == 4 - 10 - 10


def test_recall_and_bad_hits():
    pair = make_pair(100, 5_000, planted=3, seg_len=(20, 20), sub_rate=0, indel_rate=0, seed=1)
    p0, p1, _ = pair.planted
    q, s = pair.query[p0.q_start : p0.q_end], pair.subject[p0.s_start : p0.s_end]
    good = Hit(long_local.rescore(q, s, BLOSUM62, 10, 1), (p0.q_start, p0.q_end),
               (p0.s_start, p0.s_end), (q, s))  # fmt: skip
    miss = Hit(5, (p1.q_start, p1.q_end), (p0.s_end + 1, p0.s_end + 3), ("AA", "AA"))
    got = long_local.recall([good, miss], pair.planted, k=100)
    assert got == {"recall": 1 / 3, "top_planted": True, "hits_on_planted": 1}
    assert long_local.recall([miss], pair.planted, k=1)["top_planted"] is False
    span = Hit(9, (0, 100), (0, 5_000), ("", ""))  # overlaps all three segments
    assert long_local.recall([span], pair.planted, k=1)["recall"] == 1.0
    assert long_local.recall([], pair.planted, k=1) == {
        "recall": 0.0,
        "top_planted": False,
        "hits_on_planted": 0,
    }
    assert long_local.bad_hits([good], pair.query, pair.subject, BLOSUM62, 10, 1) == 0
    wrong_score = good._replace(score=good.score + 1)
    assert long_local.bad_hits([wrong_score, miss], pair.query, pair.subject, BLOSUM62, 10, 1) == 2


def test_grid_selection():
    def grid(**kw):
        args = dict(n=None, m=None, quick=False, cpu=False) | kw
        return long_local._grid(SimpleNamespace(**args))

    assert grid()[0] == long_local.SEED_GRID and grid()[1] == "seed"
    assert grid(cpu=True)[0] == [(128, 10**5), (128, 10**6), (1000, 10**5), (1000, 10**6)]
    assert grid(n="100352")[0] == [(100352, 2 * 10**5), (100352, 10**6), (100352, 10**7)]
    assert grid(n="5", m="1e3,2e3") == ([(5, 1000), (5, 2000)], "custom")
    assert grid(quick=True, cpu=True)[0] == long_local.QUICK_CPU
    assert long_local._case(10240, 10**8) == "n10240-m1e8"
    assert long_local._case(100352, 2 * 10**5) == "n100352-m2e5"
    assert long_local._case(64, 123456) == "n64-m123456"


def test_one_case_in_process_finds_the_planted_segments():
    """The child of ``--gpu`` (``--case``) on the CPU, tiny: checks, not timing."""
    pytest.importorskip("torchmsa.ops.local")
    args = SimpleNamespace(
        case="64,6000,5", seqtype="protein", planted=3, seed=0, device="cpu", distributed=False
    )
    out = long_local.run_case(args)
    assert [c["call"] for c in out["calls"]] == ["cold", "warm"], out
    for c in out["calls"]:
        assert c["recall"] == 1.0 and c["top_planted"] and c["bad_hits"] == 0
        assert c["same_as_cold"] and c["hits"] <= 5 and c["seconds"] > 0
