"""Single linkage's dispatcher (``torchmsa.ops.linkage``): Borůvka's rounds on Triton against
Prim's on the host (``torchmsa.cpu.tree``), joins and heights bit for bit."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from torchmsa.cpu import tree as cpu_tree
from torchmsa.ops.linkage import single_linkage

CASES = [(1, 2), (2, 2), (3, 1), (17, 3), (20, 2), (33, 5), (40, 1000)]


def tie_heavy(rng, n, values):
    """Distances drawn from a few values (many equal pairs: the tie rule decides the tree)."""
    x = rng.integers(0, values, (n, n)).astype(float) / 3
    d = np.minimum(x, x.T)
    np.fill_diagonal(d, rng.random(n))  # the diagonal must be ignored
    return d


@pytest.mark.interpreter
def test_triton_equals_host(device):
    rng = np.random.default_rng(5)
    for n, values in CASES:
        d = tie_heavy(rng, n, values)
        want = cpu_tree.single_linkage(d)
        t = torch.from_numpy(d).to(device)
        before = t.clone()
        rounds = []
        children, heights = single_linkage(t, "triton", rounds=rounds)
        assert (n > 1) <= rounds[0] <= np.ceil(np.log2(n)), (n, rounds)  # Borůvka's bound
        assert np.array_equal(children, want[0]), (n, values)
        assert np.array_equal(heights, want[1]), (n, values)
        assert torch.equal(t, before)  # only read


def test_host_backend_takes_arrays_and_tensors():
    rng = np.random.default_rng(6)
    d = tie_heavy(rng, 25, 4)
    want = cpu_tree.single_linkage(d)
    for given in (d, torch.from_numpy(d)):
        children, heights = single_linkage(given)
        assert np.array_equal(children, want[0]) and np.array_equal(heights, want[1])
    children, heights = single_linkage(torch.from_numpy(d), "cpu")
    assert np.array_equal(children, want[0]) and np.array_equal(heights, want[1])


@pytest.mark.gpu
def test_gpu_auto_backend_equals_host_at_size():
    rng = np.random.default_rng(7)
    d = tie_heavy(rng, 3000, 40)
    want = cpu_tree.single_linkage(d)
    children, heights = single_linkage(torch.from_numpy(d).cuda())
    assert np.array_equal(children, want[0]) and np.array_equal(heights, want[1])
