"""Running the service: uvicorn serving :func:`~torchmsa.serve.app.create_app` in this
process, the alignment workers in processes of their own (one per CUDA GPU, else one on the
CPU; :mod:`torchmsa.serve.procs`), all on one store's database.

:func:`serve` is ``torchmsa serve``: it opens the store, puts back in the queue the jobs a
killed server left running, binds the socket (``port=0`` picks a free one), starts the
workers, announces the address on stdout, and serves until SIGTERM or SIGINT; then it stops
taking requests, lets the workers finish what they hold (``grace`` seconds at most; a worker
still running then is killed and its jobs are queued again) and closes the store.
:func:`start` does the same with the HTTP server in a background thread, for notebooks and
tests.
"""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Sequence

import uvicorn

from torchmsa.serve.app import create_app, prime
from torchmsa.serve.limits import MAX_BYTES, MAX_SEQS
from torchmsa.serve.procs import WorkerProcesses

__all__ = ["serve", "start", "Running", "worker_devices", "HttpProcesses"]

_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def worker_devices(device: str = "auto") -> list[str]:
    """Where workers run: every CUDA GPU for ``"auto"`` (else the CPU), or the comma-separated
    devices given (``"cuda:0,cuda:1"``, ``"cpu"``)."""
    if device != "auto":
        return [d.strip() for d in device.split(",") if d.strip()]
    import torch

    n = torch.cuda.device_count() if torch.cuda.is_available() else 0
    return [f"cuda:{i}" for i in range(n)] or ["cpu"]


class _Server(uvicorn.Server):
    """uvicorn's server whose signal handling stops it without raising the signal again
    afterwards, so the workers can be stopped and the store closed."""

    @contextlib.contextmanager
    def capture_signals(self):
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        old = {sig: signal.signal(sig, self.handle_exit) for sig in _SIGNALS}
        try:
            yield
        finally:
            for sig, handler in old.items():
                signal.signal(sig, handler)


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        from torchmsa.errors import ArgumentError

        raise ArgumentError(
            f"cannot listen on {host}:{port} ({exc.strerror or exc}); choose another --port "
            f"(0 picks a free one) or --host"
        ) from None
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def _url(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def _config(app, log_level: str) -> uvicorn.Config:
    return uvicorn.Config(
        app,
        log_level=log_level,
        access_log=False,
        timeout_graceful_shutdown=5,
        limit_concurrency=4096,
        backlog=2048,
    )


def _setup(
    store, host, port, token, devices, cpu_workers, max_bytes, max_seqs, poll, log_level, nice
) -> tuple[_Server, WorkerProcesses, socket.socket]:
    pool = WorkerProcesses(store, list(devices), cpu_workers=cpu_workers, poll=poll, nice=nice)
    app = create_app(
        store,
        token=token,
        max_bytes=max_bytes,
        max_seqs=max_seqs,
        workers=pool.describe,
        notify=pool.notify,
    )
    prime(store)
    sock = _bind(host, port)
    return _Server(_config(app, log_level)), pool, sock


def _http_main(sock, store_spec: dict, app_opts: dict, wakes, health, log_level: str) -> None:
    """One more HTTP process: the same application on the same socket and store. SIGTERM
    from the parent (or Ctrl-C, which reaches the whole process group) stops it as it stops
    the parent's server: uvicorn finishes the requests it holds, and a job it accepted was
    committed before the reply."""
    from torchmsa.serve.store import Store

    store = Store.open(store_spec.pop("url"), **store_spec)
    try:

        def notify() -> None:
            for wake in wakes:
                wake.set()

        def workers() -> list:
            with health.get_lock():
                text = health.value.decode()
            try:
                return json.loads(text or "[]")
            except ValueError:
                return [{"error": "worker status unavailable"}]

        app = create_app(store, workers=workers, notify=notify, **app_opts)
        prime(store)
        _Server(_config(app, log_level)).run(sockets=[sock])
    finally:
        store.close()


class HttpProcesses:
    """``count`` more HTTP processes answering on the parent's socket (``--http-procs``): on a
    few cores one process's event loop parses and checks the requests of a burst one after
    another; several take them in parallel (the kernel spreads the connections). The workers'
    ``/health`` figures reach them through shared memory, refreshed every half second."""

    def __init__(self, count: int, sock, store, pool: WorkerProcesses, app_opts: dict, log_level):
        self._ctx = multiprocessing.get_context("spawn")
        self._pool = pool
        self._health = self._ctx.Array("c", 1 << 16)
        spec = {
            "url": store.url,
            "cap_bytes": store.cap_bytes,
            "max_bytes": store.max_bytes,
            "max_seqs": store.max_seqs,
        }
        args = (sock, spec, app_opts, pool.wakes(), self._health, log_level)
        self._procs = [
            # daemons: they start no processes, and must not outlive the server that owns them
            self._ctx.Process(
                target=_http_main, args=args, name=f"torchmsa-http-{k + 1}", daemon=True
            )
            for k in range(count)
        ]
        self._done = threading.Event()

    def start(self) -> None:
        self._publish()
        for proc in self._procs:
            proc.start()
        if self._procs:
            threading.Thread(target=self._refresh, name="torchmsa-health", daemon=True).start()

    def _publish(self) -> None:
        data = json.dumps(self._pool.describe()).encode()
        if len(data) >= len(self._health):
            data = json.dumps([{"error": "worker status too long to share"}]).encode()
        with self._health.get_lock():
            self._health.value = data

    def _refresh(self) -> None:
        while not self._done.wait(0.5):
            self._publish()

    def close(self, timeout: float = 10.0) -> None:
        """Stop the processes (SIGTERM: they finish the requests they hold)."""
        self._done.set()
        started = [proc for proc in self._procs if proc.pid is not None]
        for proc in started:
            if proc.is_alive():
                proc.terminate()
        end = time.monotonic() + timeout
        for proc in started:
            proc.join(max(0.0, end - time.monotonic()))
            if proc.is_alive():
                proc.kill()
                proc.join()


def serve(
    host: str = "127.0.0.1",
    port: int = 8765,
    data: str | None = None,
    db: str | None = None,
    token: str | Sequence[str] | None = None,
    *,
    device: str = "auto",
    cpu_workers: int = 1,
    max_bytes: int = MAX_BYTES,
    max_seqs: int = MAX_SEQS,
    cap_bytes: int = 2 << 30,
    grace: float = 10.0,
    poll: float = 0.25,
    nice: int = 5,
    log_level: str = "warning",
    announce: Callable[[str], None] | None = None,
    http_procs: int = 1,
) -> int:
    """Serve until SIGTERM or SIGINT (``torchmsa serve``); returns the exit status (0).

    Arguments:
        host, port: where to listen (loopback by default; ``port=0`` picks a free port).
        data: the store's folder (default ``$TORCHMSA_DATA`` or ``~/.cache/torchmsa``).
        db: a database URL (``sqlite:///path``, ``postgresql://...``) instead of ``data``.
        token: bearer token(s) every request must carry; ``None``: no authentication.
        device: ``"auto"`` (one worker process per CUDA GPU, else one on the CPU) or
            devices, comma-separated.
        cpu_workers: CPU worker processes each worker may run small jobs on.
        max_bytes, max_seqs: a request's body size and a job's sequence count limits.
        cap_bytes: the store's size cap (least recently used cache entries go first).
        grace: seconds the workers get at shutdown to finish the jobs they hold (then they
            are killed and their jobs queued again).
        poll: seconds an idle worker waits between looks at the queue (an accepted job
            wakes it at once; this is for jobs that other hosts' servers accept).
        nice: niceness added to the worker processes (0: none), so requests are answered
            first when the workers keep every core busy.
        log_level: uvicorn's log level.
        announce: called with the URL once the socket listens (default: print it).
        http_procs: processes answering HTTP on the one socket (:class:`HttpProcesses`).
    """
    from torchmsa.serve.store import Store

    _check_procs(http_procs)
    store = Store.open(
        db, data_dir=data, cap_bytes=cap_bytes, max_bytes=max_bytes, max_seqs=max_seqs
    )
    try:
        requeued = store.requeue_at_start()
        server, pool, sock = _setup(
            store, host, port, token, worker_devices(device), cpu_workers, max_bytes, max_seqs,
            poll, log_level, nice,
        )  # fmt: skip
        url = _url(sock)
        pool.start()
        app_opts = {"token": token, "max_bytes": max_bytes, "max_seqs": max_seqs}
        http = HttpProcesses(http_procs - 1, sock, store, pool, app_opts, log_level)
        try:
            http.start()
            (announce or _print)(url)
            if requeued:
                print(f"torchmsa: {requeued} interrupted job(s) queued again", file=sys.stderr)
            server.run(sockets=[sock])
        finally:
            http.close()
            sock.close()
            if not pool.close(grace):
                print(
                    "torchmsa: a worker was still running at shutdown (or had died); its jobs "
                    "are queued again",
                    file=sys.stderr,
                    flush=True,
                )
    finally:
        store.close()
    return 0


def _print(url: str) -> None:
    print(f"torchmsa: serving on {url} (Ctrl-C stops)", flush=True)


class Running:
    """A service started by :func:`start`: the HTTP server in a background thread, the
    workers in their processes (:attr:`workers`); ``stop()`` ends it."""

    def __init__(
        self, server: _Server, pool: WorkerProcesses, sock: socket.socket, store, own_store, http
    ):
        self.url = _url(sock)
        self._server, self._pool, self._sock, self._http = server, pool, sock, http
        self.workers = pool
        self.store, self._own_store = store, own_store
        self._thread = threading.Thread(
            target=server.run, kwargs={"sockets": [sock]}, name="torchmsa-http", daemon=True
        )

    def _start(self) -> Running:
        try:
            self._pool.start()
            self._http.start()
            self._thread.start()
            end = time.monotonic() + 30
            while not self._server.started and self._thread.is_alive():
                if time.monotonic() > end:
                    raise RuntimeError("the torchmsa server did not start within 30 s")
                time.sleep(0.01)
        except BaseException:
            self.stop(grace=0)
            raise
        return self

    def stop(self, grace: float = 10.0) -> None:
        self._server.should_exit = True
        if self._thread.ident is not None:  # started
            self._thread.join(30)
        self._http.close()
        self._sock.close()
        self._pool.close(grace)
        if self._own_store:
            self.store.close()

    def __enter__(self) -> Running:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def start(
    store=None,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    data: str | None = None,
    token: str | Sequence[str] | None = None,
    device: str = "cpu",
    cpu_workers: int = 1,
    workers: bool = True,
    max_bytes: int = MAX_BYTES,
    max_seqs: int = MAX_SEQS,
    poll: float = 0.25,
    nice: int = 5,
    http_procs: int = 1,
) -> Running:
    """Start the service (HTTP in a background thread, workers in processes of their own)
    and return once it listens.

    ``store``: an open store (kept open at ``stop()``), else one in ``data``. ``workers=False``
    serves without workers (jobs stay queued). Other arguments as :func:`serve`
    (``http_procs - 1`` more HTTP processes share the socket with the background thread).
    The workers are started with the ``spawn`` method: a script that calls this needs the
    ``if __name__ == "__main__":`` guard (notebooks do not).

    >>> with start(data=tmp) as srv:                   # doctest: +SKIP
    ...     Client(srv.url).submit("family.fasta")
    """
    own = store is None
    if own:
        from torchmsa.serve.store import Store

        store = Store.open(None, data_dir=data, max_bytes=max_bytes, max_seqs=max_seqs)
        store.requeue_at_start()
    devices = worker_devices(device) if workers else []
    _check_procs(http_procs)
    server, pool, sock = _setup(
        store, host, port, token, devices, cpu_workers, max_bytes, max_seqs, poll, "warning", nice
    )
    app_opts = {"token": token, "max_bytes": max_bytes, "max_seqs": max_seqs}
    http = HttpProcesses(http_procs - 1, sock, store, pool, app_opts, "warning")
    return Running(server, pool, sock, store, own, http)._start()


def _check_procs(http_procs) -> None:
    if isinstance(http_procs, bool) or not isinstance(http_procs, int) or http_procs < 1:
        from torchmsa.errors import ArgumentError

        raise ArgumentError(
            f"Invalid value for `http_procs` argument: {http_procs!r}; use 1 or more processes"
        )
