"""Many families over ranks (``torchmsa.distributed``, issue #42): the chunks and their
claims, the world and device rules, and real runs under torchrun on the CPU with gloo (one
host, two ranks; two torchrun "nodes" on one host; ``align_many``; a rank that dies)."""

from __future__ import annotations

import importlib.util
import math
import os
import pickle
import random
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch

import torchmsa
from torchmsa.cli import batch, main
from torchmsa.cli.common import Parser
from torchmsa.config import AlignConfig
from torchmsa.distributed import (
    Claims,
    JobsFailed,
    World,
    compact,
    cost_rule,
    family_cost,
    guided,
    rank_device,
    text_shape,
    wanted,
)
from torchmsa.errors import ArgumentError, DeviceError
from torchmsa.synthetic import family

ROOT = Path(__file__).resolve().parents[1]
LAUNCHER = [sys.executable, "-m", "torch.distributed.run"]
HAS_TORCHRUN = (
    torch.distributed.is_available()
    and torch.distributed.is_gloo_available()
    and importlib.util.find_spec("torch.distributed.run") is not None
)
needs_torchrun = pytest.mark.skipif(not HAS_TORCHRUN, reason="torch.distributed.run with gloo")


# ---- the chunks and their claims --------------------------------------------------------------


def test_guided_chunks_take_each_family_once_costliest_first_and_shrink():
    assert guided([5, 1, 1, 1, 1, 1, 1, 1, 1, 1], 2) == [[0], [1, 2, 3], [4, 5], [6], [7], [8], [9]]
    assert guided([1.0] * 4, 1) == [[0, 1], [2], [3]]  # half of what is left, each
    assert guided([], 3) == []


@pytest.mark.parametrize("ranks", [1, 2, 3, 4, 7])
def test_guided_is_deterministic_and_cuts_at_half_a_share_of_what_is_left(ranks):
    rng = random.Random(ranks)
    costs = [rng.choice([0.0, 1.0, 5.0]) * rng.random() ** 3 * 1e9 for _ in range(97)]
    chunks = guided(costs, ranks)
    assert chunks == guided(list(costs), ranks)
    order = [i for c in chunks for i in c]
    assert order == sorted(range(len(costs)), key=lambda i: (-costs[i], i))
    left = sum(costs)
    for chunk in chunks:
        cost = sum(costs[i] for i in chunk)
        # the chunk's last family is the one that reached the line, or the very last one
        assert cost - costs[chunk[-1]] <= max(left, 0.0) / (2 * ranks) or chunk is chunks[-1]
        left -= cost
    assert len(chunks) > 2 * ranks  # the last chunks are small: they even out the ranks


def test_guided_refuses_what_it_cannot_cut():
    for ranks in (0, -1, 1.5, True):
        with pytest.raises(ArgumentError, match="`ranks`"):
            guided([1.0], ranks)
    for bad in (-1.0, math.nan, math.inf):
        with pytest.raises(ArgumentError, match="`costs`"):
            guided([1.0, bad], 2)


class _ThreadSession:
    """What :class:`Claims` uses of a session, for ranks that are threads of one process."""

    def __init__(self, rank: int, board: dict, ready):
        self.rank, self.leader, self.board, self.ready = rank, rank == 0, board, ready
        self.timeout_s, self.tag = 30.0, f"rank {rank}/2"

    def broadcast(self, obj=None):
        if self.leader:
            self.board["obj"] = obj
            self.ready.set()
        assert self.ready.wait(30)
        return self.board["obj"]

    def broken(self, what: str, exc: BaseException) -> str:
        return f"{self.tag}: {what} failed ({exc})"


def test_claims_hand_each_chunk_to_one_rank_and_more_to_the_faster_one():
    """Two ranks claim 24 chunks, one three times slower than the other: every chunk is
    claimed once, in order, most by the faster rank; pieces over PIECE bytes arrive whole."""
    import threading

    from torchmsa.distributed import claims as claims_mod

    chunks = [{"k": k, "blob": bytes([k]) * (k * 1000)} for k in range(24)]
    chunks[5]["blob"] = b"x" * (2 * claims_mod.PIECE + 17)  # three pieces
    board, ready, done = {}, threading.Event(), threading.Barrier(2, timeout=60)
    got: dict[int, list] = {0: [], 1: []}
    counts, errors = [], []

    def rank(r: int) -> None:
        try:
            claims = Claims(_ThreadSession(r, board, ready), chunks if r == 0 else None)
            for chunk in claims:
                got[r].append(chunk)
                time.sleep(0.003 if r == 0 else 0.009)
            counts.append((claims.claimed == len(got[r]), claims.count))
            done.wait()  # rank 0 serves the store until every rank is done claiming
            claims.close()
        except Exception as exc:  # noqa: BLE001 - handed to the test
            errors.append(exc)
            done.abort()

    threads = [threading.Thread(target=rank, args=(r,)) for r in (1, 0)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(60)
    assert not errors and counts == [(True, 24)] * 2
    assert sorted(c["k"] for r in got for c in got[r]) == list(range(24))
    assert all([c["k"] for c in got[r]] == sorted(c["k"] for c in got[r]) for r in got)
    assert [c for r in got for c in got[r] if c["k"] == 5][0]["blob"] == chunks[5]["blob"]
    assert len(got[0]) > len(got[1])


def test_claims_stop_every_rank_with_rank_0s_error():
    import threading

    board, ready = {}, threading.Event()
    errors = []

    def rank(r: int) -> None:
        try:
            Claims(_ThreadSession(r, board, ready), ArgumentError("no inputs") if r == 0 else None)
        except ArgumentError as exc:
            errors.append((r, str(exc)))

    threads = [threading.Thread(target=rank, args=(r,)) for r in (0, 1)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(30)
    assert sorted(errors) == [(0, "no inputs"), (1, "no inputs")]


def test_the_cost_model_follows_the_pipelines_passes():
    n, length = 300, 200
    one = family_cost(n, length, "default", "lcs") - 1.5 * n * n - n * length
    two = family_cost(n, length, "default") - 0.2 * n * n - n * length
    assert two == pytest.approx(3 * one)
    for mode, tree in [("fast", "upgma"), ("default", "upgma_mafft"), ("default", "lcs")]:
        assert family_cost(100, 200, mode, tree) < family_cost(101, 200, mode, tree)
        assert family_cost(101, 200, mode, tree) < family_cost(101, 201, mode, tree)
    assert family_cost(100, 200, "accurate") < family_cost(101, 200, "accurate")
    rule = cost_rule(None)  # auto mode: accurate up to 200 sequences, one pass above 500
    assert rule(201, 250) < rule(200, 250) and rule(501, 250) < rule(500, 250)
    # the fit of decision 0039: an accurate 150 x 250 family costs about six default ones of
    # 1,000 x 250 (CPU 8.7, H100 about 5)
    assert 4 < rule(150, 250) / rule(1000, 250) < 9
    fast = cost_rule(AlignConfig(mode="fast"))
    assert fast(150, 250) == family_cost(150, 250, "fast", "upgma_mafft")


def test_text_shape_counts_fasta_and_reads_other_formats():
    assert text_shape("\ufeff\n>a x\nMKV\r\nLA\n>b\nMK\n>c\n\n") == (3, 5)
    clustal = "CLUSTAL W\n\na    MKV-LA\nb    MK--LA\n"
    assert text_shape(clustal) == (2, 6)
    assert text_shape("not a sequence file at all {") == (0, 0)


def test_compact_writes_runs():
    assert compact([7, 0, 1, 2, 5, 8]) == "#0-2, #5, #7-8"
    assert compact([]) == "none"


# ---- the world, its devices, and when a call spreads ---------------------------------------


def _env(rank=0, size=2, local=0, **extra):
    env = {"RANK": str(rank), "WORLD_SIZE": str(size), "LOCAL_RANK": str(local)}
    return {**env, **{k: str(v) for k, v in extra.items()}}


def test_world_from_torchruns_variables():
    assert World.from_env({}) is None
    assert World.from_env({"RANK": "0", "WORLD_SIZE": "2"}) is None
    w = World.from_env(_env(3, 4, 1, LOCAL_WORLD_SIZE=2, GROUP_RANK=1))
    assert (w.rank, w.size, w.local_rank, w.local_size, w.node) == (3, 4, 1, 2, 1)
    assert str(w) == "rank 3/4"
    with pytest.raises(ArgumentError, match="RANK: 'x'"):
        World.from_env(_env(rank="x"))
    with pytest.raises(ArgumentError, match="rank 2 of a world of 2"):
        World.from_env(_env(2, 2))
    with pytest.raises(ArgumentError, match="local rank 2 of 2"):
        World.from_env(_env(0, 4, 2, LOCAL_WORLD_SIZE=2))


def test_wanted_spreads_only_over_several_ranks_unless_told():
    assert wanted(False, _env()) is None
    assert wanted("auto", {}) is None
    assert wanted("auto", _env(0, 1)) is None
    assert wanted("auto", _env(1, 2)) == World(1, 2, 0, 1)
    assert wanted("auto", _env(1, 2, TORCHMSA_DISTRIBUTED="off")) is None
    assert wanted(True, _env(0, 1)).size == 1
    with pytest.raises(ArgumentError, match="not started by torchrun"):
        wanted(True, {})
    with pytest.raises(ArgumentError, match="`distributed` argument: 'yes'"):
        wanted("yes", _env())


def test_each_rank_gets_its_own_gpu_or_the_cpu():
    w = World(1, 2, 1, 2)
    assert rank_device("cpu", w) == torch.device("cpu")
    if not torch.cuda.is_available():
        assert rank_device("auto", w) == torch.device("cpu")
        with pytest.raises(DeviceError, match="no CUDA GPU"):
            rank_device("cuda", w)
        return
    count = torch.cuda.device_count()
    if count > 1:
        assert rank_device("auto", w) == torch.device("cuda", 1)
    with pytest.raises(DeviceError, match="has no GPU of its own"):
        rank_device("cuda", World(count, count + 1, count, count + 1))


def test_jobs_failed_names_the_inputs_and_pickles():
    exc = JobsFailed({2: ValueError("bad  residue"), 5: KeyError("x")}, [None] * 6)
    assert "2 of 6 inputs failed (input 2: ValueError: bad residue; input 5: KeyError" in str(exc)
    again = pickle.loads(pickle.dumps(exc))
    assert list(again.errors) == [2, 5] and again.results == [None] * 6


def test_align_many_distributed_true_outside_torchrun_is_an_error(monkeypatch):
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ArgumentError, match="not started by torchrun"):
        torchmsa.align_many([["MKVL", "MKIL"]], device="cpu", distributed=True)


# ---- real runs under torchrun (gloo on the CPU) ---------------------------------------------

FAMILIES = {f"f{k}": family(5 + k, 24 + 4 * k, k, indels=True) for k in range(4)}


def _fasta(seqs) -> str:
    return "".join(f">s{i}\n{s}\n" for i, s in enumerate(seqs))


def _batch(argv: list[str]) -> int:
    parser = Parser(prog="torchmsa")
    batch.add_parser(parser.add_subparsers(dest="command", parser_class=Parser))
    args = parser.parse_args(["batch", *argv])
    return args.func(args)


@pytest.fixture(scope="module")
def families(tmp_path_factory):
    """Four small families, one file with an invalid character, and what one process makes
    of them (``single``)."""
    root = tmp_path_factory.mktemp("families")
    good = root / "in"
    good.mkdir()
    for name, seqs in FAMILIES.items():
        (good / f"{name}.fasta").write_text(_fasta(seqs))
    with_bad = root / "with_bad"
    with_bad.mkdir()
    for path in good.iterdir():
        (with_bad / path.name).write_bytes(path.read_bytes())
    (with_bad / "bad.fasta").write_text(">p\nMKV1AA\n>q\nMKVLA\n")
    single = root / "single"
    argv = [str(good), "-o", str(single), "--cpu-workers", "0", "--device", "cpu", "-q"]
    assert _batch(argv) == 0
    return {"good": good, "with_bad": with_bad, "single": single, "root": root}


def _child_env() -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


def _same_files(a: Path, b: Path) -> None:
    assert sorted(p.name for p in a.iterdir()) == sorted(p.name for p in b.iterdir())
    for p in a.iterdir():
        assert (b / p.name).read_bytes() == p.read_bytes(), p.name


def _two_ranks(argv: list[str], timeout: float = 120) -> subprocess.CompletedProcess:
    """``torchrun --standalone --nproc-per-node 2 ARGV`` (a script, or ``-m torchmsa ...``)
    run to its end, output captured."""
    cmd = LAUNCHER + ["--standalone", "--nproc-per-node", "2", *argv]
    return subprocess.run(
        cmd, env=_child_env(), cwd=ROOT, capture_output=True, text=True, timeout=timeout
    )


def _two_nodes(argv: list[str], env: dict, timeout: float = 120) -> list:
    """Two torchrun "nodes" on this host (c10d rendezvous on localhost): node 0 hosts the
    store. ``argv`` follows the launcher's options. Returns both finished processes."""
    port = _free_port()
    procs = []
    for node in (0, 1):
        cmd = LAUNCHER + ["--nnodes", "2", "--nproc-per-node", "1", "--node-rank", str(node)]
        cmd += ["--rdzv-backend", "c10d", "--rdzv-endpoint", f"localhost:{port}"]
        cmd += ["--rdzv-conf", f"is_host={int(node == 0)}", "--max-restarts", "0", *argv]
        node_env = {**env, "TEST_NODE": str(node)}
        procs.append(
            subprocess.Popen(
                cmd,
                env=node_env,
                cwd=ROOT,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )  # fmt: skip
        )
    out = []
    try:
        for p in procs:
            stdout, stderr = p.communicate(timeout=timeout)
            out.append(subprocess.CompletedProcess(p.args, p.returncode, stdout, stderr))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.communicate()
    return out


@needs_torchrun
def test_batch_on_two_ranks_writes_what_one_process_writes_and_reports_the_bad_file(
    families, tmp_path
):
    out = tmp_path / "out"
    args = [str(families["with_bad"]), "-o", str(out), "--cpu-workers", "0", "--device", "cpu"]
    proc = _two_ranks(["-m", "torchmsa", "batch", *args])
    err = proc.stderr
    assert proc.returncode == 1, err
    _same_files(families["single"], out)
    assert "bad.fasta: sequence 'p' (#1) has invalid character '1'" in err
    assert "torchmsa batch: 4 aligned, 0 skipped (done before), 1 failed" in err
    assert "on 2 ranks" in err and err.count("torchmsa batch: 4 aligned") == 1
    ran = [line for line in err.splitlines() if ": ran " in line]
    assert len(ran) == 2 and {"rank 0/2" in r for r in ran} == {True, False}
    assert sum(int(r.split(" aligned")[0].rsplit(" ", 1)[1]) for r in ran) == 4


@needs_torchrun
def test_batch_over_two_torchrun_nodes_on_one_host_resumes_and_matches(families, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    done = out / "f2.aln.fasta"
    done.write_bytes((families["single"] / done.name).read_bytes())
    later = time.time() + 60
    os.utime(done, (later, later))
    argv = ["-m", "torchmsa", "batch", str(families["good"]), "-o", str(out)]
    nodes = _two_nodes(argv + ["--cpu-workers", "0", "--device", "cpu"], _child_env())
    err = "".join(n.stderr for n in nodes)
    assert [n.returncode for n in nodes] == [0, 0], err
    _same_files(families["single"], out)
    assert "torchmsa batch: 3 aligned, 1 skipped (done before), 0 failed" in err
    assert done.stat().st_mtime == later
    assert err.count(": ran ") == 2


API_SCRIPT = """
import sys

import torch.distributed as dist
import torchmsa
from torchmsa.distributed import JobsFailed
from torchmsa.synthetic import family

fams = [family(4 + k, 20 + 3 * k, k) for k in range(5)]
want = [a.rows for a in torchmsa.align_many(fams, device="cpu", distributed=False)]
got = torchmsa.align_many(fams, device="auto")
rank = dist.get_rank()
assert [a.rows for a in got] == want
assert sorted({a.metadata["rank"] for a in got}) == [0, 1], [a.metadata for a in got]
try:
    torchmsa.align_many(fams[:2] + [["MKV1A", "MKVLA"]] + fams[2:], device="cpu")
    raise SystemExit("no error")
except JobsFailed as exc:
    assert list(exc.errors) == [2] and "invalid character '1'" in str(exc)
    assert [a.rows for a in exc.results if a is not None] == want
mine = torchmsa.align_many(fams[rank : rank + 2], device="cpu")  # each rank its own inputs
assert [a.rows for a in mine] == want[rank : rank + 2]
# one write of the whole line: two ranks share the pipe, and print's text and line end
# can reach it as two writes, interleaved with the other rank's (seen in CI under load)
sys.stdout.write(f"rank {rank} ok\\n")
sys.stdout.flush()
"""


@needs_torchrun
def test_align_many_under_torchrun_returns_the_whole_list_on_every_rank(tmp_path):
    script = tmp_path / "api.py"
    script.write_text(API_SCRIPT)
    proc = _two_ranks([str(script)])
    assert proc.returncode == 0, proc.stderr
    assert sorted(proc.stdout.split("\n")[:-1]) == ["rank 0 ok", "rank 1 ok"]


DYING_SCRIPT = """
import os, sys, time
from torchmsa.distributed import DistributedError, World, session

with session(World.from_env(), "cpu", timeout_s=60, keep=False) as s:
    def work(emit):
        if os.environ["TEST_NODE"] == "1":  # the node that does not host the store dies
            time.sleep(1.0)
            os._exit(3)
        time.sleep(100)

    t0 = time.perf_counter()
    try:
        s.run(work)
    except DistributedError as exc:
        print(f"stopped after {time.perf_counter() - t0:.1f} s: {exc}", flush=True)
        sys.exit(5)
"""


@needs_torchrun
def test_local_on_two_ranks_writes_what_one_process_writes(tmp_path):
    """``torchmsa local`` under torchrun: the subjects' strips shared by two ranks (decision
    0059), rank 0 writes one process's output, each rank logs its share."""
    rng = np.random.default_rng(5)
    amino = list("ARNDCQEGHILKMFPSTWYV")
    query = "".join(rng.choice(amino, 40))
    blocks = ["".join(rng.choice(amino, 480)) + query + "".join(rng.choice(amino, 480))]
    subject = "".join(blocks * 4)
    (tmp_path / "q.fa").write_text(f">q1\n{query}\n")
    (tmp_path / "s.fa").write_text(f">s1\n{subject}\n>s2\n{subject[::-1]}\n")
    args = ["local", str(tmp_path / "q.fa"), str(tmp_path / "s.fa"), "-k", "6", "--device", "cpu"]
    one = tmp_path / "one.tsv"
    assert main([*args, "-o", str(one), "--distributed", "off"]) == 0
    two = tmp_path / "two.tsv"
    proc = _two_ranks(["-m", "torchmsa", *args, "-o", str(two)])
    assert proc.returncode == 0, proc.stderr
    assert two.read_bytes() == one.read_bytes()
    rows = one.read_text().splitlines()[1:]
    assert len(rows) == 12 and rows[0].split("\t")[3] == rows[1].split("\t")[3]
    # a line per rank and subject (the ranks' lines may share a line of the merged stderr)
    assert proc.stderr.count("torchmsa local: rank") == 4, proc.stderr
    assert proc.stderr.count("torchmsa local: rank 1/2") == 2


@needs_torchrun
def test_a_rank_that_dies_stops_the_others_with_a_clear_error(tmp_path):
    script = tmp_path / "dies.py"
    script.write_text(DYING_SCRIPT)
    t0 = time.perf_counter()
    host, other = _two_nodes([str(script)], _child_env())
    assert host.returncode != 0 and other.returncode != 0
    assert time.perf_counter() - t0 < 60, "the surviving rank waited for its work"
    line = next(ln for ln in host.stdout.splitlines() if ln.startswith("stopped after"))
    assert "exchanging progress with the other ranks failed" in line
    assert float(line.split()[2]) < 30


@needs_torchrun
def test_align_on_two_ranks_writes_what_one_process_writes(tmp_path):
    """``torchmsa align`` under torchrun: PartTree's groups and the progressive pass shared by
    two ranks (decision 0068); each rank writes its share of the alignment's rows and rank 0
    the tree, the files one process writes, and each rank logs its shares."""
    seqs = family(90, 70, 1, indels=True) + family(70, 50, 2, indels=True)
    (tmp_path / "in.fa").write_text(_fasta(seqs))
    args = ["align", str(tmp_path / "in.fa"), "--device", "cpu", "--mode", "fast"]
    args += ["--tree", "parttree", "--config", "tree.parttree_n_ref=6"]
    args += ["--config", "tree.parttree_leaf_size=10", "-q"]
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir()
    two.mkdir()
    out = ["-o", str(one / "aln.fa"), "--tree-out", str(one / "tree.nwk")]
    assert main([*args, *out, "--distributed", "off"]) == 0
    out = ["-o", str(two / "aln.fa"), "--tree-out", str(two / "tree.nwk")]
    proc = _two_ranks(["-m", "torchmsa", *args, *out], timeout=180)
    assert proc.returncode == 0, proc.stderr
    _same_files(one, two)
    for rank in ("rank 0/2", "rank 1/2"):
        # PartTree, the pass and the rows written
        assert proc.stderr.count(f"torchmsa: {rank}") == 3, proc.stderr
    wrote = [line.split("wrote rows ")[1] for line in proc.stderr.splitlines() if "wrote" in line]
    assert sorted(w.split(" (")[0] for w in wrote) == ["0-80 of 160", "80-160 of 160"]


SHARED_API_SCRIPT = """
import os
import torchmsa
from torchmsa.errors import ArgumentError
from torchmsa.synthetic import family

rank = int(os.environ["RANK"])
cfg = dict(device="cpu", mode="fast")
same = family(40, 50, 7, indels=True)  # every rank: shared, one process's alignment
got = torchmsa.align(same, **cfg)
assert got.rows == torchmsa.align(same, distributed=False, **cfg).rows
assert (got.metadata["rank"], got.metadata["world_size"]) == (rank, 2)
assert got.metadata["ranks_alike"] is True
own = family(40, 50, rank, indels=True)  # each rank its own: each aligns its own
mine = torchmsa.align(own, **cfg)
assert mine.rows == torchmsa.align(own, distributed=False, **cfg).rows
assert mine.metadata["ranks_alike"] is False
try:
    torchmsa.align(own, distributed=True, **cfg)
except ArgumentError as exc:
    print(f"rank {rank} refused: {'other sequences' in str(exc)}", flush=True)
"""


@needs_torchrun
def test_align_under_torchrun_shares_only_what_every_rank_holds(tmp_path):
    """``align`` under torchrun: ranks with the same input share it and return one process's
    alignment; ranks with inputs of their own each align their own (``"auto"``), or are
    refused (``distributed=True``) rather than mixing their parts."""
    script = tmp_path / "shared.py"
    script.write_text(SHARED_API_SCRIPT)
    proc = _two_ranks([str(script)], timeout=180)
    assert proc.returncode == 0, proc.stderr
    # the ranks' lines may share a line of the merged output
    assert proc.stdout.count("refused: True") == 2 and "False" not in proc.stdout
    assert "rank 0 refused" in proc.stdout and "rank 1 refused" in proc.stdout
    # one shared pass, logged by each rank: the same input's; the others were not shared
    for rank in ("rank 0/2", "rank 1/2"):
        assert proc.stderr.count(f"torchmsa: {rank}") == 1, proc.stderr
