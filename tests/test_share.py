"""Work shared across jobs (torchmsa.serve.share, worker, costs): content addresses, first
trees from the distance cache equal torchmsa.build_tree's, the cache survives a restart, and
the worker's results equal torchmsa.align's (batch == single)."""

from __future__ import annotations

import io

import numpy as np
import pytest

import torchmsa
from torchmsa.io import read_sequences
from torchmsa.serve import CostModel, Store, Worker
from torchmsa.serve.costs import split
from torchmsa.serve.jobs import job_key, sequence_hash
from torchmsa.serve.share import shared_first_tree

AMINO = "ARNDCQEGHILKMFPSTWYV"
DEFAULT = torchmsa.AlignConfig(mode="default")  # auto would pick accurate mode's tree


def _family(n: int, length: int, seed: int, prefix: str = "s") -> dict[str, str]:
    rng = np.random.default_rng(seed)
    anc = rng.integers(0, 20, length)
    out = {}
    for i in range(n):
        s = anc.copy()
        hit = rng.random(length) < 0.25
        s[hit] = rng.integers(0, 20, int(hit.sum()))
        cut = int(rng.integers(0, 8))
        out[f"{prefix}{i}"] = "".join(AMINO[c] for c in s[cut:])
    return out


def _fasta(seqs: dict[str, str]) -> str:
    return "".join(f">{k}\n{v}\n" for k, v in seqs.items())


@pytest.fixture
def data(tmp_path):
    return tmp_path / "data"


def test_content_addresses():
    assert sequence_hash("protein", "mkvl") == sequence_hash("protein", "MKVL")
    assert sequence_hash("protein", "ACGT") != sequence_hash("dna", "ACGT")
    assert job_key("0.1", "", "protein", ["MK", "V"]) != job_key("0.1", "", "protein", ["M", "KV"])
    assert job_key("0.1", "", "protein", ["MK"]) != job_key("0.2", "", "protein", ["MK"])


@pytest.mark.parametrize("method", ["upgma_mafft", "upgma", "nj", "single"])
def test_tree_from_cache_is_build_trees(data, method):
    seqs = _family(12, 60, 1)
    seqs["short"] = "MKV"  # no 6-mer at all
    seqs["short2"] = "GSTW"
    seqs["dup"] = seqs["s3"].lower()  # a copy: one leaf, at its first place
    records = read_sequences(io.StringIO(_fasta(seqs)))
    hashes = [sequence_hash("protein", r.seq) for r in records]
    st = Store.open(data_dir=data)
    try:
        tree, stats = shared_first_tree(st, records, hashes, "protein", method)
        assert stats["pairs"] == 14 * 13 // 2 and stats["pairs_cached"] == 0
        assert stats["sequences_counted"] == 14
        want = torchmsa.build_tree(records[:-1], method=method, device="cpu", config=DEFAULT)
        assert tree.newick() == want.newick()
        assert np.array_equal(tree.lengths, want.lengths)
    finally:
        st.close()


def test_distance_cache_is_shared_and_survives_a_restart(data):
    base = _family(10, 80, 2)
    first = read_sequences(io.StringIO(_fasta(base)))
    more = dict(list(base.items())[:8], **_family(3, 80, 3, prefix="new"))
    second = read_sequences(io.StringIO(_fasta(more)))
    st = Store.open(data_dir=data)
    shared_first_tree(st, first, [sequence_hash("protein", r.seq) for r in first], "protein", "nj")
    st.close()
    st = Store.open(data_dir=data)  # a restart
    try:
        hashes = [sequence_hash("protein", r.seq) for r in second]
        tree, stats = shared_first_tree(st, second, hashes, "protein", "upgma_mafft")
        assert stats["pairs"] == 55 and stats["pairs_cached"] == 28  # the 8 shared: 8*7/2
        assert stats["sequences_cached"] == 8 and stats["sequences_counted"] == 3
        want = torchmsa.build_tree(second, method="upgma_mafft", device="cpu", config=DEFAULT)
        assert tree.newick() == want.newick()
        _, again = shared_first_tree(st, second, hashes, "protein", "upgma_mafft")
        assert again["pairs_cached"] == 55 and again["sequences_counted"] == 0
    finally:
        st.close()


@pytest.mark.parametrize("cpu_workers", [0, 1])
def test_worker_batch_equals_single(data, cpu_workers):
    sets = [_family(6, 50, 10), _family(9, 70, 11), _family(5, 40, 12)]
    options = [{"mode": "default"}, {"mode": "default"}, {"mode": "fast", "tree": "nj"}]
    if cpu_workers:
        sets, options = sets[:2], options[:2]
    st = Store.open(data_dir=data)
    try:
        ids = [st.submit(_fasta(s), o, owner="u").id for s, o in zip(sets, options)]
        twin = st.submit(_fasta(sets[0]), options[0], owner="v").id  # identical, in flight
        worker = Worker(st, device="cpu", cpu_workers=cpu_workers, share_trees=True)
        try:
            assert worker.run_once() == len(ids) + 1
        finally:
            worker.close()
        for job_id, s, o in zip(ids, sets, options):
            info = st.job(job_id, "u")
            assert info.state == "done", info.error
            assert info.placement == "cpu-worker" and info.placement_reason
            want = torchmsa.align(s, device="cpu", **o)
            assert st.result(job_id, "fasta", "u") == want.format("fasta")
            assert st.result(job_id, "newick", "u") == want.tree.newick() + "\n"
        shared = st.job(twin, "v").shared
        assert shared["alignment"] is True and shared["ran_with"] == ids[0]
        assert st.result(twin, "fasta", "v") == st.result(ids[0], "fasta", "u")
    finally:
        st.close()


def test_cost_split_records_why():
    model = CostModel((0.05, 1e-7), (0.5, 1e-9), "test")
    placed = split([("big", 1e9), ("tiny", 1e3)], model, cpu_lanes=2)
    assert placed["big"].where == "gpu-batch" and placed["tiny"].where == "cpu-worker"
    assert "GPU batch" in placed["big"].reason and "test" in placed["tiny"].reason
    cpu_only = split([("big", 1e9)], CostModel.rule(gpu=False), cpu_lanes=1)
    assert cpu_only["big"].where == "cpu-worker" and "no GPU" in cpu_only["big"].reason


def test_align_many_takes_the_cached_first_tree(data):
    """The tree from the distance cache, handed to align_many, gives torchmsa.align's result;
    a tree over the wrong leaves is refused with the reason."""
    seqs = _family(11, 70, 22)  # a family whose NJ and UPGMA alignments differ
    seqs["dup"] = seqs["s2"]
    records = read_sequences(io.StringIO(_fasta(seqs)))
    hashes = [sequence_hash("protein", r.seq) for r in records]
    st = Store.open(data_dir=data)
    try:
        tree, _ = shared_first_tree(st, records, hashes, "protein", "upgma_mafft")
    finally:
        st.close()
    for mode in ("fast", "default"):
        want = torchmsa.align(records, device="cpu", mode=mode)
        (got,) = torchmsa.align_many([records], device="cpu", mode=mode, first_trees=[tree])
        assert got.format("fasta") == want.format("fasta")
        assert got.tree.newick() == want.tree.newick()
    st = Store.open(data_dir=data)
    try:  # the tree handed in is the one used: a NJ tree gives tree="nj"'s alignment
        nj, stats = shared_first_tree(st, records, hashes, "protein", "nj")
        assert stats["pairs_cached"] == stats["pairs"]
    finally:
        st.close()
    want = torchmsa.align(records, device="cpu", mode="fast", tree="nj")
    assert want.format("fasta") != torchmsa.align(records, device="cpu", mode="fast").format(
        "fasta"
    )
    (got,) = torchmsa.align_many([records], device="cpu", mode="fast", first_trees=[nj])
    assert got.format("fasta") == want.format("fasta")
    other = torchmsa.build_tree(records[:5], method="upgma_mafft", device="cpu", config=DEFAULT)
    with pytest.raises(torchmsa.errors.ArgumentError, match="distinct sequences"):
        torchmsa.align_many([records], device="cpu", mode="fast", first_trees=[other])
    with pytest.raises(torchmsa.errors.ArgumentError, match="one per input"):
        torchmsa.align_many([records], device="cpu", mode="fast", first_trees=[tree, tree])


def test_worker_warm_up_starts_the_cpu_processes(data):
    st = Store.open(data_dir=data)
    worker = Worker(st, device="cpu", cpu_workers=1)
    try:
        assert worker.warm_up() > 0
        assert worker._pool is not None and worker.costs is not None
        seqs = _family(5, 40, 31)
        job = st.submit(_fasta(seqs), {"mode": "fast"}, owner="u").id
        assert worker.run_once() == 1
        want = torchmsa.align(seqs, device="cpu", mode="fast")
        assert st.result(job, "fasta", "u") == want.format("fasta")
    finally:
        worker.close()
        st.close()
