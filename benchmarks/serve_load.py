"""``torchmsa serve`` under load: many concurrent ``POST /jobs`` on loopback.

    python -m benchmarks.serve_load [--quick] [--n 200] [--concurrency 200] [--rate 0]
        [--seqs 4] [--length 40] [--mode fast] [--url URL] [--device auto] [--out DIR]

Starts ``torchmsa serve --port 0`` on a fresh store in a temporary folder (or uses ``--url``)
and, unless ``--cold``, sends one job through it first (``warmup_s``: a running server's
state, its worker warmed up and kernels compiled),
sends ``--n`` distinct small families (``--seqs`` random proteins of ``--length`` residues
each, ~20% mutated from one ancestor per job) from one asyncio loop over ``--concurrency``
connections opened beforehand (a small HTTP/1.1 client of its own: httpx's pool is slow at
this concurrency): all at once, or ``--rate`` a second; then polls ``GET /jobs`` until every
accepted job is done. Bounded: every request has a 30 s timeout and the whole run
``--deadline`` seconds.

Reports the POST latency (p50 / p95 / p99 / max, client side), whether any job was lost (an
accepted id missing from the caller's queue) or duplicated (an id returned twice, or more jobs
listed than accepted), and the seconds until the queue drained. One row per run in
``serve_load.csv``. The target (issue #39): no lost or duplicated job, p95 <= 100 ms at n = 200.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

from benchmarks.harness import REPO, append_rows, markdown_table, run_metadata

__all__ = ["families", "post_all", "drain", "spawn_server", "stop_server", "percentile"]

_AMINO = np.frombuffer(b"ACDEFGHIKLMNPQRSTVWY", dtype=np.uint8)


def families(n: int, seqs: int = 4, length: int = 40, seed: int = 0) -> list[str]:
    """``n`` distinct FASTA texts: each ``seqs`` variants (20% substituted) of a random
    ancestor of ``length`` residues."""
    rng = np.random.default_rng(seed)
    out = []
    for j in range(n):
        root = rng.choice(_AMINO, length)
        lines = []
        for i in range(seqs):
            s = root.copy()
            hit = rng.random(length) < 0.2
            s[hit] = rng.choice(_AMINO, int(hit.sum()))
            lines.append(f">j{j}_s{i}\n{s.tobytes().decode()}\n")
        out.append("".join(lines))
    return out


def percentile(values, q: float) -> float:
    return float(np.percentile(np.asarray(values, dtype=np.float64), q)) if values else float("nan")


class _Conn:
    """One keep-alive HTTP/1.1 connection on loopback, one request at a time.

    The load generator speaks HTTP itself: httpx's ``AsyncClient`` spends seconds of its own
    per request once 200 connections are open (encode/httpx#3215), which the POST latency
    figure then carried (p95 3.7 s at 50/s against a server answering in 5 ms)."""

    def __init__(self, host: str, port: int):
        self.host, self.port = host, port
        self.reader = self.writer = None

    async def open(self) -> None:
        self.reader, self.writer = await asyncio.open_connection(self.host, self.port)

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.reader = self.writer = None

    async def request(self, method: str, target: str, headers: dict, body: bytes = b""):
        """``(status, body bytes)``; reconnects once if the server closed the connection."""
        for attempt in (0, 1):
            if self.writer is None:
                await self.open()
            head = [f"{method} {target} HTTP/1.1", f"Host: {self.host}:{self.port}"]
            head += [f"{k}: {v}" for k, v in headers.items()]
            head.append(f"Content-Length: {len(body)}")
            try:
                self.writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + body)
                await self.writer.drain()
                raw = await self.reader.readuntil(b"\r\n\r\n")
            except (ConnectionError, asyncio.IncompleteReadError):
                self.close()
                if attempt:
                    raise
                continue
            lines = raw.decode("latin-1").split("\r\n")
            status = int(lines[0].split()[1])
            fields = {
                k.strip().lower(): v.strip() for k, _, v in (x.partition(":") for x in lines[1:])
            }
            data = await self.reader.readexactly(int(fields.get("content-length", "0")))
            if fields.get("connection", "").lower() == "close":
                self.close()
            return status, data
        raise ConnectionError("the server closed the connection")


async def _post_all(url, bodies, concurrency, headers, params, deadline, rate):
    from urllib.parse import urlencode, urlsplit

    parts = urlsplit(url)
    target = "/jobs?" + urlencode(params) if params else "/jobs"
    headers = {**headers, "Content-Type": "text/plain"}
    out: list[tuple[int, str | None, float, str]] = [(0, None, float("nan"), "")] * len(bodies)
    # open the connections first: the figure is the latency of POST /jobs, not of TCP set-up
    conns = [_Conn(parts.hostname, parts.port) for _ in range(min(concurrency, len(bodies)))]
    await asyncio.gather(*(c.open() for c in conns))
    idle: asyncio.Queue = asyncio.Queue()
    for c in conns:
        idle.put_nowait(c)
    start = time.perf_counter()

    async def one(k: int, body: str) -> None:
        if rate:
            await asyncio.sleep(max(0.0, start + k / rate - time.perf_counter()))
        conn = await idle.get()
        t0 = time.perf_counter()
        try:
            status, data = await asyncio.wait_for(
                conn.request("POST", target, headers, body.encode()), 30.0
            )
        except (OSError, asyncio.TimeoutError, asyncio.IncompleteReadError) as exc:
            conn.close()
            out[k] = (0, None, time.perf_counter() - t0, f"{type(exc).__name__}: {exc}")
            return
        finally:
            idle.put_nowait(conn)
        dt = time.perf_counter() - t0
        ok = status == 201
        text = data.decode("utf-8", "replace")
        out[k] = (status, json.loads(text)["id"] if ok else None, dt, "" if ok else text)

    try:
        await asyncio.wait_for(
            asyncio.gather(*(one(k, b) for k, b in enumerate(bodies))), timeout=deadline
        )
    finally:
        for c in conns:
            c.close()
    return out


def post_all(
    url: str,
    bodies: list[str],
    *,
    concurrency: int = 200,
    user: str = "load",
    mode: str = "fast",
    deadline: float = 120.0,
    rate: float = 0.0,
) -> list[tuple[int, str | None, float, str]]:
    """POST every body at once (``rate=0``), or ``rate`` a second, with at most
    ``concurrency`` in flight over connections opened beforehand; per body ``(status, id,
    seconds, error text)``, the seconds from sending the request to its reply."""
    headers = {"X-TorchMSA-User": user}
    params = {"mode": mode}
    return asyncio.run(_post_all(url, bodies, concurrency, headers, params, deadline, rate))


def drain(url: str, ids: list[str], *, user: str = "load", timeout: float = 300.0) -> dict:
    """Poll the caller's queue until every id in ``ids`` is finished (or ``timeout``).

    Returns ``seconds``, ``listed`` (ids in the queue), ``states`` (id -> state)."""
    import httpx

    t0 = time.perf_counter()
    wanted = set(ids)
    with httpx.Client(base_url=url, headers={"X-TorchMSA-User": user}, timeout=30.0) as http:
        while True:
            jobs = http.get("/jobs", params={"limit": 10 * len(ids) + 10}).json()["jobs"]
            states = {j["id"]: j["state"] for j in jobs}
            done = all(states.get(i) in ("done", "failed") for i in wanted)
            if done or time.perf_counter() - t0 > timeout:
                return {
                    "seconds": time.perf_counter() - t0,
                    "listed": [j["id"] for j in jobs],
                    "states": states,
                }
            time.sleep(0.1)


def warm_up(url: str, mode: str, timeout: float) -> float:
    """Seconds for one small job to go through the server (a running server's state: its
    worker warmed up, kernels compiled), submitted as another user."""
    import httpx

    t0 = time.perf_counter()
    body = families(1, 4, 40, seed=99)[0]
    with httpx.Client(base_url=url, headers={"X-TorchMSA-User": "warmup"}, timeout=60.0) as h:
        job = h.post("/jobs", content=body, params={"mode": mode}).json()["id"]
    result = drain(url, [job], user="warmup", timeout=timeout)
    if result["states"].get(job) != "done":
        raise RuntimeError(f"the warm-up job did not finish: {result['states'].get(job)}")
    return time.perf_counter() - t0


def spawn_server(data: str | os.PathLike, *args: str, log: str | os.PathLike | None = None):
    """``torchmsa serve --port 0 --data DATA ARGS`` as a subprocess; ``(process, url)`` once
    it listens."""
    err = open(log, "ab") if log is not None else subprocess.DEVNULL
    cmd = [sys.executable, "-m", "torchmsa", "serve", "--port", "0", "--data", str(data), *args]
    env = {
        **os.environ,
        # the checkout last: an installed torchmsa (its _triton package mapped from
        # triton_kernels/) comes first
        "PYTHONPATH": os.pathsep.join(filter(None, [os.environ.get("PYTHONPATH"), str(REPO)])),
    }
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, text=True, env=env)
    if log is not None:
        err.close()
    line: list[str] = []
    reader = threading.Thread(target=lambda: line.append(proc.stdout.readline()), daemon=True)
    reader.start()
    reader.join(120)
    if not line or "http://" not in line[0]:
        proc.kill()
        proc.wait()
        tail = Path(log).read_text(errors="replace")[-2000:] if log is not None else ""
        raise RuntimeError(f"torchmsa serve did not start (exit {proc.returncode}): {line}\n{tail}")
    url = line[0].split("serving on ", 1)[1].split()[0]
    return proc, url


def stop_server(proc, timeout: float = 60.0) -> int:
    """SIGTERM, then wait; SIGKILL if it does not stop in ``timeout`` seconds."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return proc.returncode


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="100 jobs (a CPU smoke test)")
    p.add_argument("--n", type=int, default=200)
    p.add_argument("--concurrency", type=int, default=200)
    p.add_argument("--seqs", type=int, default=4)
    p.add_argument("--length", type=int, default=40)
    p.add_argument("--mode", default="fast")
    p.add_argument(
        "--rate", type=float, default=0.0, help="submissions a second (default 0: all at once)"
    )
    p.add_argument("--url", help="an already running server (else one is started)")
    p.add_argument("--device", default="auto", help="the started server's --device")
    p.add_argument("--http-procs", type=int, default=1, help="the started server's --http-procs")
    p.add_argument("--deadline", type=float, default=300.0)
    p.add_argument(
        "--cold",
        action="store_true",
        help="start the load at once (default: after one job has gone through the server)",
    )
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    n = 100 if args.quick else args.n
    bodies = families(n, args.seqs, args.length)
    proc = None
    with tempfile.TemporaryDirectory(prefix="torchmsa-load-") as tmp:
        url = args.url
        if url is None:
            proc, url = spawn_server(
                tmp, "--device", args.device, "--http-procs", str(args.http_procs),
                log=Path(tmp) / "server.log",
            )  # fmt: skip
        try:
            warmup = None if args.cold else warm_up(url, args.mode, args.deadline)
            t0 = time.perf_counter()
            posted = post_all(
                url,
                bodies,
                concurrency=args.concurrency,
                mode=args.mode,
                deadline=args.deadline,
                rate=args.rate,
            )
            post_s = time.perf_counter() - t0
            ids = [i for _, i, _, _ in posted if i]
            result = drain(url, ids, timeout=args.deadline)
        finally:
            if proc is not None:
                stop_server(proc)
    lat = [dt for status, _, dt, _ in posted if status == 201]
    errors = sorted({e for status, _, _, e in posted if status != 201})
    listed = result["listed"]
    row = {
        "scope": "serve",
        "case": f"n{n}-c{args.concurrency}-r{args.rate:g}-{args.seqs}x{args.length}",
        "tool": "torchmsa-serve",
        "mode": args.mode,
        "n_jobs": n,
        "rate": args.rate,
        "http_procs": args.http_procs,
        "accepted": len(ids),
        "distinct": len(set(ids)),
        "lost": len(set(ids) - set(listed)),
        "duplicated": len(ids) - len(set(ids)) + max(0, len(listed) - len(set(ids))),
        "finished": sum(result["states"].get(i) == "done" for i in ids),
        "post_p50_ms": 1e3 * percentile(lat, 50),
        "post_p95_ms": 1e3 * percentile(lat, 95),
        "post_p99_ms": 1e3 * percentile(lat, 99),
        "post_max_ms": 1e3 * max(lat, default=float("nan")),
        "post_wall_s": post_s,
        "drain_s": result["seconds"],
        "warmup_s": warmup,
        "errors": "; ".join(errors)[:300],
    }
    print(markdown_table([row]))
    append_rows("serve_load", [row], run_metadata(args.device), args.out)
    ok = row["lost"] == 0 and row["duplicated"] == 0 and row["accepted"] == n
    return 0 if ok and row["finished"] == n else 1


if __name__ == "__main__":
    sys.exit(main())
