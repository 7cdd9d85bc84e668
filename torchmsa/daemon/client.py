"""The command's side: hand one command to the warm server, start a server, stop one, list
them. Standard library only, so that a command the server runs costs the caller no import of
torch, numba or Triton.
"""

from __future__ import annotations

import os
import signal
import socket
import sys
import time

from torchmsa.daemon import where, wire

__all__ = ["forward", "forward_first", "start", "stop", "servers", "alive"]

CONNECT_TIMEOUT = 2.0  # seconds to connect and be accepted or turned away
FIRST_WAIT = 10.0  # seconds a command waits for the server it starts to listen
RETRY = 600.0  # seconds before a command starts a server again after one that died
GRACE = 30.0  # seconds a just-started server may take to hold its lock


def forward(argv: list[str], env=None) -> int | None:
    """Runs ``torchmsa ARGV`` on this environment's warm server and returns its exit status,
    relaying standard input, output and error; ``None`` when no server took the command (none
    is running, it is busy with another one, or it ended before starting this one): then the
    caller runs it itself."""
    env = dict(os.environ) if env is None else env
    p = _routed_paths(argv, env)
    if p is None:
        return None
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.settimeout(CONNECT_TIMEOUT)
        sock.connect(p.socket)
        ch = wire.Channel(sock)
        ch.send_json(wire.REQUEST, _request(argv, env))
        kind, _ = ch.recv()
        sock.settimeout(None)
    except OSError:
        sock.close()
        return None
    if kind != wire.ACCEPT:
        sock.close()
        return None
    try:
        return _relay(ch, p.log)
    finally:
        sock.close()


def forward_first(argv: list[str], env=None) -> int | None:
    """Where no server of this environment is alive: starts one that listens at once
    (``--first``) and runs ``torchmsa ARGV`` on it, which loads what the command needs and
    stays warm for the next one (decision 0062). ``None`` when the command is not routed,
    a server is alive (busy: the caller runs the command) or was started a moment ago, or the
    new one does not take the command: then the caller runs it itself."""
    env = dict(os.environ) if env is None else env
    p = _routed_paths(argv, env)
    if p is None or alive(p) is not None:
        return None
    try:
        state = start(env, wait=FIRST_WAIT, first=True)
    except OSError:
        return None
    if state not in ("started", "running"):
        return None
    return forward(argv, env)


def _routed_paths(argv: list[str], env) -> where.Paths | None:
    """This environment's server files when ``torchmsa ARGV`` may run on a server, else
    ``None`` (not routed, or no folder for servers)."""
    if not where.routed(argv, env):
        return None
    try:
        return where.paths(where.key(env), env)
    except OSError:
        return None


def _request(argv: list[str], env) -> dict:
    umask = os.umask(0o022)
    os.umask(umask)
    ttys = []
    for fd in (0, 1, 2):
        try:
            ttys.append(os.isatty(fd))
        except OSError:
            ttys.append(False)
    return {"argv": list(argv), "cwd": os.getcwd(), "env": dict(env), "umask": umask, "tty": ttys}


def _relay(ch: wire.Channel, log: str) -> int | None:
    started = False  # anything relayed: from then on the command cannot be run again here
    stdout_open = True
    interrupts = []

    def on_interrupt(signum, frame):
        interrupts.append(signum)
        if len(interrupts) > 1:
            raise KeyboardInterrupt
        try:
            ch.send_json(wire.CONTROL, {"interrupt": True})
        except OSError:
            raise KeyboardInterrupt from None

    previous = signal.signal(signal.SIGINT, on_interrupt)
    try:
        while True:
            kind, payload = ch.recv()
            if kind is None:
                if not started and not interrupts:
                    return None
                print(
                    f"torchmsa: error: the warm server ended before the command did (its log: "
                    f"{log}); run the command again, or set TORCHMSA_DAEMON=off",
                    file=sys.stderr,
                )
                return 1
            started = True
            if kind == wire.OUT and stdout_open:
                try:
                    sys.stdout.buffer.write(payload)
                    sys.stdout.buffer.flush()
                except BrokenPipeError:  # `torchmsa align x.fa | head`
                    stdout_open = False
                    _silence_stdout()
                    ch.send_json(wire.CONTROL, {"broken_pipe": True})
            elif kind == wire.ERR:
                try:
                    sys.stderr.buffer.write(payload)
                    sys.stderr.buffer.flush()
                except OSError:
                    pass
            elif kind == wire.NEED:
                ch.send(wire.STDIN, _read_stdin(wire.as_int(payload)))
            elif kind == wire.EXIT:
                return wire.as_int(payload)
    except KeyboardInterrupt:
        print("torchmsa: interrupted", file=sys.stderr)
        return 130
    except OSError:  # the server went away while being written to
        print(f"torchmsa: error: the warm server ended (its log: {log})", file=sys.stderr)
        return 1
    finally:
        signal.signal(signal.SIGINT, previous)


def _read_stdin(size: int) -> bytes:
    try:
        return os.read(0, max(1, size))
    except OSError:
        return b""


def _silence_stdout() -> None:
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass


def alive(p: where.Paths) -> int | None:
    """The pid of the server holding ``p.lock``, or ``None`` when none is alive."""
    import fcntl

    try:
        fd = os.open(p.lock, os.O_RDONLY)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        try:
            return int(os.pread(fd, 32, 0).decode().strip() or 0) or -1
        except (OSError, ValueError):
            return -1
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def start(env=None, *, wait: float = 0.0, force: bool = False, first: bool = False) -> str:
    """Starts this environment's server unless one is alive: ``"started"``, ``"running"``,
    ``"off"`` (servers disabled here), ``"starting"`` (one was started under :data:`GRACE`
    seconds ago) or ``"failed"`` (one was started under :data:`RETRY` seconds ago and is gone:
    see its log); ``force`` starts one in the last two cases.
    With ``wait``, waits up to that many seconds for it to take commands (``"starting"`` if it
    does not by then, ``"failed"`` if it ended). ``first``: a server that listens at once and
    preloads nothing (:func:`forward_first`)."""
    env = dict(os.environ) if env is None else env
    if not where.enabled(env):
        return "off"
    server_key = where.key(env)
    p = where.paths(server_key, env)
    state = "running"
    if alive(p) is None:
        age = _since_started(p)
        if not force and age < GRACE:
            return "starting"  # started a moment ago: it has not taken its lock yet
        if not force and age < RETRY:
            return "failed"
        with open(p.lock + ".started", "w"):
            pass
        import subprocess

        with open(p.log, "ab") as log:
            subprocess.Popen(
                [sys.executable, "-m", "torchmsa.daemon.server", "--key", server_key]
                + (["--first"] if first else []),
                env=env,
                cwd=os.path.dirname(p.socket),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                close_fds=True,
            )
        state = "started"
    if wait > 0:
        end = time.monotonic() + wait
        while not _listening(p.socket):
            if time.monotonic() > end:
                return "starting"
            time.sleep(0.05)
            if alive(p) is None and time.monotonic() > end - wait + 5.0:
                return "failed"  # it took no lock within 5 s, or ended
    return state


def _since_started(p: where.Paths) -> float:
    """Seconds since a server was last started for ``p`` and did not end in an ordinary way
    (infinite when none): one that died, for instance in its preload, is not started again by
    every command."""
    try:
        return time.time() - os.stat(p.lock + ".started").st_mtime
    except OSError:
        return float("inf")


def _listening(path: str) -> bool:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.settimeout(CONNECT_TIMEOUT)
        sock.connect(path)
        return True
    except OSError:
        return False
    finally:
        sock.close()


def servers(env=None) -> list[dict]:
    """This user's live servers: ``key``, ``pid``, ``ready`` (taking commands) and ``mine``
    (serves this environment)."""
    env = dict(os.environ) if env is None else env
    folder = where.folder(env)
    mine = where.key(env)
    out = []
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".lock"):
            continue
        k = name[: -len(".lock")]
        p = where.paths(k, env)
        pid = alive(p)
        if pid is not None:
            out.append({"key": k, "pid": pid, "ready": _listening(p.socket), "mine": k == mine})
    return out


def stop(env=None, *, every: bool = False, wait: float = 10.0) -> int:
    """Ends this environment's server (``every``: all of this user's); returns how many were
    asked to end. A server ends its current command first."""
    env = dict(os.environ) if env is None else env
    stopped = []
    for s in servers(env):
        if (every or s["mine"]) and s["pid"] > 0:
            try:
                os.kill(s["pid"], signal.SIGTERM)
                stopped.append(where.paths(s["key"], env))
            except ProcessLookupError:
                pass
    end = time.monotonic() + wait
    while any(alive(p) is not None for p in stopped) and time.monotonic() < end:
        time.sleep(0.05)
    return len(stopped)
