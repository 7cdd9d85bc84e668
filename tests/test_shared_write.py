"""One FASTA file written by several ranks, each its share of the rows
(:mod:`torchmsa.distributed.write`): the bytes a lone process writes, for any number of
ranks, with ranks that cannot see the file and failed writes."""

from __future__ import annotations

import os
import threading

import pytest

import torchmsa
from tests.thread_ranks import ThreadRanks
from torchmsa.distributed import write as shared_write
from torchmsa.errors import ArgumentError

SEQS = {
    "alpha one": "MKVLAAGHWQRST",
    "beta": "MKVLAGHWQST",
    "gamma x y": "GSTWPQMKV",
    "delta": "MKVLAAGHW",
    "eps": "MKAAGHWQRSTVV",
    "zeta": "KVLAAGW",
    "eta": "MKVLAAGHWQRSTPP",
}


@pytest.fixture(scope="module")
def aln():
    return torchmsa.align(SEQS, device="cpu")


def test_row_slices_put_together_are_the_whole_file(aln):
    whole = aln.fasta_bytes()
    assert whole == aln.format("fasta").encode()
    n = len(aln)
    for cuts in ([0, n], [0, 3, n], [0, 0, 2, 2, 5, n], [0, 1, 2, 3, 4, 5, 6, n]):
        parts = [aln.fasta_bytes(slice(a, b)) for a, b in zip(cuts, cuts[1:])]
        assert b"".join(parts) == whole
    assert aln.fasta_bytes(slice(4, 2)) == b""
    with pytest.raises(ArgumentError, match="step of 1"):
        aln.fasta_bytes(slice(0, n, 2))


@pytest.mark.parametrize("size", [1, 2, 3, 9])
def test_every_rank_writes_its_share_and_the_file_is_a_lone_process_s(aln, tmp_path, size):
    out = tmp_path / "out.fasta"
    out.write_text("old")
    os.chmod(out, 0o640)
    ranks = ThreadRanks(size)
    ranks.run(lambda r: shared_write.write_fasta(aln, str(out), r))
    assert out.read_bytes() == aln.fasta_bytes()
    assert oct(out.stat().st_mode & 0o777) == oct(0o640)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.fasta"]
    wrote = [line for line in ranks.said if ": wrote rows " in line]
    assert len(wrote) == size
    rows = [line.split("wrote rows ")[1].split(" of")[0].split("-") for line in wrote]
    assert sum(int(b) - int(a) for a, b in rows) == len(aln)


def test_ranks_that_cannot_see_the_file_leave_their_rows_to_the_others(aln, tmp_path, monkeypatch):
    local = threading.local()
    seen = shared_write._ident
    monkeypatch.setattr(
        shared_write, "_ident", lambda p: None if getattr(local, "rank", 0) == 1 else seen(p)
    )

    def work(r):
        local.rank = r.rank
        shared_write.write_fasta(aln, str(tmp_path / "out.fasta"), r)

    ranks = ThreadRanks(3)
    ranks.run(work)
    assert (tmp_path / "out.fasta").read_bytes() == aln.fasta_bytes()
    wrote = sorted(line for line in ranks.said if ": wrote rows " in line)
    assert [w.split("wrote rows ")[1].split(" ")[0] for w in wrote] == ["0-3", "0-0", "3-7"]


def test_a_failed_write_on_one_rank_fails_every_rank_and_leaves_no_file(aln, tmp_path, monkeypatch):
    local = threading.local()
    put = shared_write._put
    monkeypatch.setattr(
        shared_write,
        "_put",
        lambda tmp, data, at: "disk full" if local.rank == 2 else put(tmp, data, at),
    )
    raised = []

    def work(r):
        local.rank = r.rank
        try:
            shared_write.write_fasta(aln, str(tmp_path / "out.fasta"), r)
        except ArgumentError as exc:
            raised.append(str(exc))

    ThreadRanks(3).run(work)
    assert raised == ["disk full"] * 3
    assert list(tmp_path.iterdir()) == []


def test_a_folder_that_does_not_exist_is_one_clear_error_on_every_rank(aln, tmp_path):
    raised = []

    def work(r):
        try:
            shared_write.write_fasta(aln, str(tmp_path / "no" / "out.fasta"), r)
        except ArgumentError as exc:
            raised.append(str(exc))

    ThreadRanks(2).run(work)
    assert len(raised) == 2 and len(set(raised)) == 1
    assert "cannot write" in raised[0] and "directory exists" in raised[0]


def test_the_command_line_writes_in_shares_only_to_a_fasta_file(tmp_path):
    """``torchmsa align`` under torchrun: every rank writes only a FASTA file, new or
    regular, of an alignment the ranks hold alike; else rank 0 writes as one process does."""
    from types import SimpleNamespace

    from torchmsa.cli.align import _in_shares

    def shares(output, fmt=None, **meta):
        held = SimpleNamespace(metadata={"world_size": 2, "ranks_alike": True, **meta})
        return _in_shares(held, SimpleNamespace(output=output, format=fmt))

    (tmp_path / "old.fasta").write_text("x")
    assert shares(str(tmp_path / "new.fasta")) and shares(str(tmp_path / "old.fasta"))
    assert not shares(str(tmp_path / "new.aln"))  # Clustal
    assert not shares(str(tmp_path / "new.fasta"), fmt="stockholm")
    assert not shares(str(tmp_path / "new.fasta.gz")) and not shares("-")
    assert not shares("/dev/null") and not shares(str(tmp_path))
    assert not shares(str(tmp_path / "new.fasta"), ranks_alike=False)
    assert not shares(str(tmp_path / "new.fasta"), world_size=1)
