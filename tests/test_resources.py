"""Every stage under forced small memory budgets: it succeeds (streaming, splitting, or a
degraded mode that the metadata names) or raises ``ResourceError`` with its true figures and
the limit that applied, never a raw torch / numpy error (issue #43). Also: the command line
under an address-space limit, and torchmsa without Triton installed."""

from __future__ import annotations

import random
import resource
import subprocess
import sys
import textwrap

import pytest
import torch

import torchmsa
from torchmsa import MemoryBudget
from torchmsa.consistency import library_bytes, local_library
from torchmsa.consistency.library import ENTRY_BYTES
from torchmsa.errors import DeviceError, ResourceError
from torchmsa.pipeline.accurate import local_scoring
from torchmsa.sequences import SequenceBatch

AA = "ACDEFGHIKLMNPQRSTVWY"

# (mode, tree): the stages each reaches. fast: k-mer distances (streamed tiles) -> first tree
# -> progressive levels; default: + alignment distances -> second tree -> refinement; lcs: LCS
# distances -> single linkage; parttree: PartTree's k-mer counts; accurate: the library.
STAGES = [
    ("fast", "upgma"),
    ("default", "auto"),
    ("default", "lcs"),
    ("fast", "parttree"),
    ("accurate", "auto"),
]
BUDGETS = [1, 1 << 12, 1 << 17, 1 << 20, 1 << 26]


def _family(n: int, length: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    base = [rng.choice(AA) for _ in range(length)]
    out = []
    for _ in range(n):
        s = list(base)
        for _ in range(length // 8):
            s[rng.randrange(length)] = rng.choice(AA)
        out.append("".join(s))
    return out


def _small(b: int) -> MemoryBudget:
    return MemoryBudget(host_bytes=b, device_bytes=b)


def _check_resource_error(exc: ResourceError, budget: int) -> None:
    assert exc.available <= budget
    assert exc.needed > exc.available
    assert "MiB" in str(exc) and "\n" not in str(exc)


@pytest.mark.parametrize("mode, tree", STAGES, ids=[f"{m}-{t}" for m, t in STAGES])
@pytest.mark.parametrize("budget", BUDGETS, ids=[f"B{b}" for b in BUDGETS])
def test_align_on_the_host_streams_degrades_or_says_why(mode, tree, budget):
    seqs = _family(40, 60, seed=1)
    try:
        aln = torchmsa.align(seqs, device="cpu", mode=mode, tree=tree, budget=_small(budget))
    except ResourceError as exc:
        _check_resource_error(exc, budget)
        return
    assert [r.replace("-", "") for r in aln.rows] == seqs
    if mode == "accurate" and aln.metadata["mode"] != "accurate":
        assert aln.metadata["mode"] == "default"
        assert "library" in aln.metadata["degraded"]


def test_a_budget_of_one_byte_fails_with_the_true_figures():
    with pytest.raises(ResourceError) as info:
        torchmsa.align(_family(20, 40), device="cpu", mode="fast", budget=_small(1))
    _check_resource_error(info.value, 1)
    assert "host_bytes" in str(info.value)


def test_progressive_levels_split_under_a_small_budget():
    seqs = _family(40, 60, seed=2)
    big = torchmsa.align(seqs, device="cpu", mode="fast", tree="upgma")
    small = torchmsa.align(seqs, device="cpu", mode="fast", tree="upgma", budget=_small(1 << 17))
    assert torch.equal(big.codes, small.codes)


def test_accurate_mode_degrades_when_its_library_does_not_fit():
    seqs = _family(30, 50, seed=3)
    need = library_bytes(torch.tensor([len(s) for s in seqs]))
    aln = torchmsa.align(seqs, device="cpu", mode="accurate", budget=_small(need // 2))
    assert aln.metadata["mode"] == "default" and aln.metadata["requested_mode"] == "accurate"
    assert f"{need / 2**20:.1f} MiB" in aln.metadata["degraded"]
    assert "host_bytes" in aln.metadata["degraded"]
    roomy = torchmsa.align(seqs, device="cpu", mode="accurate", budget=_small(need))
    assert roomy.metadata["mode"] == "accurate" and "degraded" not in roomy.metadata


def test_library_guard_raises_with_the_true_figures():
    b = SequenceBatch.from_input(_family(10, 30, seed=4))
    local = local_scoring(b.alphabet)
    need = library_bytes(b.lengths)
    assert need >= 10 * 9 // 2 * 30 * 8  # at least 30 entries a pair of eight-byte columns
    with pytest.raises(ResourceError) as info:
        local_library(
            b.codes, b.lengths, local.matrix, local.gap_open, local.gap_extend, "cpu",
            budget=_small(need - 1),
        )  # fmt: skip
    assert info.value.needed == need and info.value.available == need - 1
    lib = local_library(
        b.codes, b.lengths, local.matrix, local.gap_open, local.gap_extend, "cpu",
        budget=_small(need),
    )  # fmt: skip
    assert len(lib) <= 10 * 9 // 2 * 30


def test_library_bound_holds_for_identical_lengths_and_mixed_ones():
    assert library_bytes(torch.tensor([5])) == 8
    same = library_bytes(torch.tensor([10, 10, 10]))
    mixed = library_bytes(torch.tensor([10, 1, 10]))
    assert same == 3 * 10 * ENTRY_BYTES + 8 * 9  # three pairs of 10, and the distances
    assert mixed == (10 + 1 + 1) * ENTRY_BYTES + 8 * 9  # a pair holds its shorter's entries


@pytest.mark.parametrize("budget", [1, 1 << 12, 1 << 20], ids=lambda b: f"B{b}")
def test_kmer_counts_stream_or_say_why(budget):
    seqs = _family(30, 40, seed=5)
    whole = torchmsa.shared_kmer_counts(seqs, device="cpu")
    try:
        tiled = torchmsa.shared_kmer_counts(seqs, device="cpu", budget=_small(budget))
    except ResourceError as exc:
        _check_resource_error(exc, budget)
        return
    assert torch.equal(whole, tiled)


@pytest.mark.interpreter
@pytest.mark.parametrize("budget", [1, 1 << 12, 1 << 16], ids=lambda b: f"B{b}")
def test_kernels_under_a_small_device_budget_say_why(device, budget):
    # on a GPU the device budget applies; in the interpreter (CPU tensors) the host budget
    seqs = _family(12, 30, seed=6)
    for mode, tree in [("fast", "upgma"), ("fast", "parttree"), ("default", "lcs")]:
        try:
            torchmsa.align(
                seqs, device=device, backend="triton", mode=mode, tree=tree,
                budget=_small(budget),
            )  # fmt: skip
        except ResourceError as exc:
            _check_resource_error(exc, budget)
        else:
            pytest.fail(f"{mode}/{tree} fit in {budget} bytes")


@pytest.mark.gpu
@pytest.mark.parametrize("mode, tree", STAGES, ids=[f"{m}-{t}" for m, t in STAGES])
@pytest.mark.parametrize("budget", [1, 1 << 16, 1 << 20, 1 << 26], ids=lambda b: f"B{b}")
def test_align_on_a_gpu_streams_degrades_or_says_why(mode, tree, budget):
    seqs = _family(300, 120, seed=7)
    try:
        aln = torchmsa.align(
            seqs, device="cuda", backend="triton", mode=mode, tree=tree, budget=_small(budget)
        )
    except ResourceError as exc:
        _check_resource_error(exc, budget)
        return
    assert [r.replace("-", "") for r in aln.rows] == seqs


def _limited(limit: int):
    def apply():
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    return apply


@pytest.mark.parametrize("mode", ["default", "accurate"])
def test_cli_under_an_address_space_limit(tmp_path, mode):
    path = tmp_path / "mid.fasta"
    path.write_text("".join(f">m{k}\n{s}\n" for k, s in enumerate(_family(400, 150, seed=8))))
    out = tmp_path / "out.fasta"
    cmd = [sys.executable, "-m", "torchmsa", "align", str(path), "-o", str(out)]
    proc = subprocess.run(
        cmd + ["--mode", mode, "--device", "cpu"],
        preexec_fn=_limited(3 << 30),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    if proc.returncode == 0:
        assert out.read_text().count(">") == 400
    else:
        assert proc.returncode == 2
        lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
        assert len(lines) == 1 and lines[0].startswith("torchmsa: error:"), proc.stderr


BLOCK_TRITON = """
import importlib.abc, sys

class NoTriton(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name == "triton" or name.startswith("triton."):
            raise ImportError(f"No module named {name!r}")
        return None

sys.meta_path.insert(0, NoTriton())
for name in [m for m in sys.modules if m == "triton" or m.startswith("triton.")]:
    del sys.modules[name]
"""


def _without_triton(body: str, interpret: bool = False) -> subprocess.CompletedProcess:
    env = {k: v for k, v in __import__("os").environ.items() if k != "TRITON_INTERPRET"}
    if interpret:
        env["TRITON_INTERPRET"] = "1"
    return subprocess.run(
        [sys.executable, "-c", BLOCK_TRITON + textwrap.dedent(body)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )


def test_the_cpu_path_needs_no_triton():
    proc = _without_triton(
        """
        import torchmsa
        seqs = ["MKVLAAGHWLLK", "MKVLAGHWLLK", "GSTWPQMKVLA", "MKVLSAGHW"]
        for mode in ("fast", "default", "accurate"):
            torchmsa.align(seqs, device="cpu", mode=mode)
        torchmsa.pairwise_align(seqs[0], seqs[1], device="cpu")
        torchmsa.shared_kmer_counts(seqs, device="cpu")
        torchmsa.build_tree(seqs, device="cpu")
        assert not any(m == "triton" or m.startswith("triton.") for m in sys.modules)
        print("ok")
        """
    )
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-3000:]


@pytest.mark.parametrize(
    "interpret",
    [False, True],
    ids=["plain", "interpret"],
)
def test_backend_triton_without_triton_is_a_device_error(interpret):
    proc = _without_triton(
        """
        import torchmsa
        try:
            torchmsa.align(["MKVLAAGHW", "MKVLAGHW", "GSTWPQ"], device="cpu", backend="triton")
        except torchmsa.errors.DeviceError as exc:
            print("DeviceError", exc)
        """,
        interpret=interpret,
    )
    assert proc.returncode == 0 and proc.stdout.startswith("DeviceError"), proc.stderr[-3000:]
    assert issubclass(DeviceError, RuntimeError)
