"""benchmarks.alignment_hashes: one hash per case, and the comparison with an earlier run."""

import csv

import pytest

from benchmarks import alignment_hashes


def _dataset(tmp_path):
    data = tmp_path / "toy"
    data.mkdir()
    (data / "cases.tsv").write_text("case\tnseq\tmax_len\nT1\t3\t12\nT2\t2\t9\n")
    (data / "T1.in.fasta").write_text(">a\nMKVLAAGHWT\n>b\nMKVLGHWTEQ\n>c\nMKALAAGHW\n")
    (data / "T2.in.fasta").write_text(">x\nACDEFGHIK\n>y\nACDFGHIK\n")
    return data


def test_hashes_match_a_rerun_and_a_changed_hash_is_reported(tmp_path, monkeypatch):
    monkeypatch.setattr(alignment_hashes, "DATA_DIR", tmp_path)
    monkeypatch.setenv("TORCHMSA_COMMIT", "test")
    _dataset(tmp_path)
    args = ["--dataset", "toy", "--out", str(tmp_path)]
    assert alignment_hashes.main([*args, "--name", "first"]) == 0
    with open(tmp_path / "first.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert [r["case"] for r in rows] == ["T1", "T2"]
    assert all(len(r["sha1"]) == 40 for r in rows) and rows[0]["sha1"] != rows[1]["sha1"]
    again = [*args, "--against", str(tmp_path / "first.csv"), "--name", "second"]
    assert alignment_hashes.main(again) == 0
    assert "| 2 |" in (tmp_path / "second.md").read_text()
    rows[1]["sha1"] = "0" * 40  # an earlier run whose T2 alignment differed
    with open(tmp_path / "first.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    assert alignment_hashes.main(again) == 1
    assert "| T2 |" in (tmp_path / "second.md").read_text()
    with pytest.raises(SystemExit, match="no toy case"):
        alignment_hashes.main([*args, "--cases", "Z9"])
