"""When the command uses the warm server, which server it is, and where it listens.

A server serves only callers that would compute exactly what it computes, with the same
resources: the same interpreter, the same installed files (their sizes and modification
times), the same user, cores and memory limits, and the same values of the environment
variables torch, CUDA, numba, Triton and torchmsa read when they load. These make its key;
a caller whose key differs finds no server and runs itself. Standard library only.
"""

from __future__ import annotations

import os
import socket
import sys
from typing import NamedTuple

try:  # the interpreter's own SHA-256: hashlib would load OpenSSL, the caller's largest import
    from _sha2 import sha256  # Python 3.12+
except ImportError:
    try:
        from _sha256 import sha256  # Python 3.11
    except ImportError:
        from hashlib import sha256

__all__ = ["VERBS", "OFF", "Paths", "routed", "enabled", "idle_seconds", "key", "paths"]

# the one-shot verbs whose work a server may run; the others are light, or are servers or
# process pools of their own
VERBS = ("align", "merge", "pairwise", "local", "score")
OFF = ("0", "off", "no", "false", "never")
DEFAULT_IDLE = 900.0  # seconds a server waits for its next command before it ends
# variables read when torch, CUDA, numba, Triton or torchmsa load, or that choose code and
# caches: a server serves only callers with the same values
KEY_PREFIXES = ("TORCHMSA_", "CUDA_", "PYTORCH_", "NUMBA_", "TRITON_", "OMP_", "MKL_", "NVIDIA_")
KEY_NAMES = ("HOME", "PYTHONPATH", "LD_LIBRARY_PATH", "PYTHONHASHSEED", "XDG_CACHE_HOME")
# folders a server resolves once, from its own working directory: a caller that gives one as a
# relative path runs itself
RELATIVE_UNSAFE = (
    "TORCHMSA_DAEMON_DIR",
    "TORCHMSA_CACHE_DIR",
    "NUMBA_CACHE_DIR",
    "TRITON_CACHE_DIR",
)
SOCKET_MAX = 100  # bytes of a Unix socket path that every platform takes
_PACKAGE = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
# the kernels' folder where editable
_ROOTS = (_PACKAGE, os.path.join(os.path.dirname(_PACKAGE), "triton_kernels"))


class Paths(NamedTuple):
    """A server's files: ``socket`` it listens on, ``lock`` it holds while alive (its pid
    inside), ``log`` its output."""

    socket: str
    lock: str
    log: str


def enabled(env) -> bool:
    """Whether commands may use and start servers here: not with ``TORCHMSA_DAEMON=off``,
    not under ``torchrun`` (each rank is its own process by design), not with a cache or
    server folder given as a relative path, and only where Unix sockets and file locks
    exist."""
    if env.get("TORCHMSA_DAEMON", "auto").strip().lower() in OFF:
        return False
    if "WORLD_SIZE" in env or "LOCAL_RANK" in env:
        return False
    if any(env.get(name) and not os.path.isabs(env[name]) for name in RELATIVE_UNSAFE):
        return False  # a folder relative to the caller's working directory: its own process
    try:
        import fcntl  # noqa: F401
    except ImportError:
        return False
    return hasattr(socket, "AF_UNIX")


def routed(argv: list[str], env) -> bool:
    """Whether ``torchmsa ARGV`` may run on a server: a verb of :data:`VERBS`, no help or
    version request (those are as fast here), and servers enabled."""
    if not argv or argv[0] not in VERBS:
        return False
    if any(a in ("-h", "--help", "--version") for a in argv):
        return False
    return enabled(env)


def idle_seconds(env) -> float:
    """``TORCHMSA_DAEMON_IDLE`` (seconds, > 0), else 900."""
    try:
        value = float(env.get("TORCHMSA_DAEMON_IDLE", DEFAULT_IDLE))
    except ValueError:
        return DEFAULT_IDLE
    return value if value > 0 else DEFAULT_IDLE


def key(env) -> str:
    """16 hex digits naming the server that may serve this caller (see the module's text)."""
    h = sha256()
    # the interpreter as its file (`python` and `python3` of one environment are one) and the
    # environment it runs in (sys.prefix: a virtual environment's own packages)
    exe = os.path.realpath(sys.executable)
    h.update(f"{exe}\0{sys.prefix}\0{sys.version}\0{os.getuid()}\0{_limits()}\0".encode())
    for name in sorted(env):
        if name.startswith("TORCHMSA_DAEMON"):
            continue  # the server's own settings change no result
        if name.startswith(KEY_PREFIXES) or name in KEY_NAMES:
            h.update(f"{name}={env[name]}\0".encode())
    for root in _ROOTS:
        for path, st in _files(root):
            h.update(f"{path}\0{st.st_size}\0{st.st_mtime_ns}\0".encode())
    return h.hexdigest()[:16]


def _limits() -> str:
    """The cores this process may run on and its memory limits: a server runs with those of
    the command that started it, so it serves only callers with the same."""
    parts = []
    try:
        parts.append(",".join(map(str, sorted(os.sched_getaffinity(0)))))
    except (AttributeError, OSError):
        parts.append(str(os.cpu_count()))
    try:
        import resource

        for limit in (resource.RLIMIT_AS, resource.RLIMIT_DATA):
            parts.append(str(resource.getrlimit(limit)[0]))
    except (ImportError, OSError, ValueError):
        pass
    return ";".join(parts)


def _files(root: str):
    """``(path, stat)`` of the package's source and data files, sorted."""
    found = []
    stack = [str(root)]
    while stack:
        folder = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for e in entries:
            if e.is_dir(follow_symlinks=False):
                if e.name != "__pycache__":
                    stack.append(e.path)
            elif e.name.endswith((".py", ".json")):
                found.append((e.path, e.stat()))
    return sorted(found, key=lambda item: item[0])


def folder(env) -> str:
    """The folder of this user's servers (mode 0700): ``TORCHMSA_DAEMON_DIR``, else
    ``$XDG_RUNTIME_DIR/torchmsa``, else ``~/.cache/torchmsa/daemon``, else (a path too long
    for a socket) ``/tmp/torchmsa-UID``."""
    candidates = [env.get("TORCHMSA_DAEMON_DIR")]
    if env.get("XDG_RUNTIME_DIR"):
        candidates.append(os.path.join(env["XDG_RUNTIME_DIR"], "torchmsa"))
    candidates.append(os.path.join(os.path.expanduser("~"), ".cache", "torchmsa", "daemon"))
    candidates.append(f"/tmp/torchmsa-{os.getuid()}")
    for c in candidates:
        if c and len(os.path.join(c, "0123456789abcdef.sock")) <= SOCKET_MAX and _private(c):
            return c
    raise OSError("no private folder for the torchmsa server's socket")


def _private(path: str) -> bool:
    """Makes ``path`` (0700) if needed; whether it is a folder only this user may enter."""
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
        st = os.stat(path)
    except OSError:
        return False
    return st.st_uid == os.getuid() and (st.st_mode & 0o077) == 0


def paths(server_key: str, env) -> Paths:
    base = os.path.join(folder(env), server_key)
    return Paths(socket=base + ".sock", lock=base + ".lock", log=base + ".log")
