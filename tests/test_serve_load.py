"""``torchmsa serve`` as a process: 200 concurrent submissions (none lost or duplicated, POST
p95 <= 100 ms at a steady 50/s), ``kill -9`` mid-run and a restart on the same data (every
accepted job finishes, with :func:`torchmsa.align`'s alignment), a clean stop on SIGTERM, and
a worker process that dies mid-job (restarted, its job run again)."""

from __future__ import annotations

import io
import os
import signal
import time

import pytest

httpx = pytest.importorskip("httpx", reason="the service tests need httpx (pip install httpx)")
pytest.importorskip("fastapi", reason="the service needs fastapi and uvicorn")

import torchmsa  # noqa: E402
from benchmarks.serve_load import (  # noqa: E402
    drain,
    families,
    percentile,
    post_all,
    spawn_server,
    stop_server,
)

N_LOAD = 200
P95_LIMIT_S = 0.100
STEADY_RATE = 50.0  # submissions a second in the latency test
# 200 requests sent in the same instant queue behind one another: on a 2-core machine that
# also runs the alignment worker and this client, p95 is the server's throughput (about
# 3.5 ms a request: p95 ~0.7 s measured), not its latency; the bound leaves room for a
# loaded machine and catches a return of the seconds-long stalls (p95 4.7 s before #39's fix)
BURST_P95_LIMIT_S = 2.0


@pytest.fixture
def server_log(tmp_path):
    """The server's stderr, printed when a test fails."""
    path = tmp_path / "server.log"
    yield path
    if path.exists():
        print(path.read_text()[-4000:])


@pytest.fixture(scope="module")
def loaded(tmp_path_factory):
    """One ``torchmsa serve`` process (CPU worker) for the load tests."""
    tmp = tmp_path_factory.mktemp("load")
    proc, url = spawn_server(tmp / "data", "--device", "cpu", log=tmp / "server.log")
    with httpx.Client(base_url=url) as c:
        assert c.get("/health").json()["status"] == "ok"
    yield url
    code = stop_server(proc)
    print((tmp / "server.log").read_text()[-4000:])
    assert code == 0


def _report(what: str, posted, drained) -> float:
    latency = [dt for _, _, dt, _ in posted]
    p95 = percentile(latency, 95)
    print(
        f"\n{what}: POST /jobs p50 {1e3 * percentile(latency, 50):.1f} ms, "
        f"p95 {1e3 * p95:.1f} ms, max {1e3 * max(latency):.1f} ms; queue drained in "
        f"{drained['seconds']:.1f} s"
    )
    return p95


def _check_none_lost(url: str, user: str, bodies: list[str], posted) -> dict:
    ids = [job_id for _, job_id, _, _ in posted]
    errors = [e for status, _, _, e in posted if status != 201]
    assert errors == [] and len(ids) == len(bodies)
    assert len(set(ids)) == len(ids)  # no id handed out twice
    drained = drain(url, ids, user=user, timeout=300)
    assert sorted(drained["listed"]) == sorted(ids)  # none lost, none duplicated
    assert all(drained["states"][i] == "done" for i in ids), drained["states"]
    with httpx.Client(base_url=url, headers={"X-TorchMSA-User": user}) as c:
        for k in (0, len(ids) - 1):
            got = c.get(f"/jobs/{ids[k]}/result").text
            aln = torchmsa.align(io.StringIO(bodies[k]), mode="fast", device="cpu")
            assert got == aln.format("fasta")
    return drained


def test_200_concurrent_submissions_none_lost_or_duplicated(loaded):
    """All 200 at once over 200 open connections."""
    bodies = families(N_LOAD, seqs=4, length=40, seed=1)
    posted = post_all(loaded, bodies, concurrency=N_LOAD, user="burst", deadline=120)
    drained = _check_none_lost(loaded, "burst", bodies, posted)
    assert _report(f"{N_LOAD} at once", posted, drained) <= BURST_P95_LIMIT_S


def test_post_latency_p95_at_a_steady_rate(loaded):
    """200 submissions over 200 open connections at 50 a second: p95 of POST /jobs."""
    bodies = families(N_LOAD, seqs=4, length=40, seed=3)
    posted = post_all(
        loaded, bodies, concurrency=N_LOAD, user="steady", deadline=120, rate=STEADY_RATE
    )
    drained = _check_none_lost(loaded, "steady", bodies, posted)
    assert _report(f"{N_LOAD} at {STEADY_RATE:g}/s", posted, drained) <= P95_LIMIT_S


def test_two_http_processes_share_the_port_and_lose_nothing(tmp_path, server_log):
    """``--http-procs 2``: a second process answers on the same socket and store; every job of
    a burst is accepted once and runs once, ``/health`` shows the worker whichever process
    answers (fresh connections land on either), and SIGTERM stops the server cleanly."""
    proc, url = spawn_server(
        tmp_path / "data", "--device", "cpu", "--http-procs", "2", log=server_log
    )
    try:
        bodies = families(60, seqs=4, length=40, seed=4)
        posted = post_all(url, bodies, concurrency=60, user="two", deadline=120)
        _check_none_lost(url, "two", bodies, posted)
        for _ in range(20):
            with httpx.Client(base_url=url) as c:
                health = c.get("/health").json()
            assert health["status"] == "ok"
            assert [w["device"] for w in health["workers"]] == ["cpu"]
    finally:
        assert stop_server(proc) == 0


def _bigger(n_jobs: int) -> list[str]:
    return families(n_jobs, seqs=24, length=160, seed=2)


def test_kill_9_mid_run_and_restart_finishes_every_accepted_job(tmp_path, server_log):
    data = tmp_path / "data"
    bodies = _bigger(12)
    proc, url = spawn_server(data, "--device", "cpu", log=server_log)
    try:
        posted = post_all(url, bodies, concurrency=12, user="kill", mode="default", deadline=60)
        ids = [job_id for status, job_id, _, _ in posted if status == 201]
        assert len(ids) == len(bodies)
        with httpx.Client(base_url=url, headers={"X-TorchMSA-User": "kill"}) as c:
            end = time.monotonic() + 120
            while time.monotonic() < end:  # kill once something is running
                states = [j["state"] for j in c.get("/jobs").json()["jobs"]]
                if "running" in states or "done" in states:
                    break
                time.sleep(0.02)
        before = states
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
    assert proc.returncode == -signal.SIGKILL
    assert before.count("done") < len(ids), "every job finished before the kill; make them larger"

    proc, url = spawn_server(data, "--device", "cpu", log=server_log)
    try:
        result = drain(url, ids, user="kill", timeout=300)
        assert sorted(result["listed"]) == sorted(ids)
        assert all(result["states"][i] == "done" for i in ids), result["states"]
        with httpx.Client(base_url=url, headers={"X-TorchMSA-User": "kill"}) as c:
            for k in (0, len(ids) - 1):
                got = c.get(f"/jobs/{ids[k]}/result").text
                aln = torchmsa.align(io.StringIO(bodies[k]), mode="default", device="cpu")
                assert got == aln.format("fasta")
        started = time.monotonic()
    finally:
        code = stop_server(proc)
    assert code == 0 and time.monotonic() - started < 30  # SIGTERM: a clean, quick stop


def test_a_worker_process_that_dies_is_restarted_and_its_job_runs_again(tmp_path):
    """SIGKILL the worker process while it runs a job: the server stays up, puts the job back
    in the queue, starts a new worker, and the job finishes with align's alignment."""
    from torchmsa.serve.server import start

    (body,) = families(1, seqs=40, length=300, seed=5)
    with start(data=tmp_path / "data", device="cpu") as srv:
        first = srv.workers.pids()[0]
        with httpx.Client(base_url=srv.url, headers={"X-TorchMSA-User": "w"}, timeout=60) as c:
            job_id = c.post("/jobs", content=body.encode(), params={"mode": "default"}).json()["id"]
            end = time.monotonic() + 120
            while c.get(f"/jobs/{job_id}").json()["state"] != "running":
                assert time.monotonic() < end, "the job never started"
                time.sleep(0.01)
            os.kill(first, signal.SIGKILL)
            end = time.monotonic() + 300
            while (info := c.get(f"/jobs/{job_id}").json())["state"] != "done":
                assert info["state"] in ("queued", "running"), info
                assert time.monotonic() < end, "the job never finished after the restart"
                time.sleep(0.05)
            (worker,) = c.get("/health").json()["workers"]
            got = c.get(f"/jobs/{job_id}/result").text
    assert worker["alive"] and worker["restarts"] == 1 and worker["requeued"] == 1, worker
    assert worker["pid"] != first and "SIGKILL" in worker["error"]
    assert got == torchmsa.align(io.StringIO(body), mode="default", device="cpu").format("fasta")


def test_stop_past_the_grace_period_queues_the_running_job_again(tmp_path):
    """A worker still aligning when the grace period ends is killed and its job goes back in
    the queue (not lost, not left 'running'); the next start runs it."""
    from torchmsa.serve.server import start
    from torchmsa.serve.store import Store

    (body,) = families(1, seqs=200, length=400, seed=6)  # runs for seconds
    store = Store.open(None, data_dir=tmp_path / "data")
    try:
        srv = start(store, device="cpu")
        info = store.submit(body, {"mode": "default"})
        srv.workers.notify()
        end = time.monotonic() + 120
        while store.job(info.id).state != "running":
            assert time.monotonic() < end, "the job never started"
            time.sleep(0.01)
        t0 = time.monotonic()
        srv.stop(grace=0.2)
        assert time.monotonic() - t0 < 20
        assert store.job(info.id).state == "queued"
        assert srv.workers.describe()[0]["requeued"] == 1
    finally:
        store.close()
