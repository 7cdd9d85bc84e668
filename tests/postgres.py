"""A throwaway PostgreSQL server for the store's tests.

:func:`server` (a pytest fixture body, session scope) finds ``initdb`` / ``pg_ctl`` on the PATH
or under ``/usr/lib/postgresql/*/bin``, makes a cluster in a temporary folder, starts it on a
free loopback port (trust authentication, loopback only, no Unix socket outside the folder)
and stops it and removes the folder at the end. PostgreSQL refuses to run as root, so under
root the cluster belongs to ``nobody`` (run through ``runuser``). Without the binaries the
tests that need it are skipped with a message saying what to install.

:func:`database` makes a fresh database on that server and returns its URL.
"""

from __future__ import annotations

import glob
import os
import secrets
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

__all__ = ["find_binaries", "PostgresServer", "start_server"]

SKIP_MESSAGE = (
    "PostgreSQL not found (initdb / pg_ctl); install it (Debian: apt-get install postgresql) "
    "to run the store's tests on PostgreSQL"
)


def find_binaries() -> Path | None:
    """The folder holding ``initdb`` and ``pg_ctl``, or ``None``."""
    found = shutil.which("initdb")
    if found and shutil.which("pg_ctl"):
        return Path(os.path.realpath(found)).parent
    for folder in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        if os.path.exists(f"{folder}/initdb") and os.path.exists(f"{folder}/pg_ctl"):
            return Path(folder)
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PostgresServer:
    """A running throwaway cluster; :meth:`stop` ends it and removes its folder."""

    def __init__(self, bindir: Path):
        self.bindir = bindir
        self.root = Path(tempfile.mkdtemp(prefix="torchmsa-pg-"))
        self.port = _free_port()
        self.as_user = "nobody" if os.geteuid() == 0 else None
        data = self.root / "data"
        if self.as_user:
            os.chmod(self.root, 0o755)
            shutil.chown(self.root, self.as_user)
        self._run("initdb", "-D", str(data), "-A", "trust", "-U", "postgres", "-E", "UTF8")
        opts = (
            f"-c listen_addresses=127.0.0.1 -c port={self.port} "
            f"-c unix_socket_directories={self.root} -c fsync=off -c max_connections=200"
        )
        self._run(
            "pg_ctl", "-D", str(data), "-o", opts, "-l", str(self.root / "log"), "-w", "start"
        )
        self.data = data
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _run(self, tool: str, *args: str) -> None:
        cmd = [str(self.bindir / tool), *args]
        if self.as_user:
            cmd = ["runuser", "-u", self.as_user, "--", *cmd]
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=self.root)
        if out.returncode:
            raise RuntimeError(f"{tool} failed ({out.returncode}): {out.stderr.strip()[-800:]}")

    def database(self) -> str:
        """A fresh, empty database; its URL."""
        import psycopg

        name = "t_" + secrets.token_hex(6)
        with psycopg.connect(
            f"host=127.0.0.1 port={self.port} user=postgres dbname=postgres", autocommit=True
        ) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        return f"postgresql://postgres@127.0.0.1:{self.port}/{name}"

    def stop(self) -> None:
        try:
            self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")
        finally:
            time.sleep(0.1)
            shutil.rmtree(self.root, ignore_errors=True)


def start_server() -> PostgresServer | None:
    """A started server, or ``None`` without PostgreSQL's binaries or psycopg."""
    bindir = find_binaries()
    if bindir is None:
        return None
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return None
    return PostgresServer(bindir)
