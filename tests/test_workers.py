"""torchmsa in worker processes and threads (torchmsa.runtime): after an ``align`` in the parent,
forked ``DataLoader`` workers and a fork ``Pool`` align without a crash or a hang; several
Python threads may align at once; the threading layer never changes an alignment.

Each scenario runs in a fresh interpreter under a timeout, so a hang fails the test instead of
the suite, and a parent that aligned before forking is what the scenario sets up."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import textwrap

import pytest

FAMILIES = """
import random
def families(count, seed=0):
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        base = [rng.choice("ACDEFGHIKLMNPQRSTVWY") for _ in range(rng.randint(20, 60))]
        fam = []
        for _ in range(rng.randint(3, 8)):
            s = list(base)
            for _ in range(len(s) // 6):
                s[rng.randrange(len(s))] = rng.choice("ACDEFGHIKLMNPQRSTVWY")
            fam.append("".join(s))
        out.append(fam)
    return out
"""


def _run(body: str, timeout: float = 240, env: dict | None = None) -> str:
    code = FAMILIES + textwrap.dedent(body)
    full_env = {k: v for k, v in os.environ.items() if k != "NUMBA_THREADING_LAYER"}
    full_env.update(env or {})
    try:
        proc = subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=full_env,
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"hung for {timeout} s; stderr: {exc.stderr!r}")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Terminating" not in proc.stderr, proc.stderr[-3000:]
    return proc.stdout


def test_dataloader_with_forked_workers_after_an_align():
    out = _run(
        """
        import torch, torchmsa
        from torch.utils.data import DataLoader, Dataset

        fams = families(100)
        torchmsa.align(fams[0], device="cpu", mode="default")  # the parent has aligned

        class Families(Dataset):
            def __len__(self):
                return len(fams)
            def __getitem__(self, i):
                return torchmsa.align(fams[i], device="cpu", mode="default").rows

        loader = DataLoader(
            Families(), batch_size=None, num_workers=4,
            multiprocessing_context="fork", timeout=120,
        )
        rows = list(loader)
        assert len(rows) == 100
        assert all([r.replace("-", "") for r in rw] == f for rw, f in zip(rows, fams))
        print("ok", torchmsa.runtime.describe()["threading_layer"])
        """
    )
    assert out.startswith("ok")


def test_fork_pool_map_after_an_align():
    out = _run(
        """
        import multiprocessing, torchmsa

        fams = families(12, seed=1)
        parent = [torchmsa.align(f, device="cpu", mode="default").rows for f in fams]

        def work(f):
            return torchmsa.align(f, device="cpu", mode="default").rows

        with multiprocessing.get_context("fork").Pool(2) as pool:
            child = pool.map_async(work, fams).get(timeout=120)
        assert child == parent
        print("ok")
        """
    )
    assert out.startswith("ok")


def test_threads_align_at_once():
    out = _run(
        """
        import concurrent.futures as cf, torchmsa

        fams = families(16, seed=2)
        alone = [torchmsa.align(f, device="cpu", mode="default").rows for f in fams]
        with cf.ThreadPoolExecutor(4) as ex:
            together = list(ex.map(lambda f: torchmsa.align(f, device="cpu").rows, fams))
        assert together == alone
        print("ok")
        """
    )
    assert out.startswith("ok")


def _digest(env: dict) -> str:
    return _run(
        """
        import hashlib, torchmsa
        fams = families(6, seed=3)
        big = [s for f in fams for s in f]
        codes = [torchmsa.align(big, device="cpu", mode=m).codes for m in ("fast", "default")]
        print(hashlib.sha1(b"".join(c.numpy().tobytes() for c in codes)).hexdigest())
        print(torchmsa.runtime.describe())
        """,
        env=env,
    )


def test_threading_layer_does_not_change_alignments():
    safe = _digest({})
    omp = _digest({"NUMBA_THREADING_LAYER": "omp"})
    assert "'threading_layer': 'omp'" in omp and "'threading_layer_source': 'env'" in omp
    assert "'threading_layer_source': 'torchmsa'" in safe
    assert "'threading_layer': 'omp'" not in safe
    assert safe.split()[0] == omp.split()[0]
    assert len(hashlib.sha1().hexdigest()) == len(safe.split()[0])


def test_forked_child_gets_one_torch_thread():
    out = _run(
        """
        import os, torch, torchmsa
        torch.set_num_threads(2)
        torchmsa.align(families(1)[0], device="cpu")
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.write(w, f"{torch.get_num_threads()} {torchmsa.runtime.in_forked_child()}".encode())
            os._exit(0)
        os.waitpid(pid, 0)
        print(os.read(r, 100).decode(), torchmsa.runtime.in_forked_child())
        """
    )
    assert out.split() == ["1", "True", "False"]
