"""Accurate mode's library from the pair HMM's posteriors (``ConsistencyConfig.entries``)."""

from __future__ import annotations

import numba
import numpy as np
import pytest
import torch

import torchmsa
from tests.test_consistency import AMINO, _family
from torchmsa.config import AlignConfig, ConsistencyConfig, ExecutionPolicy
from torchmsa.consistency import local_library
from torchmsa.consistency.posterior import blosum_odds, posterior_entries
from torchmsa.scoring import get_scoring
from torchmsa.sequences import SequenceBatch


def _library(seqs, config, policy=None):
    batch = SequenceBatch.from_input(seqs, "protein")
    mat = torch.from_numpy(get_scoring("protein", "BLOSUM62", 11, 1).matrix.copy())
    lib = local_library(
        batch.codes, batch.lengths, mat, 11, 1, backend="cpu", config=config, policy=policy
    )
    return batch, mat, lib


def _entries(lib):
    return {
        (x, i, y, j): w
        for x, i, y, j, w in zip(*(t.tolist() for t in (lib.x, lib.i, lib.y, lib.j, lib.w)))
    }


@pytest.mark.parametrize("floor", [1, 16])
def test_posterior_library_is_the_pairs_posteriors(floor):
    seqs = _family(3)
    config = ConsistencyConfig(entries="posterior", posterior_floor=floor)
    # one pair per call as well as all at once: the same library
    batch, mat, lib = _library(seqs, config, ExecutionPolicy(local_batch_cells=1))
    _, _, whole = _library(seqs, config)
    xs, ys = torch.triu_indices(len(seqs), len(seqs), 1)
    pair, i, j, w = posterior_entries(
        batch.codes, batch.lengths, xs, ys, blosum_odds(mat.numpy()), weight_max=64
    )
    want = {
        (int(xs[p]), a, int(ys[p]), b): v
        for p, a, b, v in zip(pair.tolist(), i.tolist(), j.tolist(), w.tolist())
        if v >= floor
    }
    assert _entries(lib) == want == _entries(whole)
    assert lib.dist.tolist() == whole.dist.tolist()


def test_both_is_the_mean_of_the_two_libraries():
    seqs = _family(4) + ["".join(np.random.default_rng(1).choice(list(AMINO), 30))]
    glob = _entries(_library(seqs, ConsistencyConfig(entries="global"))[2])
    post = _entries(_library(seqs, ConsistencyConfig(entries="posterior", posterior_floor=8))[2])
    both = _entries(_library(seqs, ConsistencyConfig(entries="both", posterior_floor=8))[2])
    want = {}
    for key in set(glob) | set(post):
        v = (glob.get(key, 0) + post.get(key, 0) + 1) // 2
        if v > 0:
            want[key] = v
    assert both == want
    assert set(glob) - set(post) and set(post) - set(glob)  # the sources differ


def test_posterior_accurate_mode_is_the_same_on_any_thread_count():
    seqs = _family(5, n=8, length=50)
    config = AlignConfig(
        mode="accurate", consistency=ConsistencyConfig(entries="both", posterior_floor=16)
    )
    prev = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = torchmsa.align(seqs, device="cpu", config=config)
        numba.set_num_threads(min(2, numba.config.NUMBA_NUM_THREADS))
        two = torchmsa.align(seqs, device="cpu", config=config)
    finally:
        numba.set_num_threads(prev)
    assert one.rows == two.rows
    assert [r.replace("-", "") for r in one.rows] == seqs
    assert one.metadata["library_entries"] > 0


def test_weights_stay_within_weight_max_where_the_rows_range_fails():
    # swapped 400-residue domains: posteriors above 1 come out (tests/test_pairhmm.py's known
    # limit); their weights are clamped to weight_max, not wrapped around a byte
    rng = np.random.default_rng(2)
    a, b = (rng.integers(0, 20, 400) for _ in range(2))
    codes = torch.from_numpy(np.stack([np.r_[a, b], np.r_[b, a]]).astype(np.uint8))
    lengths = torch.tensor([800, 800])
    mat = get_scoring("protein", "BLOSUM62", 11, 1).matrix
    one = torch.tensor([0])
    *_, w = posterior_entries(codes, lengths, one, one + 1, blosum_odds(mat), weight_max=64)
    assert w.numel() > 0 and int(w.max()) <= 64 and int(w.min()) >= 1


def test_similarity_scales_each_pair_by_its_distance():
    seqs = _family(6) + ["".join(np.random.default_rng(2).choice(list(AMINO), 30))]
    plain = ConsistencyConfig(entries="posterior", posterior_floor=8)
    scaled = ConsistencyConfig(entries="posterior", posterior_floor=8, posterior_similarity=True)
    _, _, lib = _library(seqs, plain)
    _, _, got = _library(seqs, scaled)
    want = {}
    for (x, i, y, j), w in _entries(lib).items():
        sim = round((1.0 - lib.dist[x, y]) * 64)
        v = (w * sim + 32) // 64
        if v > 0:
            want[x, i, y, j] = v
    assert _entries(got) == want
    assert sum(want.values()) < int(lib.w.sum())  # no pair is identical: all weigh less


def test_the_budget_counts_every_posterior_partner_a_residue_may_have():
    from torchmsa.config import MemoryBudget
    from torchmsa.consistency.library import entries_per_residue, library_bytes
    from torchmsa.errors import ResourceError

    assert entries_per_residue(ConsistencyConfig()) == 1
    assert entries_per_residue(ConsistencyConfig(entries="posterior", posterior_floor=16)) == 4
    assert entries_per_residue(ConsistencyConfig(entries="both", posterior_floor=1)) == 129
    seqs = _family(7)
    batch = SequenceBatch.from_input(seqs, "protein")
    one = library_bytes(batch.lengths)
    mat = torch.from_numpy(get_scoring("protein", "BLOSUM62", 11, 1).matrix.copy())
    # fits for the global library, not for posteriors of weight 1 and up
    tight = MemoryBudget(host_bytes=one)
    config = ConsistencyConfig(entries="posterior")
    local_library(batch.codes, batch.lengths, mat, 11, 1, backend="cpu", budget=tight)
    with pytest.raises(ResourceError):
        local_library(
            batch.codes, batch.lengths, mat, 11, 1, backend="cpu", config=config, budget=tight
        )


def test_free_ratio_frees_the_ends_of_fragment_pairs_only():
    seqs = _family(3) + ["ACDEFGHIKLMN"]  # a fragment-sized sequence
    lens = [len(s) for s in seqs]

    def lib(**kw):
        return _entries(_library(seqs, ConsistencyConfig(entries="posterior", **kw))[2])

    glob, free = lib(), lib(posterior_free_ends=True)
    mixed = lib(posterior_free_ratio=0.5)

    def fragment(key):
        a, b = lens[key[0]], lens[key[2]]
        return min(a, b) < 0.5 * max(a, b)

    want = {k: v for k, v in glob.items() if not fragment(k)}
    want.update({k: v for k, v in free.items() if fragment(k)})
    assert mixed == want
    assert any(fragment(k) for k in want) and glob != free
