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
