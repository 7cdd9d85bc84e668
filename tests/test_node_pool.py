"""The node pool's rebuild when full (``progressive/nodes.py``): how large, and through host
memory when the old and new buffers do not fit together."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from torchmsa.errors import ResourceError
from torchmsa.progressive.nodes import GROWTH, Nodes, Pool, _gather, rebuild_plan

A = 5  # residue states per profile row
ROW, BND = 4 * A, 8  # bytes of a profile row and of a boundary


def _bytes(g, rows, bnds, slack):
    return (int(g * rows) + slack) * ROW + (int(g * bnds) + slack) * BND


def test_rebuild_plan_takes_the_largest_growth_that_fits():
    rows, bnds, slack, old = 1000, 1100, 16, 20_000
    # no limit (a host pool): twice the rows, as before
    assert rebuild_plan(rows, bnds, slack, A, old, None) == (2016, 2216, False)
    for g in GROWTH:  # room for exactly growth g beside the old buffers
        room = _bytes(g, rows, bnds, slack)
        assert rebuild_plan(rows, bnds, slack, A, old, room) == (
            int(g * rows) + slack,
            int(g * bnds) + slack,
            False,
        )
    # not even growth 1 beside the old buffers: through host memory, the largest that fits
    # in the room the old buffers leave
    room = _bytes(1.0, rows, bnds, slack) - 1
    g = next(g for g in GROWTH if _bytes(g, rows, bnds, slack) <= room + old)
    assert g == 1.5  # 1.5 fits in the room plus the old buffers, 2 does not
    assert rebuild_plan(rows, bnds, slack, A, old, room) == (
        int(g * rows) + slack,
        int(g * bnds) + slack,
        True,
    )


def test_rebuild_plan_raises_with_the_true_sizes():
    rows, bnds, slack, old = 1000, 1100, 16, 3000
    least = _bytes(1.0, rows, bnds, slack)
    with pytest.raises(ResourceError) as err:
        rebuild_plan(rows, bnds, slack, A, old, least - old - 1, "the profiles of 7 nodes")
    assert err.value.needed == least and err.value.available == least - 1
    assert "the profiles of 7 nodes (1016 rows)" in str(err.value)
    assert "device='cpu'" in str(err.value)
    # one byte more and it fits, through host memory
    assert rebuild_plan(rows, bnds, slack, A, old, least - old, "x")[2]


def test_rebuild_through_host_keeps_the_live_rows_in_order():
    rng = np.random.default_rng(3)
    pool = Pool(torch.device("cpu"), A, 40)
    pool.prof.copy_(torch.from_numpy(rng.integers(-9, 9, (40, A), dtype=np.int32)))
    pool.both.copy_(torch.from_numpy(rng.integers(0, 99, 40)))
    idx_r = np.array([7, 8, 9, 30, 31, 2], dtype=np.int64)
    idx_b = np.array([7, 8, 9, 10, 30, 31, 32, 2, 3], dtype=np.int64)
    want_p, want_b = pool.prof[idx_r].clone(), pool.both[idx_b].clone()  # numpy indices
    nodes = Nodes.__new__(Nodes)
    nodes.n_alpha = A
    # two profile rows a chunk: the chunks' seams are exercised
    nodes._rebuild_through_host(pool, idx_r, idx_b, 12, 20, chunk=2 * (ROW + 8))
    assert pool.prof.shape == (12, A) and pool.both.shape == (20,)
    assert torch.equal(pool.prof[:6], want_p) and torch.equal(pool.both[:9], want_b)


@pytest.mark.parametrize("chunk", [1, 3 * (ROW + 8), 1 << 20])
def test_gather_in_chunks_equals_one_index(chunk):
    rng = np.random.default_rng(chunk)
    src = torch.from_numpy(rng.integers(-99, 99, (50, A), dtype=np.int32))
    idx = rng.integers(0, 50, 23).astype(np.int64)
    dst = torch.zeros((30, A), dtype=torch.int32)
    _gather(src, idx, dst[:23], chunk)
    assert torch.equal(dst[:23], src[idx]) and not dst[23:].any()
