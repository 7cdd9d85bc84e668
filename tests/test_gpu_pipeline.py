"""The whole pipeline on a CUDA GPU: identical to the CPU path (marker ``gpu``)."""

import os
from pathlib import Path

import pytest
import torch

import torchmsa
from torchmsa.config import ExecutionPolicy
from torchmsa.errors import DeviceError

pytestmark = pytest.mark.gpu
needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")

ROOT = Path(__file__).parent.parent


def _balibase(name: str = "balibase3") -> Path | None:
    for base in (
        os.environ.get("TORCHMSA_BENCH_DATA"),
        ROOT / ".devdata",
        ROOT.parent / "shared" / "benchmarks",
    ):
        if base and (Path(base) / name).is_dir():
            return Path(base) / name
    return None


# every job on the device, so these tests compare the GPU path (small jobs would run on the
# host: see the dispatch test); accurate jobs too (their stage-1 alignments in Triton)
DEVICE = ExecutionPolicy(host_job_cells=-1, host_accurate_cells=-1)


def _stages(fn, *args, **kwargs):
    """``fn(*args, **kwargs)`` and how often each ``torchmsa.*`` profiler range ran in it."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        out = fn(*args, **kwargs)
    names = [e.name for e in prof.events() if e.name.startswith("torchmsa.")]
    return out, {name: names.count(name) for name in set(names)}


@needs_cuda
def test_small_jobs_run_on_the_host_and_return_on_the_device():
    # the small jobs (N L^2 86,400; accurate: 216,000 pair cells) on the host, the large one
    # (6.4 million; accurate: 124.8 million) on the GPU
    small_jobs = ExecutionPolicy(host_job_cells=1 << 22, host_accurate_cells=1 << 22)
    rng = torch.Generator().manual_seed(3)
    letters = "ACDEFGHIKLMNPQRSTVWY"

    def family(n, length):
        base = torch.randint(0, 20, (length,), generator=rng)
        rows = []
        for _ in range(n):
            mut = base.clone()
            hit = torch.rand(length, generator=rng) < 0.2
            mut[hit] = torch.randint(0, 20, (int(hit.sum()),), generator=rng)
            rows.append("".join(letters[k] for k in mut.tolist()))
        return rows

    small, large = family(6, 120), family(40, 400)  # N L^2: 86,400 and 6.4 million
    for mode in ("default", "accurate"):
        jobs = [small, large, small[:3]]
        got = torchmsa.align_many(jobs, device="cuda", mode=mode, policy=small_jobs)
        want = torchmsa.align_many(jobs, device="cuda", mode=mode, policy=DEVICE)
        places = [a.metadata["computed_on"] for a in got]
        assert places[0] == places[2] == "cpu" and places[1].startswith("cuda"), places
        assert [a.metadata["backend"] for a in got] == ["cpu", "triton", "cpu"]
        for g, w in zip(got, want):
            assert g.codes.device.type == "cuda" and g.metadata["device"].startswith("cuda")
            assert torch.equal(g.codes, w.codes) and g.rows == w.rows


@needs_cuda
def test_auto_device_is_cuda_and_recorded():
    aln = torchmsa.align(["MKVLAAGHW", "MKVLAGHW", "MKILAAGHW"], device="auto", policy=DEVICE)
    assert aln.metadata["device"].startswith("cuda") and aln.metadata["backend"] == "triton"
    assert aln.codes.device.type == "cuda"


@needs_cuda
def test_uploads_arrive_whole_while_the_device_is_busy():
    import numpy as np

    from torchmsa.ops.backend import to_device

    dev = torch.device("cuda")
    busy = torch.randn(4096, 4096, device=dev)
    for _ in range(20):  # queued work that a waiting copy would have to outlast
        busy = busy @ busy.T / 4096
    host = np.arange(1 << 22, dtype=np.int64)
    got = to_device(host, dev, torch.int32)
    host[:] = -1  # the copy was taken before the call returned
    assert got.dtype == torch.int32 and got.device.type == "cuda"
    assert torch.equal(got.cpu(), torch.arange(1 << 22, dtype=torch.int32))
    assert torch.isfinite(busy).all()


@needs_cuda
def test_missing_cuda_device_is_a_clear_error():
    with pytest.raises(DeviceError, match="does not exist"):
        torchmsa.align(["MKV", "MKV"], device=f"cuda:{torch.cuda.device_count()}")


@needs_cuda
@pytest.mark.parametrize("mode", ["fast", "default", "accurate"])
def test_gpu_and_cpu_alignments_are_identical_on_balibase(mode):
    data = _balibase()
    if data is None:
        pytest.skip("BAliBASE data not found")
    first = int(os.environ.get("TORCHMSA_GPU_FIRST", "0"))  # a slice of the cases per call
    limit = int(os.environ.get("TORCHMSA_GPU_CASES", "0")) or None
    cases = sorted(p.name.split(".")[0] for p in data.glob("*.in.fasta"))[first:][:limit]
    chunk = 64
    for k in range(0, len(cases), chunk):
        paths = [str(data / f"{c}.in.fasta") for c in cases[k : k + chunk]]
        gpu = torchmsa.align_many(paths, device="cuda", mode=mode, policy=DEVICE)
        cpu = torchmsa.align_many(paths, device="cpu", mode=mode)
        for case, g, c in zip(cases[k : k + chunk], gpu, cpu):
            assert torch.equal(g.codes.cpu(), c.codes), case
            assert g.rows == c.rows, case
        print(f"{mode}: cases {first + k}..{first + k + len(paths) - 1} identical", flush=True)


@needs_cuda
def test_gpu_and_cpu_alignments_are_identical_on_large_families():
    # above TreeConfig.lcs_min_n sequences default mode takes the LCS tree (Triton vs numba)
    data = _balibase("balifam1000")
    if data is None:
        pytest.skip("balifam1000 data not found")
    paths = [str(p) for p in sorted(data.glob("*.in.fasta.gz"))[:3]]
    for path in paths:
        gpu = torchmsa.align(path, device="cuda", mode="default", policy=DEVICE)
        cpu = torchmsa.align(path, device="cpu", mode="default")
        assert gpu.metadata["tree"] == cpu.metadata["tree"] == "lcs", path
        assert torch.equal(gpu.codes.cpu(), cpu.codes), path
        assert gpu.rows == cpu.rows, path


@needs_cuda
@pytest.mark.parametrize("cells", [-1, 1 << 17, 1 << 40])
def test_levels_on_the_gpu_the_cpu_or_both_give_the_same_alignments(cells):
    # small levels run in numba on the CPU, larger ones batched on the GPU (1 << 17 cells
    # mixes both on these cases); here also every level on one side
    data = _balibase()
    if data is None:
        pytest.skip("BAliBASE data not found")
    paths = [str(p) for p in sorted(data.glob("*.in.fasta"))[::12]]
    want = torchmsa.align_many(paths, device="cpu", mode="default")
    policy = ExecutionPolicy(host_job_cells=-1, cpu_level_cells=cells, cpu_pair_cells=cells)
    used = {"torchmsa.progressive_host": 0, "torchmsa.progressive_level": 0}
    # one case per call: its first levels are large, its last small (align_many's shared
    # levels stay large)
    for path, c in zip(paths, want):
        g, seen = _stages(torchmsa.align, path, device="cuda", mode="default", policy=policy)
        assert torch.equal(g.codes.cpu(), c.codes), path
        for name in used:
            used[name] += seen.get(name, 0)
    on_host, batched = used.values()
    assert (on_host > 0) == (cells != -1) and (batched > 0) == (cells != 1 << 40)


@needs_cuda
@pytest.mark.parametrize("cells", [-1, None, 1 << 40])
def test_refinement_on_the_gpu_the_host_or_both_gives_the_same_alignments(cells):
    # by default small edge evaluations run in numba on the host, larger ones batched on the
    # GPU; here also every evaluation on one side
    data = _balibase()
    if data is None:
        pytest.skip("BAliBASE data not found")
    paths = [str(p) for p in sorted(data.glob("*.in.fasta"))[5::24]]
    want = {m: torchmsa.align_many(paths, device="cpu", mode=m) for m in ("default", "accurate")}
    policy = DEVICE
    if cells is not None:
        policy = ExecutionPolicy(
            host_job_cells=-1, host_accurate_cells=-1, host_cells=cells, host_edge_cells=cells
        )
    if cells == -1:  # no whole job on the host either (its refinement would run there)
        policy = ExecutionPolicy(host_job_max_n=-1, host_cells=-1, host_edge_cells=-1)
    used = {"host": 0, "gpu": 0}
    for mode, cpu in want.items():
        for path, c in zip(paths, cpu):
            g, seen = _stages(torchmsa.align, path, device="cuda", mode=mode, policy=policy)
            assert torch.equal(g.codes.cpu(), c.codes), (mode, path)
            used["host"] += seen.get("torchmsa.refine_host", 0)
            used["host"] += seen.get("torchmsa.refine_host_edge", 0)
            used["gpu"] += seen.get("torchmsa.refine_batch", 0)
    assert (used["host"] > 0) == (cells != -1) and (used["gpu"] > 0) == (cells != 1 << 40)
