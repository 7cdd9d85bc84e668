"""The service's store (torchmsa.serve.store) on SQLite and on a real PostgreSQL server
(started by tests/postgres.py when its binaries are installed; skipped otherwise)."""

from __future__ import annotations

import threading
import time

import pytest

import torchmsa
from tests.postgres import SKIP_MESSAGE, start_server
from torchmsa.errors import ArgumentError, InvalidCharacterError
from torchmsa.io import WRITE_FORMATS
from torchmsa.serve import InputTooLarge, JobNotDone, JobNotFound, Store, TooManySequences

FASTA = ">a desc one\nMKVLAAGHWLKQ\n>b\nMKVLAGHWLKQE\n>c\nMKILAAGHWIKQ\n>d\nGSTWPQMKVL\n"


@pytest.fixture(scope="module")
def pg_server():
    server = start_server()
    if server is None:
        pytest.skip(SKIP_MESSAGE)
    yield server
    server.stop()


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/store.sqlite"
    return request.getfixturevalue("pg_server").database()


@pytest.fixture
def store(url):
    st = Store.open(url)
    yield st
    st.close()


def _aln(fasta: str = FASTA):
    import io

    from torchmsa.io import read_sequences

    return torchmsa.align(read_sequences(io.StringIO(fasta)), device="cpu", mode="fast")


def test_submit_persists_before_returning(store, url):
    info = store.submit(FASTA, {"mode": "fast"}, owner="u1")
    other = Store.open(url)  # another process's view: a fresh engine on the same database
    try:
        seen = other.job(info.id, "u1")
        assert seen is not None and seen.state == "queued" and seen.n_seqs == 4
        assert [r.name for r in other.input(info.id, "u1")] == ["a", "b", "c", "d"]
        assert seen.options == {"mode": "fast"}
    finally:
        other.close()


def test_ids_are_unguessable(store):
    ids = [store.submit(FASTA, {}, owner="u").id for _ in range(20)]
    assert len(set(ids)) == 20 and all(len(i) >= 22 for i in ids)


def test_owner_isolation(store):
    info = store.submit(FASTA, {}, owner="alice")
    assert store.job(info.id, "bob") is None
    assert store.jobs(owner="bob") == []
    assert [j.id for j in store.jobs(owner="alice")] == [info.id]
    with pytest.raises(JobNotFound):
        store.result(info.id, "fasta", owner="bob")
    with pytest.raises(JobNotFound):
        store.input(info.id, "bob")
    assert store.delete(info.id, "bob") is False
    assert store.job(info.id, "alice").state == "queued"


def test_bad_input_gets_the_clis_error(store):
    bad = ">a\nMKV1LA\n>b\nMKVLA\n"
    with pytest.raises(InvalidCharacterError) as got:
        store.submit(bad, {})
    with pytest.raises(InvalidCharacterError) as want:
        torchmsa.align({"a": "MKV1LA", "b": "MKVLA"}, device="cpu")
    assert str(got.value) == str(want.value)
    with pytest.raises(ArgumentError, match="mode"):
        store.submit(FASTA, {"mode": "fastest"})
    with pytest.raises(ArgumentError, match="unknown option"):
        store.submit(FASTA, {"colour": "red"})
    with pytest.raises(ArgumentError, match="no field"):
        store.submit(FASTA, {"config": ["scoring.nonsense=1"]})
    assert store.jobs(owner=None) == []


def test_limits(url):
    st = Store.open(url, max_bytes=200, max_seqs=3)
    try:
        with pytest.raises(TooManySequences, match="limit of 3"):
            st.submit(FASTA, {})
        with pytest.raises(InputTooLarge, match="limit of 200 bytes"):
            st.submit(">a\n" + "M" * 300 + "\n", {})
    finally:
        st.close()


def test_claim_is_atomic(store):
    ids = {store.submit(FASTA.replace("GSTWPQ", f"GST{'W' * k}PQ"), {}).id for k in range(24)}
    got: list[list] = [[], [], []]

    def grab(k):
        while True:
            part = store.claim(f"w{k}", 2)
            if not part:
                return
            got[k].extend(j.id for j in part)

    threads = [threading.Thread(target=grab, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    flat = [i for part in got for i in part]
    assert sorted(flat) == sorted(ids)  # every job once, none twice
    assert all(store.job(i).state == "running" for i in ids)
    assert store.requeue_running() == 24
    assert {store.job(i).state for i in ids} == {"queued"}


def test_complete_result_formats_and_cache(store):
    info = store.submit(FASTA, {"mode": "fast"}, owner="u")
    with pytest.raises(JobNotDone, match="queued"):
        store.result(info.id, "fasta", owner="u")
    (claimed,) = store.claim("w", 8)
    aln = _aln()
    store.complete(claimed.id, aln, {"run": 1.0}, {"alignment": False}, "cpu-worker")
    done = store.job(info.id, "u")
    assert done.state == "done" and done.progress == 1.0 and done.placement == "cpu-worker"
    for fmt in WRITE_FORMATS:
        assert store.result(info.id, fmt, owner="u") == aln.format(fmt)
    assert store.result(info.id, "newick", owner="u") == aln.tree.newick() + "\n"
    # the same sequences and options again, under other names: done from the cache at once
    renamed = FASTA.replace(">a desc one", ">x").replace(">b", ">y")
    t0 = time.perf_counter()
    again = store.submit(renamed, {"mode": "fast"}, owner="v")
    assert time.perf_counter() - t0 < 0.05
    assert again.state == "done" and again.placement == "cache"
    assert store.result(again.id, "fasta", owner="v").startswith(">x\n")
    assert store.submit(FASTA, {"mode": "default"}, owner="v").state == "queued"


def test_fail_and_delete(store):
    info = store.submit(FASTA, {}, owner="u")
    store.claim("w", 1)
    store.fail(info.id, "ResourceError: too big\n  really")
    with pytest.raises(JobNotDone, match="too big really"):
        store.result(info.id, "fasta", owner="u")
    ok = store.submit(FASTA, {"mode": "fast"}, owner="u")
    store.claim("w", 1)
    store.complete(ok.id, _aln(), {}, {}, "cpu-worker")
    assert store.delete(ok.id, "u") is True
    assert store.delete(ok.id, "u") is False
    assert store.job(ok.id, "u").state == "deleted"
    assert ok.id not in [j.id for j in store.jobs(owner="u")]
    with pytest.raises(JobNotFound):
        store.result(ok.id, "fasta", owner="u")
    assert store.submit(FASTA, {"mode": "fast"}, owner="u").state == "queued"  # result forgotten


def test_eviction_keeps_live_results(url):
    st = Store.open(url, cap_bytes=1)
    try:
        info = st.submit(FASTA, {"mode": "fast"}, owner="u")
        st.claim("w", 1)
        st.complete(info.id, _aln(), {}, {}, "cpu-worker")
        from torchmsa.serve import cache

        with st.engine.begin() as conn:
            cache.put_distances(conn, "kmer6-dayhoff6", {("a" * 64, "b" * 64): 0.5})
        dropped = st.evict()
        assert dropped["distances"] == 1
        assert st.result(info.id, "fasta", owner="u") == _aln().format("fasta")
        st.delete(info.id, "u")
        assert st.stats()["cache_bytes"]["results"] == 0
    finally:
        st.close()


def test_requeue_by_host_leaves_other_hosts_jobs_running(tmp_path):
    """Several hosts share a PostgreSQL store: a starting server puts back only its own host's
    running jobs (the others' workers may still hold theirs)."""
    store = Store.open(None, data_dir=tmp_path)
    try:
        ids = [store.submit(f">a\nMKV{'L' * k}\n>b\nMRV\n", {"mode": "fast"}).id for k in range(4)]
        mine = [j.id for j in store.claim("hostA/11/cpu", 2)]
        theirs = [j.id for j in store.claim("hostB/22/cpu", 2)]
        assert sorted(mine + theirs) == sorted(ids)
        assert store.requeue_running(host="hostA") == 2
        assert {store.job(i).state for i in mine} == {"queued"}
        assert {store.job(i).state for i in theirs} == {"running"}
        assert store.requeue_running(host="host") == 0  # a name prefix is not a host
        assert store.requeue_at_start() == 2  # SQLite: one host, every running job
    finally:
        store.close()


def test_job_ids_never_start_with_a_dash(monkeypatch):
    """A job id is typed on command lines (``torchmsa status ID``): one starting with ``-``
    would be taken for an option."""
    from torchmsa.serve import store as store_mod

    drawn = iter(["-lnUeRYwgV4mYuXXL6chPg", "-x", "AbC_d-ef"])
    monkeypatch.setattr(store_mod.secrets, "token_urlsafe", lambda n: next(drawn))
    assert store_mod.new_job_id() == "AbC_d-ef"
