"""Sharded benchmark tables: the shard parser and the merge of shard files."""

import csv
import math

import pytest

from benchmarks import merge_results
from benchmarks.common import write_results
from benchmarks.e2e_gpu import _shard


def test_shard_parser_accepts_k_of_n_and_rejects_the_rest():
    assert _shard("0/1") == (0, 1) and _shard("2/3") == (2, 3)
    for bad in ("3/3", "-1/2", "1", "a/b", "0/0"):
        with pytest.raises(SystemExit, match="--shard"):
            _shard(bad)


def _shard_files(tmp_path, stem, cases, wall, commit, tool="tm"):
    meta = {"device": "GPU", "commit": commit, "torch": "t", "triton": "x", "date": "d"}
    rows = [
        {
            "dataset": "bb",
            "case": c,
            "ref_set": rs,
            "tool": tool,
            "sp": sp,
            "tc": tc,
            "seconds": 1.0,
            "overhead_s": ov,
            "error": err,
        }
        for c, rs, sp, tc, ov, err in cases
    ]
    summary = [{"dataset": "bb", "tool": tool, "wall_s": wall}]
    write_results(stem, summary, out_dir=tmp_path, metadata=meta)
    write_results(f"{stem}-cases", rows, out_dir=tmp_path, metadata=meta, markdown=False)
    return tmp_path / stem


def test_merge_pools_cases_sums_walls_and_skips_failures(tmp_path):
    nan = math.nan
    a = _shard_files(
        tmp_path,
        "s0",
        [("c1", "RV11", 0.5, 0.2, 0.01, ""), ("c2", "RV20", 0.9, 0.4, 0.03, "")],
        10.0,
        "aaa",
    )
    b = _shard_files(
        tmp_path,
        "s1",
        [("c3", "RV11", 0.7, 0.6, 0.02, ""), ("c4", "RV20", nan, nan, nan, "boom")],
        5.5,
        "bbb",
    )
    summary, cases, prov = merge_results.merge([a, b])
    assert len(cases) == 4 and len(summary) == 1
    row = summary[0]
    assert (row["cases"], row["failures"]) == (4, 1)
    assert row["sp"] == pytest.approx((0.5 + 0.9 + 0.7) / 3)
    assert row["tc"] == pytest.approx((0.2 + 0.4 + 0.6) / 3)
    assert row["sp_RV11"] == pytest.approx(0.6) and row["sp_RV20"] == pytest.approx(0.9)
    assert row["wall_s"] == pytest.approx(15.5)
    assert row["median_overhead_ms"] == pytest.approx(20.0)
    assert "commit aaa" in prov[0] and "commit bbb" in prov[1]
    merge_results.main([str(a), str(b), "--name", "merged", "--out", str(tmp_path)])
    with open(tmp_path / "merged.csv", newline="") as fh:
        assert [r["cases"] for r in csv.DictReader(fh)] == ["4"]
    assert "s1: device GPU, commit bbb" in (tmp_path / "merged.md").read_text()


def test_merge_names_a_missing_shard(tmp_path):
    with pytest.raises(SystemExit, match="no such file"):
        merge_results.merge([tmp_path / "absent"])


def test_merge_keeps_the_named_tools_and_rejects_a_case_held_twice(tmp_path):
    a = _shard_files(tmp_path, "s0", [("c1", "RV11", 0.5, 0.2, 0.01, "")], 10.0, "aaa")
    b = _shard_files(tmp_path, "s0p", [("c1", "RV11", 0.4, 0.1, 0.01, "")], 7.0, "aaa", "peer")
    c = _shard_files(tmp_path, "s1p", [("c2", "RV11", 0.8, 0.3, 0.01, "")], 2.0, "bbb", "peer")
    summary, cases, _ = merge_results.merge([a, b, c], {"peer"})
    assert [(r["tool"], r["cases"], r["wall_s"]) for r in summary] == [("peer", 2, 9.0)]
    assert {r["case"] for r in cases} == {"c1", "c2"}
    assert summary[0]["sp"] == pytest.approx(0.6)
    with pytest.raises(SystemExit, match="both hold bb peer c2"):
        merge_results.merge([c, c])
