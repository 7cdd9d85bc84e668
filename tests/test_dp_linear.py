"""Linear-space traceback (``torchmsa/cpu/dp_linear.py``) against the full-matrix path.

Every comparison is exact: score, op count, start, end and every op, with strips as narrow as
one column so that paths cross many strip boundaries (gaps in a included).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numba
import numpy as np
import pytest
import torch

from torchmsa.alphabet import get_alphabet
from torchmsa.config import MemoryBudget
from torchmsa.constants import MODES, OP_LEFT
from torchmsa.cpu import dp as cpu_dp
from torchmsa.cpu import dp_linear
from torchmsa.errors import ResourceError
from torchmsa.ops.pairwise import encode_sequences, pairwise_align, pairwise_traceback
from torchmsa.scoring import get_scoring

GAPS = [(10, 1), (3, 1), (1, 1), (2, 0), (0, 0), (6, 3), (1, 3)]  # (0, 0), (2, 0): many ties;
# (1, 3): opening is cheaper than extending, so strips are filled by the scalar loop
AWKWARD = [0, 1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 33]


def _matrix(seqtype: str) -> np.ndarray:
    return np.array(get_scoring(get_alphabet(seqtype), None, 10, 1).matrix, np.int32)


def _related(rng, size: int, n: int, m: int) -> tuple[np.ndarray, np.ndarray]:
    """``a`` of length n and ``b`` of length m, b a mutated copy of a with indels (so that
    alignments hold long gaps), cut or padded to m."""
    a = rng.integers(0, size, n).astype(np.uint8)
    b = a.copy()
    b[rng.random(n) < 0.2] = rng.integers(0, size, 1)[0]
    if n > 4 and rng.random() < 0.7:  # a long deletion and a long insertion
        cut = int(rng.integers(0, n - 3))
        b = np.concatenate([b[:cut], b[cut + int(rng.integers(1, n - cut)) :]])
        at = int(rng.integers(0, len(b) + 1))
        b = np.insert(b, at, rng.integers(0, size, int(rng.integers(1, 2 * n))).astype(np.uint8))
    b = np.concatenate([b, rng.integers(0, size, max(0, m - len(b))).astype(np.uint8)])[:m]
    return a, b


def _batch(pairs):
    """Padded ``(codes_a, len_a, codes_b, len_b)`` numpy arrays of ``[(a, b), ...]``."""
    out = []
    for side in (0, 1):
        lengths = np.array([len(p[side]) for p in pairs], np.int32)
        codes = np.zeros((len(pairs), max(1, int(lengths.max()))), np.uint8)
        for k, p in enumerate(pairs):
            codes[k, : lengths[k]] = p[side]
        out += [codes, lengths]
    return out


def _full(arrays, mat, go, ge, mode):
    info, ops = cpu_dp.pairwise_align(
        *map(torch.from_numpy, arrays), torch.from_numpy(mat), go, ge, mode
    )
    return info.numpy(), ops.numpy()


def _linear(arrays, mat, go, ge, mode, width):
    ca, la, cb, lb = arrays
    ops = np.zeros((len(la), ca.shape[1] + cb.shape[1]), np.uint8)
    info = np.zeros((len(la), 6), np.int32)
    pairs = np.arange(len(la))
    dp_linear.align_pairs_linear(
        ca, la, cb, lb, mat, go, ge, mode, pairs, ops, info, parallel=False, width=width
    )
    return info, ops


def _assert_same(full, linear, what: str) -> None:
    (fi, fo), (li, lo) = full, linear
    bad = np.nonzero((fi != li).any(1) | (fo != lo).any(1))[0]
    assert not len(bad), (
        f"{what}: {len(bad)} pairs differ, first {bad[:5].tolist()}: full {fi[bad[0]].tolist()} "
        f"linear {li[bad[0]].tolist()}"
    )


@pytest.mark.parametrize("seqtype", ["protein", "dna"])
@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("width", [1, 2, 3, 7, 16], ids=lambda w: f"W{w}")
def test_linear_equals_full_matrix_on_random_pairs(seqtype, mode, width):
    rng = np.random.default_rng([width, MODES[mode], len(seqtype)])
    mat = _matrix(seqtype)
    size = 20 if seqtype == "protein" else 4
    for go, ge in GAPS:
        sizes = [(int(rng.choice(AWKWARD)), int(rng.choice(AWKWARD))) for _ in range(24)]
        sizes += [tuple(int(x) for x in rng.integers(0, 70, 2)) for _ in range(16)]
        arrays = _batch([_related(rng, size, n, m) for n, m in sizes])
        _assert_same(
            _full(arrays, mat, go, ge, MODES[mode]),
            _linear(arrays, mat, go, ge, MODES[mode], width),
            f"{seqtype} {mode} W={width} gaps {go},{ge}",
        )


@pytest.mark.parametrize("mode", list(MODES))
def test_edge_cases(mode):
    """Empty and one-residue sides, strips wider than ``b``, no positive local score."""
    mat = _matrix("dna")  # codes 0..3 are A, C, G, T
    pairs = [
        ([], []),
        ([], [0, 1, 2]),
        ([0, 1, 2], []),
        ([0], [0]),
        ([0], [1]),
        ([1], [0, 1, 2, 3, 0, 1, 2]),
        ([0, 1, 2, 3, 0, 1, 2], [3]),
        ([0, 0, 0, 0], [1, 1, 1, 1]),  # every local score <= 0: an empty alignment
        ([2] * 9, [2] * 30),
    ]
    arrays = _batch([(np.array(a, np.uint8), np.array(b, np.uint8)) for a, b in pairs])
    full = _full(arrays, mat, 10, 1, MODES[mode])
    for width in (1, 2, 5, 29, 30, 31, 1000):
        _assert_same(full, _linear(arrays, mat, 10, 1, MODES[mode], width), f"{mode} W={width}")


def test_a_gap_in_a_crosses_strip_boundaries():
    """b holds 40 residues that a lacks: the path's run of ``OP_LEFT`` spans ten strips."""
    rng = np.random.default_rng(7)
    mat = _matrix("protein")
    a = rng.integers(0, 20, 60).astype(np.uint8)
    b = np.concatenate([a[:30], rng.integers(0, 20, 40).astype(np.uint8), a[30:]])
    arrays = _batch([(a, b)])
    for mode in MODES.values():
        linear = _linear(arrays, mat, 10, 1, mode, 4)
        _assert_same(_full(arrays, mat, 10, 1, mode), linear, f"mode {mode}")
        left = np.concatenate([[0], linear[1][0, : linear[0][0, 1]] == OP_LEFT, [0]])
        edges = np.diff(left.astype(np.int8))
        runs = np.nonzero(edges == -1)[0] - np.nonzero(edges == 1)[0]  # lengths of OP_LEFT runs
        assert runs.max() >= 40, f"mode {mode}: longest gap in a {runs.max()}"


def _strings(rng, n: int, m: int) -> tuple[str, str]:
    letters = np.frombuffer(b"ACDEFGHIKLMNPQRSTVWY", np.uint8)
    a, b = _related(rng, 20, n, m)
    return letters[a].tobytes().decode(), letters[b].tobytes().decode()


@pytest.mark.parametrize("mode", list(MODES))
def test_a_small_budget_routes_the_public_api_to_the_linear_path(mode):
    rng = np.random.default_rng(3)
    a, b = _strings(rng, 300, 2000)
    full, linear = dp_linear.full_bytes(300, 2000), dp_linear.linear_bytes(300, 2000, 127)
    budget = 4 * linear  # far below the full matrices, above the linear path's need
    assert dp_linear.needs_linear([300], [2000], budget).all() and budget < full
    assert pairwise_align(a, b, mode=mode, budget=budget) == pairwise_align(a, b, mode=mode)
    with pytest.raises(ResourceError, match="linear-space traceback of pair 0"):
        pairwise_align(a, b, mode=mode, budget=MemoryBudget(host_bytes=linear // 2))


def test_a_batch_sends_only_its_large_pairs_to_the_linear_path():
    rng = np.random.default_rng(5)
    sizes = [(40, 50), (400, 1500), (7, 0), (60, 33), (1200, 300)]
    a, b = zip(*(_strings(rng, n, m) for n, m in sizes))
    ea, eb = (
        encode_sequences(list(a), seqtype="protein"),
        encode_sequences(list(b), seqtype="protein"),
    )
    # the full path counts each pair once per pair running beside it
    budget = min(numba.get_num_threads(), len(sizes)) * (400 << 10)
    huge = dp_linear.needs_linear(ea.lengths.numpy(), eb.lengths.numpy(), budget)
    assert huge.tolist() == [False, True, False, False, True]
    for mode in MODES:
        args = (ea.codes, ea.lengths, eb.codes, eb.lengths)
        got = pairwise_traceback(*args, mode=mode, budget=budget)
        want = pairwise_traceback(*args, mode=mode)
        for name, x, y in zip(got._fields, got, want):
            assert torch.equal(x, y), (mode, name)


MEMORY_CHECK = """
import numpy as np
from torchmsa import pairwise_align
from torchmsa.config import MemoryBudget

def rss(field):
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith(field))

rng = np.random.default_rng(11)
letters = np.frombuffer(b"ACDEFGHIKLMNPQRSTVWY", np.uint8)
b = rng.integers(0, 20, 60000).astype(np.uint8)
a = b[20000:23000].copy()
a[rng.random(3000) < 0.2] = 3
a, b = (letters[x].tobytes().decode() for x in (a, b))
budget = MemoryBudget(host_bytes=64 << 20)
pairwise_align(a[:20], b[:200], mode="local", budget=12000)  # loads the compiled code
try:
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # resets the peak (VmHWM) to the current RSS
except OSError:
    print("skip: /proc/self/clear_refs cannot reset the peak RSS here")
    raise SystemExit
before = rss("VmRSS:")
r = pairwise_align(a, b, mode="local", budget=budget)
growth = rss("VmHWM:") - before
print(growth, r.score, pairwise_align(a, b, mode="local", traceback=False).score)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/status")
def test_peak_memory_of_a_large_local_alignment_stays_far_below_the_full_matrices():
    """3,000 x 60,000 local: the full matrices take 900 MB, the linear path about 5 MB."""
    run = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(MEMORY_CHECK)], capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr
    if run.stdout.startswith("skip:"):
        pytest.skip(run.stdout[5:].strip())
    growth, score, score_only = map(int, run.stdout.split())
    full = dp_linear.full_bytes(3000, 60000)
    assert growth < full / 20, f"peak RSS grew by {growth / 2**20:.1f} MiB"
    assert score == score_only > 0
