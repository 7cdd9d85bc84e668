"""The consistency transformation (``torchmsa.cpu.extend``) against a plain-Python oracle."""

from __future__ import annotations

import random
from collections import defaultdict

import numba
import numpy as np
import pytest
import torch

from torchmsa.consistency import Library
from torchmsa.consistency.extend import extend_library
from torchmsa.cpu import extend as ext


def _oracle(entries, lengths, a, b, den):
    """Dicts and loops: the module's formula, entry by entry."""
    n = len(lengths)
    rows = defaultdict(list)  # (a, b, i) -> [(j, w)]
    for x, i, y, j, w in entries:
        rows[x, y, i].append((j, w))
        rows[y, x, j].append((i, w))
    out = []
    for x in range(n):
        for y in range(x + 1, n):
            for i in range(lengths[x]):
                acc = defaultdict(int)
                for j, w in rows[x, y, i]:
                    acc[j] += a * w
                for z in range(n):
                    if z in (x, y):
                        continue
                    for k, w1 in rows[x, z, i]:
                        for j, w2 in rows[z, y, k]:
                            acc[j] += b * w1 * w2
                for j in sorted(acc):
                    v = (2 * acc[j] + den) // (2 * den)
                    if v > 0:
                        out.append((x, i, y, j, v))
    return out


def _random_library(rng, n, max_len, wmax, partners):
    lengths = [rng.randint(1, max_len) for _ in range(n)]
    seen = set()
    entries = []
    for x in range(n):
        for y in range(x + 1, n):
            for _ in range(rng.randint(0, partners * min(lengths[x], lengths[y]))):
                i, j = rng.randrange(lengths[x]), rng.randrange(lengths[y])
                if (x, i, y, j) not in seen:
                    seen.add((x, i, y, j))
                    entries.append((x, i, y, j, rng.randint(1, wmax)))
    rng.shuffle(entries)
    return entries, lengths


def _columns(entries):
    if not entries:
        return [np.zeros(0, np.int64) for _ in range(5)]
    return [np.array(c, np.int64) for c in zip(*entries)]


@pytest.mark.parametrize("seed", range(12))
def test_matches_oracle(seed):
    rng = random.Random(seed)
    wmax = rng.choice([1, 8, 64])
    a, b, den = rng.choice([0, 1, 7, 128]), rng.choice([1, 3]), rng.choice([1, 5, 64, 300])
    entries, lengths = _random_library(rng, rng.randint(2, 7), 9, wmax, rng.choice([1, 2]))
    got = ext.extend_entries(*_columns(entries), np.array(lengths), a, b, den)
    assert list(zip(*(t.tolist() for t in got))) == _oracle(entries, lengths, a, b, den)


def test_two_sequences_keep_their_library():
    entries = [(0, 0, 1, 1, 5), (0, 2, 1, 2, 64), (0, 1, 1, 0, 1)]
    x, i, y, j, w = (torch.tensor(c) for c in zip(*entries))
    lib = Library(x, i, y, j, w, np.zeros((2, 2)))
    assert extend_library(lib, torch.tensor([3, 3]), (1, 2), 64) is lib
    got = ext.extend_entries(*_columns(entries), np.array([3, 3]), 7, 1, 7)
    assert sorted(zip(*(t.tolist() for t in got))) == sorted(entries)


def test_third_sequence_adds_the_pair_it_implies():
    # 0-2 and 2-1 pair residue 0 of sequence 0 with residue 3 of sequence 1 through 2's residue 1
    entries = [(0, 0, 2, 1, 64), (1, 3, 2, 1, 64)]
    x, i, y, j, w = (torch.tensor(c) for c in zip(*entries))
    lib = Library(x, i, y, j, w, np.zeros((3, 3)))
    out = extend_library(lib, torch.tensor([2, 4, 2]), (1, 2), 64)
    implied = list(zip(out.x.tolist(), out.i.tolist(), out.y.tolist(), out.j.tolist()))
    # half of the mean over the one third sequence: 64 * 64 / 64 / 2
    assert implied[:1] == [(0, 0, 1, 3)] and out.w[0] == 32
    # each direct entry keeps half its weight: no third sequence confirms it
    assert out.w[implied.index((0, 0, 2, 1))] == 32


def test_threads_and_twin_agree():
    rng = random.Random(7)
    entries, lengths = _random_library(rng, 12, 30, 64, 2)
    cols = _columns(entries)
    lens = np.array(lengths)
    prev = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = ext.extend_entries(*cols, lens, 2 * 64, 1, 12 * 64)
        numba.set_num_threads(min(2, numba.config.NUMBA_NUM_THREADS))
        rows = ext.library_rows(*cols, lens)
        xs, ys = (a.astype(np.int64) for a in np.triu_indices(len(lengths), 1))
        args = (xs, ys, len(lengths), lens.astype(np.int64), *rows, 2 * 64, 1, 12 * 64)
        counts_p = np.zeros(xs.shape[0], np.int64)
        counts_s = np.zeros(xs.shape[0], np.int64)
        empty = np.zeros(0, np.int64)
        ext._extend_parallel(*args, counts_p, empty, empty, empty, empty)
        ext._extend_serial(*args, counts_s, empty, empty, empty, empty)
    finally:
        numba.set_num_threads(prev)
    assert counts_p.tolist() == counts_s.tolist()
    assert int(counts_p.sum()) == one[0].shape[0]


def test_library_keeps_device_distances_and_spans():
    entries = [(0, 0, 1, 0, 40), (0, 1, 1, 1, 40), (0, 0, 2, 0, 40), (1, 0, 2, 0, 40)]
    x, i, y, j, w = (torch.tensor(c) for c in zip(*entries))
    dist = np.full((3, 3), 0.5)
    lib = Library(x, i, y, j, w, dist, np.zeros((0, 6), np.int64))
    out = extend_library(lib, torch.tensor([2, 2, 1]), (1, 4), 64)
    assert out.dist is dist and out.spans is lib.spans
    assert out.x.dtype == torch.int64 and out.x.device == x.device
    got = set(zip(out.x.tolist(), out.i.tolist(), out.y.tolist(), out.j.tolist()))
    assert (0, 0, 1, 0) in got and (0, 1, 1, 1) in got


def test_share_must_be_a_fraction():
    from torchmsa.config import ConsistencyConfig

    with pytest.raises(ValueError):
        ConsistencyConfig(extend_share=(3, 2))


def test_a_library_beyond_the_budget_raises_with_its_sizes():
    from torchmsa.config import MemoryBudget
    from torchmsa.consistency.library import ENTRY_BYTES
    from torchmsa.errors import ResourceError

    rng = random.Random(3)
    entries, lengths = _random_library(rng, 6, 20, 64, 2)
    x, i, y, j, w = (torch.from_numpy(c) for c in _columns(entries))
    lib = Library(x, i, y, j, w, np.zeros((6, 6)))
    small = MemoryBudget(host_bytes=ENTRY_BYTES * 3)
    with pytest.raises(ResourceError) as err:
        extend_library(lib, torch.tensor(lengths), (1, 2), 64, small)
    assert err.value.available == 3 * ENTRY_BYTES and err.value.needed > err.value.available
