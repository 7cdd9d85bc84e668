"""Opening a store's database: SQLite in a data folder (WAL mode) or PostgreSQL through
psycopg 3; and the lock that hands SQLite's one write lock from writer to writer at once.

On SQLite a transaction takes the write lock when it begins (``BEGIN IMMEDIATE``: no upgrade
deadlocks, atomic claims), unless its connection carries the execution option
``torchmsa_read`` (then a deferred ``BEGIN``: in WAL mode a reader neither waits for nor holds
up the writer). Writers of several threads and processes (the HTTP process and the worker
processes of ``torchmsa serve``) queue on :class:`WriteLock` (a thread lock, then an
``flock`` on ``store.sqlite.lock``) before they begin: the kernel wakes the next one the
moment the lock is free, where SQLite's busy handler would have slept 1 to 100 ms per retry
(``POST /jobs`` waited ~10 ms a request behind a busy worker). The busy timeout stays, for
writers that do not take the lock (another program on the same file)."""

from __future__ import annotations

import contextlib
import os
import threading
from pathlib import Path

from sqlalchemy import create_engine, event

from torchmsa.errors import ArgumentError

__all__ = ["default_data_dir", "make_engine", "WriteLock", "write_lock"]

READ = "torchmsa_read"  # the execution option of a read-only transaction


def default_data_dir() -> Path:
    """``$TORCHMSA_DATA``, else ``~/.cache/torchmsa``."""
    env = os.environ.get("TORCHMSA_DATA")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "torchmsa"


def _sqlite_engine(path: Path):
    engine = create_engine(
        f"sqlite:///{path}", connect_args={"timeout": 60, "check_same_thread": False}
    )

    @event.listens_for(engine, "connect")
    def _connect(dbapi_conn, _record):
        dbapi_conn.isolation_level = None  # SQLAlchemy's BEGIN below, not pysqlite's
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute("PRAGMA synchronous=NORMAL")
        cur.execute("PRAGMA busy_timeout=60000")
        cur.close()

    @event.listens_for(engine, "begin")
    def _begin(conn):
        # a writer takes the write lock at once: no upgrade deadlocks, atomic claims
        read = conn.get_execution_options().get(READ)
        conn.exec_driver_sql("BEGIN" if read else "BEGIN IMMEDIATE")

    return engine


class WriteLock:
    """A re-entrant lock over the threads of this process and (where ``fcntl`` exists) the
    processes that open the same ``path`` (an exclusive ``flock``)."""

    def __init__(self, path: Path | None):
        self.path = path
        self._thread = threading.RLock()
        self._depth = 0
        self._fd: int | None = None

    def __repr__(self) -> str:
        return f"WriteLock({str(self.path)!r})"

    def __enter__(self) -> WriteLock:
        self._thread.acquire()
        try:
            if self._depth == 0 and self.path is not None:
                import fcntl

                if self._fd is None:
                    self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
                fcntl.flock(self._fd, fcntl.LOCK_EX)
        except BaseException:
            self._thread.release()
            raise
        self._depth += 1
        return self

    def __exit__(self, *exc) -> None:
        self._depth -= 1
        try:
            if self._depth == 0 and self._fd is not None:
                import fcntl

                fcntl.flock(self._fd, fcntl.LOCK_UN)
        finally:
            self._thread.release()

    def close(self) -> None:
        with self._thread:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None


def write_lock(url: str):
    """The lock a store's writers take: a :class:`WriteLock` on ``PATH.lock`` for
    ``sqlite:///PATH`` (a thread lock only where there is no ``fcntl``), none for PostgreSQL
    (its row locks and ``SKIP LOCKED`` do the work)."""
    if not url.startswith("sqlite:///"):
        return contextlib.nullcontext()
    try:
        import fcntl  # noqa: F401
    except ImportError:
        return WriteLock(None)
    path = Path(url.removeprefix("sqlite:///")).expanduser()
    return WriteLock(path.with_name(path.name + ".lock"))


def make_engine(url: str | None, data_dir: str | Path | None):
    """``(engine, url)`` for :meth:`torchmsa.serve.store.Store.open`'s arguments."""
    if url is None or url == "":
        folder = Path(data_dir).expanduser() if data_dir else default_data_dir()
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / "store.sqlite"
        engine, url = _sqlite_engine(path), f"sqlite:///{path}"
    elif url.startswith("sqlite:///"):
        path = Path(url.removeprefix("sqlite:///")).expanduser()
        path.parent.mkdir(parents=True, exist_ok=True)
        engine = _sqlite_engine(path)
    elif url.startswith(("postgresql://", "postgres://", "postgresql+psycopg://")):
        full = "postgresql+psycopg://" + url.split("://", 1)[1]
        engine = create_engine(full, pool_size=8, max_overflow=16, pool_pre_ping=True)
    else:
        raise ArgumentError(
            f"Invalid store URL {url!r}; use sqlite:///PATH or postgresql://USER@HOST/DB"
        )
    return engine, url
