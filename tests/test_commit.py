"""Group commit for POST /jobs (torchmsa.serve.commit): jobs submitted while a write is under
way are written together; every request gets its own job back; a failing job fails alone."""

from __future__ import annotations

import asyncio
import time

import pytest

from torchmsa.serve.commit import GroupCommit


class _Store:
    """insert() echoes each staged value, after a pause; a value "bad" makes the batch raise."""

    def __init__(self):
        self.batches: list[list] = []

    def insert(self, staged):
        self.batches.append(list(staged))
        time.sleep(0.01)
        if "bad" in staged:
            raise ValueError("bad row")
        return [f"info-{s}" for s in staged]


async def _submit_all(commits, values):
    return await asyncio.gather(*(commits.submit(v) for v in values), return_exceptions=True)


def test_jobs_arriving_together_share_a_write():
    store = _Store()
    values = [str(i) for i in range(40)]
    got = asyncio.run(_submit_all(GroupCommit(store), values))
    assert got == [f"info-{v}" for v in values]
    assert sorted(v for b in store.batches for v in b) == sorted(values)  # each written once
    assert len(store.batches) < len(values)  # they shared transactions


def test_a_failing_job_fails_alone():
    store = _Store()
    got = asyncio.run(_submit_all(GroupCommit(store), ["a", "b", "bad", "c", "d"]))
    assert isinstance(got[2], ValueError)
    assert [g for k, g in enumerate(got) if k != 2] == ["info-a", "info-b", "info-c", "info-d"]


def test_writes_again_after_a_pause():
    store = _Store()

    async def run():
        commits = GroupCommit(store)
        first = await commits.submit("x")
        await asyncio.sleep(0.05)
        return first, await commits.submit("y")

    assert asyncio.run(run()) == ("info-x", "info-y")
    assert store.batches == [["x"], ["y"]]


@pytest.mark.parametrize("n", [30])
def test_concurrent_posts_are_all_persisted(tmp_path, n):
    """Through the real application and store: n POSTs at once, n distinct jobs stored."""
    pytest.importorskip("fastapi")
    import httpx

    from torchmsa.serve.app import create_app
    from torchmsa.serve.store import Store

    store = Store.open(None, data_dir=tmp_path)
    app = create_app(store)

    async def run():
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            bodies = [f">a{i}\nMKVLAAG{'W' * (i % 7)}HW\n>b{i}\nMKVLGHW\n" for i in range(n)]
            headers = {"X-TorchMSA-User": "u"}
            replies = await asyncio.gather(
                *(client.post("/jobs", content=b, headers=headers) for b in bodies)
            )
            listed = await client.get("/jobs", params={"limit": 10 * n}, headers=headers)
            return replies, listed.json()["jobs"]

    try:
        replies, listed = asyncio.run(run())
        assert [r.status_code for r in replies] == [201] * n
        ids = [r.json()["id"] for r in replies]
        assert len(set(ids)) == n
        assert {j["id"] for j in listed} == set(ids)
        assert all(j["n_seqs"] == 2 for j in listed)
    finally:
        store.close()


def test_a_burst_staged_over_passes_of_the_loop_is_one_write():
    """Requests staged over consecutive passes of the event loop (as a burst's requests are
    read) join the first write instead of waiting for the next."""
    store = _Store()
    values = [str(i) for i in range(25)]

    async def later(commits, k, value):
        for _ in range(k % 4):  # staged on the first, second, third or fourth pass
            await asyncio.sleep(0)
        return await commits.submit(value)

    async def run():
        commits = GroupCommit(store)
        return await asyncio.gather(*(later(commits, k, v) for k, v in enumerate(values)))

    assert asyncio.run(run()) == [f"info-{v}" for v in values]
    assert [sorted(b, key=int) for b in store.batches] == [values]


def test_the_workers_are_woken_once_per_write_that_queued_jobs():
    calls = []

    class _Queued(_Store):
        def insert(self, staged):
            return [_Info("done" if s.startswith("cached") else "queued") for s in staged]

    class _Info:
        def __init__(self, state):
            self.state = state

    async def run():
        commits = GroupCommit(_Queued(), notify=lambda: calls.append(1))
        await _submit_all(commits, [str(i) for i in range(10)])
        await asyncio.sleep(0)  # the wake-up is called after the replies
        assert calls == [1]
        await commits.submit("cached-1")  # a job answered from the store queues nothing
        await asyncio.sleep(0)
        assert calls == [1]
        await commits.submit("new")
        await asyncio.sleep(0)
        assert calls == [1, 1]

    asyncio.run(run())


def _posted(app, bodies, headers, params=None):
    import httpx

    async def run():
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            return [
                await client.post("/jobs", content=b, headers=headers, params=params or {})
                for b in bodies
            ]

    return asyncio.run(run())


def test_the_direct_submit_path_answers_as_the_documented_route(tmp_path):
    """ServiceApp sends POST /jobs straight to its handler; with that turned off the same
    requests go through FastAPI's route: same statuses, same errors, same job fields."""
    pytest.importorskip("fastapi")
    from torchmsa.serve.app import ServiceApp, create_app
    from torchmsa.serve.store import Store

    bodies = [
        b">a\nMKVLAAGHW\n>b\nMKVLGHW\n",
        b">a\nMKV1LA\n>b\nMKVLA\n",  # a bad residue: 422
        b"",  # empty: 422
        "".join(f">s{i}\nMKV\n" for i in range(9)).encode(),  # over max_seqs: 413
    ]
    answers = []
    for direct in (True, False):
        store = Store.open(None, data_dir=tmp_path / str(direct))
        try:
            app = create_app(store, token="secret", max_seqs=8)
            assert isinstance(app, ServiceApp) and app.direct_submit is not None
            if not direct:
                app.direct_submit = None
            good = {"Authorization": "Bearer secret"}
            got = _posted(app, bodies, good, {"mode": "fast"})
            got += _posted(app, bodies[:1], {})  # no token: 401
            got += _posted(app, bodies[:1], good, {"colour": "red"})  # unknown option: 422
            answers.append(
                [
                    (
                        r.status_code,
                        r.headers.get("www-authenticate"),
                        sorted(r.json()),
                        r.json().get("error"),
                        r.json().get("state"),
                        r.headers.get("location", "").startswith("/jobs/"),
                    )
                    for r in got
                ]
            )
        finally:
            store.close()
    assert answers[0] == answers[1]
    assert [a[0] for a in answers[0]] == [201, 422, 422, 413, 401, 422]


def test_a_primed_http_process_imports_nothing_to_check_a_submission(tmp_path):
    """``prime`` (called by every HTTP process before it serves) loads what checking jobs
    needs: the first burst a new process takes pays no imports (``import torchmsa`` is lazy,
    and those imports took seconds)."""
    import subprocess
    import sys

    code = f"""
import sys
from torchmsa.serve.app import prime
from torchmsa.serve.body import parse_options
from torchmsa.serve.store import Store
store = Store.open(None, data_dir={str(tmp_path)!r})
prime(store)
before = set(sys.modules)
jobs = [(">a\\\\nMKVLAW\\\\n>b\\\\nMKVLGW\\\\n", "fast")]
jobs.append((">a\\\\nACGTT\\\\n>b\\\\nACGAT\\\\n", "accurate"))
for text, mode in jobs:
    store.staged(text, parse_options([("mode", mode)]), "someone")
heavy = ("torchmsa", "torch", "numba", "Bio")
new = sorted(m for m in set(sys.modules) - before if m.split(".")[0] in heavy)
store.close()
print(",".join(new))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    imported = [m for m in done.stdout.strip().split(",") if m]
    assert not imported, f"{len(imported)} modules imported while checking: {imported[:5]}"
