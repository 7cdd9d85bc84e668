"""Triton k-mer kernels against the numba CPU twin and brute-force counting.

``interpreter`` tests use a few sequences of at most 20 residues (Triton's interpreter on CPU,
compiled kernels on a GPU); ``gpu`` tests use real sizes and need CUDA.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
import torch

from torchmsa.alphabet import PROTEIN
from torchmsa.config import ExecutionPolicy
from torchmsa.cpu import kmer as cpu_kmer
from torchmsa.errors import ResourceError
from torchmsa.ops import kmer_stream
from torchmsa.ops.kmer import kmer_ids, pair_counts, reduced_map, shared_kmer_counts
from torchmsa.sequences import SequenceBatch

DAYHOFF = {
    c: g for g, letters in enumerate(["AGPST", "C", "DENQ", "FWY", "HKR", "ILMV"]) for c in letters
}
AMINO = "ACDEFGHIKLMNPQRSTVWY"


@pytest.fixture(autouse=True)
def poison_empty(monkeypatch):
    """Fresh buffers hold garbage, so output a kernel never wrote cannot pass as zeros."""
    empty, empty_like = torch.empty, torch.empty_like

    def poison(t):
        return t.fill_(7 if t.dtype in (torch.uint8, torch.int8, torch.bool) else -7)

    monkeypatch.setattr(torch, "empty", lambda *a, **k: poison(empty(*a, **k)))
    monkeypatch.setattr(torch, "empty_like", lambda *a, **k: poison(empty_like(*a, **k)))


def brute(a: list[str], b: list[str], k: int) -> np.ndarray:
    """sum over k-mers of min(count in a, count in b), every window of counted letters."""

    def kmers(s: str) -> Counter:
        return Counter(
            tuple(DAYHOFF[c] for c in s[p : p + k])
            for p in range(len(s) - k + 1)
            if all(c in DAYHOFF for c in s[p : p + k])
        )

    ca, cb = [kmers(s) for s in a], [kmers(s) for s in b]
    return np.array([[sum((x & y).values()) for y in cb] for x in ca], dtype=np.int32)


def tiny_seqs(seed: int, n: int = 9) -> list[str]:
    """Lengths 0 .. 20 around a shared ancestor, with repeats and uncounted letters."""
    rng = np.random.default_rng(seed)
    base = "".join(rng.choice(list(AMINO), 20))
    out = ["", "M", "AAAAAAAAAAAAAAAAAAAA", "AGAGAGAGAGAGXAGAGAG*"]
    for _ in range(n - len(out)):
        s = list(base[: int(rng.integers(2, 21))])
        for p in rng.integers(0, len(s), 3):
            s[p] = str(rng.choice(list(AMINO + "X")))
        out.append("".join(s))
    return out


def ids_of(seqs: list[str], k: int, device) -> tuple[torch.Tensor, torch.Tensor]:
    batch = SequenceBatch.from_input(seqs, "protein", device)
    return kmer_ids(batch.codes, batch.lengths, reduced_map(PROTEIN), k, "triton")


@pytest.mark.interpreter
@pytest.mark.parametrize("k", [1, 3, 6])
def test_kmer_ids_match_cpu(k, device):
    seqs = tiny_seqs(k)
    ids, n = ids_of(seqs, k, device)
    batch = SequenceBatch.from_input(seqs, "protein")
    want_ids, want_n = cpu_kmer.kmer_ids(batch.codes, batch.lengths, reduced_map(PROTEIN), k)
    assert torch.equal(ids.cpu(), want_ids) and torch.equal(n.cpu(), want_n)


@pytest.mark.interpreter
@pytest.mark.parametrize("method", ["matrix", "lists"])
@pytest.mark.parametrize("k", [2, 6])
def test_shared_counts_match_cpu_and_brute_force(method, k, device):
    policy = ExecutionPolicy(kmer_method=method)
    a, b = tiny_seqs(10 + k), tiny_seqs(20 + k, 5)
    got = shared_kmer_counts(a, k=k, device=device, backend="triton", policy=policy)
    assert got.dtype == torch.int32 and got.device.type == torch.device(device).type
    assert torch.equal(got.cpu(), shared_kmer_counts(a, k=k, device="cpu", backend="cpu"))
    np.testing.assert_array_equal(got.cpu().numpy(), brute(a, a, k))
    cross = shared_kmer_counts(a, b, k=k, device=device, backend="triton", policy=policy)
    np.testing.assert_array_equal(cross.cpu().numpy(), brute(a, b, k))


@pytest.mark.interpreter
@pytest.mark.parametrize("method", ["matrix", "lists"])
@pytest.mark.parametrize("symmetric", [True, False], ids=["all-pairs", "cross"])
def test_tiles_cover_the_matrix(method, symmetric, device):
    # tiles of 4 x 4 over 10 x 10 (or 10 x 7): edge tiles, mirrored diagonal tiles
    a, b = tiny_seqs(3, 10), tiny_seqs(4, 7)
    ids_a, n_a = ids_of(a, 3, device)
    ids_b, n_b = (None, None) if symmetric else ids_of(b, 3, device)
    want = brute(a, a if symmetric else b, 3)
    seen = np.zeros(want.shape, np.int64)
    tiles = kmer_stream.count_tiles(ids_a, n_a, ids_b, n_b, method=method, tile=4)
    for r0, c0, t in tiles:
        assert not symmetric or c0 >= r0
        rows, cols = slice(r0, r0 + t.shape[0]), slice(c0, c0 + t.shape[1])
        np.testing.assert_array_equal(t.cpu().numpy(), want[rows, cols], err_msg=f"{r0},{c0}")
        seen[rows, cols] += 1
    expect = np.triu(np.ones_like(seen)) if symmetric else np.ones_like(seen)
    assert ((seen > 0) >= expect).all() and seen.max() == 1
    full = kmer_stream.full_counts(ids_a, n_a, ids_b, n_b, method=method, tile=4)
    np.testing.assert_array_equal(full.cpu().numpy(), want)


@pytest.mark.interpreter
def test_pair_counts_match_cpu_and_brute_force(device):
    seqs = tiny_seqs(5, 8)
    ids, n = ids_of(seqs, 3, device)
    p = torch.tensor([0, 3, 3, 7, 2, 6, 5, 1])
    q = torch.tensor([7, 3, 2, 6, 2, 4, 5, 0])
    got = pair_counts(ids, n, ids, n, p.to(ids.device), q.to(ids.device), "triton")
    want = brute(seqs, seqs, 3)[p.numpy(), q.numpy()]
    np.testing.assert_array_equal(got.cpu().numpy(), want)
    np.testing.assert_array_equal(
        cpu_kmer.pair_counts(ids.cpu(), n.cpu(), ids.cpu(), n.cpu(), p, q).numpy(), want
    )


def test_cpu_tiles_match_cpu_counts():
    seqs = tiny_seqs(6, 9)
    batch = SequenceBatch.from_input(seqs, "protein")
    ids, n = cpu_kmer.kmer_ids(batch.codes, batch.lengths, reduced_map(PROTEIN), 3)
    full = kmer_stream.full_counts(ids, n, backend="cpu", tile=4)
    np.testing.assert_array_equal(full.numpy(), brute(seqs, seqs, 3))


def test_resource_error_when_no_tile_fits():
    ids = torch.zeros(3, 5, dtype=torch.int32)
    n = torch.tensor([5, 5, 5], dtype=torch.int32)
    with pytest.raises(ResourceError) as err:
        next(kmer_stream.count_tiles(ids, n, backend="cpu", budget=8))
    assert err.value.needed == 8 * 3 * 3 and err.value.available == 8
    with pytest.raises(ResourceError, match="matrix of shared k-mer counts"):
        kmer_stream.full_counts(ids, n, backend="cpu", budget=16)


def test_plan_tiles_fills_the_budget():
    # N x n blocks: the short side whole, the long one as long as the budget allows
    budget, k, width = 2 << 30, 50_000, 300
    plan = kmer_stream.plan_tiles(5000, 100_000, k, width, budget, "matrix", False)
    assert plan.tm == 5000 and plan.tn < kmer_stream.MAX_TILE and plan.needed <= budget
    longer = plan.tn + kmer_stream.TILE_STEP
    assert kmer_stream.tile_bytes(5000, longer, k, width, "matrix", False) > budget
    square = kmer_stream.plan_tiles(100_000, 100_000, k, width, budget, "matrix", True)
    assert square.tm == square.tn and square.tm % kmer_stream.TILE_STEP == 0
    assert square.needed <= budget
    assert kmer_stream.plan_tiles(100_000, 100_000, k, width, 1 << 40, "lists", True).tm == (
        kmer_stream.MAX_TILE
    )


def family(n: int, length: int, seed: int) -> list[str]:
    """n sequences in clusters of 50 around random ancestors, 25% substitutions, some
    truncated, and a few low-complexity repeats (many copies of one k-mer)."""
    rng = np.random.default_rng(seed)
    out = []
    for c in range(0, n, 50):
        anc = rng.choice(list(AMINO), length)
        for i in range(min(50, n - c)):
            s = anc.copy()
            sub = rng.random(length) < 0.25
            s[sub] = rng.choice(list(AMINO), int(sub.sum()))
            text = "".join(s[: int(rng.integers(length // 2, length + 1))])
            out.append(text + "Q" * 40 if i % 17 == 0 else text)
    return out


@pytest.mark.gpu
@pytest.mark.parametrize("method", ["matrix", "lists"])
def test_gpu_counts_equal_cpu_at_size(method):
    policy = ExecutionPolicy(kmer_method=method)
    a, b = family(3000, 300, 0), family(700, 250, 1)
    want = shared_kmer_counts(a, device="cpu", backend="cpu")
    assert torch.equal(shared_kmer_counts(a, device="cuda", policy=policy).cpu(), want)
    cross = shared_kmer_counts(a, b, device="cuda", policy=policy).cpu()
    assert torch.equal(cross, shared_kmer_counts(a, b, device="cpu", backend="cpu"))


@pytest.mark.gpu
@pytest.mark.parametrize("method", ["matrix", "lists"])
def test_gpu_tiles_equal_full(method):
    seqs = family(2100, 300, 2)
    batch = SequenceBatch.from_input(seqs, "protein", "cuda")
    ids, n = kmer_ids(batch.codes, batch.lengths, reduced_map(PROTEIN), 6, "triton")
    want = cpu_kmer.shared_counts(ids.cpu(), n.cpu())
    tiled = kmer_stream.full_counts(ids, n, method=method, tile=768)
    assert torch.equal(tiled.cpu(), want)


@pytest.mark.gpu
def test_gpu_pair_counts_equal_cpu():
    seqs = family(2000, 300, 3)
    batch = SequenceBatch.from_input(seqs, "protein", "cuda")
    ids, n = kmer_ids(batch.codes, batch.lengths, reduced_map(PROTEIN), 6, "triton")
    rng = np.random.default_rng(0)
    p = torch.from_numpy(rng.integers(0, 2000, 100_000))
    q = torch.from_numpy(rng.integers(0, 2000, 100_000))
    got = pair_counts(ids, n, ids, n, p.cuda(), q.cuda(), "triton").cpu()
    assert torch.equal(got, cpu_kmer.pair_counts(ids.cpu(), n.cpu(), ids.cpu(), n.cpu(), p, q))
