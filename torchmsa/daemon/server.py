"""The warm process: ``python -m torchmsa.daemon.server --key KEY`` (started by the command).

It holds its lock file for life (so that one runs per key), loads what an alignment loads and
aligns a few families once (numba's and Triton's cached code, the CUDA context), then listens
on its socket; one that a command starts to run that command (``--first``) listens at once
and loads only what its commands need. Commands run one at a time in the main thread
through ``torchmsa.cli.main``, each in the caller's working directory, environment and umask,
with standard input, output and error relayed to the caller; a command that arrives while
another runs is turned away (``BUSY``) and the caller runs it itself, so parallel callers never
queue behind each other.
After each command the process frees what it can (torch's cached GPU memory, the C heap's
free pages); a command that arrives meanwhile waits for that, not turned away. It ends after
``TORCHMSA_DAEMON_IDLE`` seconds without a command (900), on SIGTERM (``torchmsa daemon
stop``), or when its socket file is gone or replaced.
"""

from __future__ import annotations

import argparse
import gc
import io
import json
import os
import queue
import signal
import socket
import sys
import threading
import time

from torchmsa.daemon import where, wire

__all__ = ["serve", "main"]

TICK = 1.0  # seconds between the idle loop's checks


def _log(message: str) -> None:
    """A line in the server's log (its own standard output, also while a command has the
    caller's streams in place)."""
    line = f"{time.strftime('%Y-%m-%dT%H:%M:%S')} [{os.getpid()}] {message}"
    print(line, file=sys.__stdout__, flush=True)


class _Sink(io.RawIOBase):
    """A standard stream whose bytes go to the caller as ``kind`` messages."""

    def __init__(self, ch: wire.Channel, kind: bytes, tty: bool, state: dict):
        self.ch, self.kind, self.tty, self.state = ch, kind, tty, state

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return self.tty

    def write(self, b) -> int:
        if self.kind == wire.OUT and self.state["broken_pipe"]:
            raise BrokenPipeError(32, "the caller's standard output is closed")
        data = bytes(b)
        try:
            self.ch.send(self.kind, data)
        except OSError:
            raise BrokenPipeError(32, "the caller has gone") from None
        return len(data)


class _Source(io.RawIOBase):
    """Standard input read from the caller on demand."""

    def __init__(self, ch: wire.Channel, tty: bool, chunks: queue.Queue):
        self.ch, self.tty, self.chunks = ch, tty, chunks
        self.ended = False

    def readable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return self.tty

    def readinto(self, b) -> int:
        if self.ended:
            return 0
        try:
            self.ch.send_int(wire.NEED, len(b))
        except OSError:
            self.ended = True
            return 0
        while True:  # in steps, so that an interrupt from the caller is raised meanwhile
            try:
                data = self.chunks.get(timeout=TICK / 10)
                break
            except queue.Empty:
                continue
        if not data:  # end of input, or the caller has gone
            self.ended = True
            return 0
        b[: len(data)] = data
        return len(data)


class _Job:
    """One command: the caller's streams in place, its messages read by a thread of their
    own (input, a closed pipe, an interrupt: ``KeyboardInterrupt`` in the main thread)."""

    def __init__(self, ch: wire.Channel, request: dict):
        self.ch, self.request = ch, request
        self.state = {"broken_pipe": False}
        self.chunks: queue.Queue = queue.Queue()
        self.guard = threading.Lock()
        self.running = True
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        import _thread

        while True:
            kind, payload = self.ch.recv()
            if kind == wire.STDIN:
                self.chunks.put(payload)
                continue
            if kind == wire.CONTROL:
                msg = json.loads(payload)
                self.state["broken_pipe"] |= bool(msg.get("broken_pipe"))
                if not msg.get("interrupt"):
                    continue
            else:  # the caller has gone
                self.chunks.put(b"")
            with self.guard:
                if self.running:
                    _thread.interrupt_main()
            if kind is None:
                return

    def run(self, cli_main) -> int:
        req = self.request
        tty = [bool(t) for t in req.get("tty", (False, False, False))]
        saved = (os.getcwd(), dict(os.environ), sys.stdin, sys.stdout, sys.stderr)
        umask = os.umask(int(req.get("umask", 0o022)))
        code = 1
        try:
            os.environ.clear()
            os.environ.update(req["env"])
            sys.stdin = io.TextIOWrapper(io.BufferedReader(_Source(self.ch, tty[0], self.chunks)))
            out = io.BufferedWriter(_Sink(self.ch, wire.OUT, tty[1], self.state), 1 << 16)
            sys.stdout = io.TextIOWrapper(out, encoding="utf-8", line_buffering=tty[1])
            err = io.BufferedWriter(_Sink(self.ch, wire.ERR, tty[2], self.state), 1 << 12)
            sys.stderr = io.TextIOWrapper(
                err, encoding="utf-8", errors="backslashreplace", write_through=True
            )
            try:
                os.chdir(req["cwd"])
            except OSError as exc:
                print(f"torchmsa: error: cannot enter {req['cwd']!r}: {exc}", file=sys.stderr)
                return 2
            code = cli_main(list(req["argv"]))
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
        except KeyboardInterrupt:
            print("torchmsa: interrupted", file=sys.stderr)
            code = 130
        except BaseException as exc:  # a bug: the caller sees it as a local run would
            import traceback

            traceback.print_exc()
            code = 1
            _log(f"command failed: {exc!r}")
        finally:
            with self.guard:
                self.running = False
            for stream in (sys.stdout, sys.stderr):
                try:
                    stream.flush()
                except (OSError, ValueError):
                    pass
            cwd, env, sys.stdin, sys.stdout, sys.stderr = saved
            os.environ.clear()
            os.environ.update(env)
            os.umask(umask)
            try:
                os.chdir(cwd)
            except OSError:  # its own folder was removed meanwhile
                os.chdir("/")
        return code


def _tidy() -> None:
    """Gives back what the last command left: torch's cached GPU blocks, the heap's free
    pages."""
    gc.collect()
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.empty_cache()
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def preload_jobs(gpu: bool) -> list[tuple[int, int, str, str]]:
    """What :func:`_preload` aligns: ``(sequences, length, mode, tree)`` per job.

    - 48 sequences of 300 residues in the default and the accurate mode: a user's family,
      which runs wholly on the host (``pipeline.placement.host_job``). After a default-only
      preload an accurate command took 1.3 s instead of 0.3 on an H200, loading its code;
      after one of 24 sequences of 120 the first accurate command still took 1.6 s against a
      median of 0.47 (decision 0061).
    - With a GPU, the same modes on families just past the host's limits, which take the
      GPU's kernels: an accurate family of 48 longer sequences (pairs x longest^2 past
      ``host_accurate_cells``; a 50 x 345 family is one) and a default one of a few hundred
      (N L^2 past ``host_job_cells``). With the host's family alone, the first accurate
      command of such a family took 1.28 s against 0.30 for the next (H200).
    - The large families' path: PartTree in fast mode, written as the CLI writes FASTA.
    """
    from torchmsa.config import ExecutionPolicy

    jobs = [(48, 300, "default", "auto"), (48, 300, "accurate", "auto")]
    big_n = 400
    if gpu:
        policy = ExecutionPolicy()
        pairs = 48 * 47 // 2
        longest = int((policy.host_accurate_cells / pairs) ** 0.5) + 40
        big_n = policy.host_job_cells // (240 * 240) + 40
        jobs += [(48, longest, "accurate", "auto"), (big_n, 240, "default", "auto")]
    return jobs + [(big_n, 240 if gpu else 120, "fast", "parttree")]


def _preload() -> None:
    """Loads and runs once what aligning a family runs, on the default device
    (:func:`preload_jobs`), ending in FASTA bytes."""
    import torch

    import torchmsa
    from torchmsa.config import AlignConfig, TreeConfig
    from torchmsa.synthetic import family

    for seed, (n, length, mode, tree) in enumerate(preload_jobs(torch.cuda.is_available())):
        trees = TreeConfig(method=tree, parttree_leaf_size=40, parttree_n_ref=8)
        config = AlignConfig(mode=mode, tree=trees if tree == "parttree" else TreeConfig())
        aln = torchmsa.align(family(n, length, seed + 1, indels=True), config=config)
    aln.fasta_bytes()


def serve(server_key: str, first: bool = False) -> int:
    """Runs the server of ``server_key`` until it is idle too long or told to stop.

    ``first``: started by a command to run that very command (decision 0062). It listens at
    once, before loading anything, and preloads nothing: the command loads what it needs, as
    it would in its own process, and leaves it loaded for the next."""
    import fcntl

    env = dict(os.environ)
    p = where.paths(server_key, env)
    lock = os.open(p.lock, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return 0  # another one runs
    os.ftruncate(lock, 0)
    os.pwrite(lock, f"{os.getpid()}\n".encode(), 0)
    idle = where.idle_seconds(env)
    stopping = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    signal.signal(signal.SIGINT, signal.default_int_handler)
    started = time.perf_counter()
    _log(f"starting: key {server_key}, {sys.executable}, idle limit {idle:g} s")
    from torchmsa.cli import allocator_default
    from torchmsa.cli import main as cli_main

    allocator_default()
    if not first:
        _preload()
        _tidy()
        _freeze()
    if where.key(env) != server_key:
        _log("the installed files changed while starting; ending")
        os.unlink(p.lock + ".started")
        return 0
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    temp = f"{p.socket}.{os.getpid()}"
    listener.bind(temp)
    os.chmod(temp, 0o600)
    listener.listen(16)
    os.replace(temp, p.socket)
    inode = os.stat(p.socket).st_ino
    how = "to run the command that started it" if first else "preloaded"
    _log(f"ready after {time.perf_counter() - started:.2f} s ({how}): {p.socket}")
    jobs: queue.Queue = queue.Queue()
    busy = threading.Event()

    def accept() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            ch = wire.Channel(conn)
            try:
                conn.settimeout(5.0)
                kind, payload = ch.recv()
                conn.settimeout(None)
                if kind != wire.REQUEST or busy.is_set() or stopping.is_set():
                    ch.send(wire.BUSY)
                    conn.close()
                    continue
                busy.set()
                jobs.put((ch, json.loads(payload)))
            except (OSError, ValueError):
                conn.close()

    threading.Thread(target=accept, daemon=True).start()
    last = time.monotonic()
    served = 0
    reason = "idle"
    while True:
        try:
            try:
                ch, request = jobs.get(timeout=TICK)
            except queue.Empty:
                if stopping.is_set():
                    reason = "told to stop"
                    break
                if time.monotonic() - last > idle:
                    break
                if not _still_ours(p.socket, inode):
                    reason = "its socket was removed"
                    break
                continue
            t0 = time.perf_counter()
            try:
                ch.send(wire.ACCEPT)
            except OSError:  # the caller gave up waiting
                ch.sock.close()
                busy.clear()
                continue
            code = _Job(ch, request).run(cli_main)
            # free before the caller has its exit status: a shell loop's next command may
            # arrive at once and then waits for this one's tidying (milliseconds) instead of
            # being turned away to run itself (seconds)
            busy.clear()
            try:
                ch.send_int(wire.EXIT, code)
            except OSError:
                pass
            ch.sock.close()
            served += 1
            seconds = time.perf_counter() - t0
            _tidy()
            if served == 1 and first:
                _freeze()
            last = time.monotonic()
            _log(f"{' '.join(request['argv'][:1])}: status {code}, {seconds:.3f} s")
        except KeyboardInterrupt:  # an interrupt that arrived as its command ended
            busy.clear()
            continue
    if _still_ours(p.socket, inode):
        os.unlink(p.socket)
    listener.close()
    try:  # an ordinary end: the next command may start a server again at once
        os.unlink(p.lock + ".started")
    except OSError:
        pass
    _log(f"ending ({reason}) after {served} commands")
    return 0


def _freeze() -> None:
    """What is loaded by now lives as long as the process: out of the collector's sight, a
    full collection (each tidying's, and those Python starts itself during a command) walks
    only what later commands made, 1 ms instead of 70-160 on two cores."""
    gc.freeze()


def _still_ours(path: str, inode: int) -> bool:
    try:
        return os.stat(path).st_ino == inode
    except OSError:
        return False


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m torchmsa.daemon.server")
    parser.add_argument("--key", required=True, help="the key of the callers it serves")
    parser.add_argument(
        "--first", action="store_true", help="listen at once, for the command that starts it"
    )
    args = parser.parse_args(argv)
    return serve(args.key, first=args.first)


if __name__ == "__main__":
    sys.exit(main())
