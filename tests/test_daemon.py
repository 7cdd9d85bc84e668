"""The warm server (``torchmsa/daemon``, decision 0058): a command it runs gives the bytes,
files, messages and exit status of the same command run locally; a busy server turns a
command away and the caller runs it; an interrupt from the caller ends the command and not
the server; the key separates environments."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from torchmsa.daemon import client, where
from torchmsa.daemon.wire import ACCEPT, CONTROL, EXIT, NEED, REQUEST, Channel, as_int

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "superoxide_dismutase.fasta"


def _env(folder: str, **extra) -> dict:
    env = dict(os.environ)
    env.update(
        TORCHMSA_DAEMON="auto",
        TORCHMSA_DAEMON_DIR=folder,
        TORCHMSA_DAEMON_IDLE="120",  # a server a failed test leaves behind ends by itself
        TORCHMSA_COMPILE_AHEAD="0",
        PYTHONPATH=os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]),
    )
    env.update(extra)
    return env


def _cli(args, env, cwd=None, stdin=None):
    return subprocess.run(
        [sys.executable, "-m", "torchmsa", *args],
        env=env,
        cwd=cwd,
        input=stdin,
        capture_output=True,
        timeout=600,
    )


def _served(folder: str) -> int:
    """Commands the servers in ``folder`` have logged."""
    return sum(
        sum(1 for line in p.read_text().splitlines() if "] align: status" in line)
        for p in Path(folder).glob("*.log")
    )


@pytest.fixture(scope="module")
def server():
    folder = tempfile.mkdtemp(prefix="tmd", dir="/tmp")  # short: a socket path's limit
    env = _env(folder)
    started = _cli(["daemon", "start", "--wait", "600"], env)
    assert started.returncode == 0, started.stdout + started.stderr
    assert b"started" in started.stdout
    yield folder, env
    _cli(["daemon", "stop", "--all"], env)
    shutil.rmtree(folder, ignore_errors=True)


def test_key_and_routing():
    env = {"HOME": "/h", "TORCHMSA_DAEMON": "auto"}
    base = where.key(env)
    assert where.key({**env, "TORCHMSA_DAEMON_IDLE": "5"}) == base  # the server's own setting
    assert where.key({**env, "TORCHMSA_CACHE_DIR": "/c"}) != base
    assert where.key({**env, "CUDA_VISIBLE_DEVICES": "1"}) != base
    assert where.key({**env, "UNRELATED": "1"}) == base
    assert where.routed(["align", "x.fa"], env)
    assert not where.routed(["align", "--help"], env)
    assert not where.routed(["serve"], env)
    assert not where.routed(["align", "x.fa"], {**env, "TORCHMSA_DAEMON": "off"})
    assert not where.routed(["align", "x.fa"], {**env, "WORLD_SIZE": "2"})
    assert not where.routed(["align", "x.fa"], {**env, "TORCHMSA_CACHE_DIR": "caches"})
    assert where.routed(["align", "x.fa"], {**env, "TORCHMSA_CACHE_DIR": "/abs/caches"})


def test_preload_meets_both_placements():
    # the warm server's preload runs the host's path and, with a GPU, the GPU's, per mode:
    # a first command of either kind then loads nothing
    from torchmsa.daemon.server import preload_jobs
    from torchmsa.pipeline.placement import host_job

    def placed(gpu):
        jobs = preload_jobs(gpu)
        # a family's longest sequence may have lost up to 5 residues (synthetic.family)
        return {(mode, host_job(n, length - 5, mode)) for n, length, mode, _ in jobs}

    assert placed(False) == {("default", True), ("accurate", True), ("fast", True)}
    assert placed(True) >= {(m, h) for m in ("default", "accurate") for h in (True, False)}
    assert ("fast", False) in placed(True)
    assert {tree for *_, tree in preload_jobs(True)} == {"auto", "parttree"}


def test_one_interpreter_under_two_names_is_one_key(tmp_path, monkeypatch):
    env = {"HOME": "/h"}
    base = where.key(env)
    link = tmp_path / "python-alias"
    link.symlink_to(os.path.realpath(sys.executable))
    monkeypatch.setattr(sys, "executable", str(link))
    assert where.key(env) == base
    monkeypatch.setattr(sys, "prefix", str(tmp_path))  # another (virtual) environment
    assert where.key(env) != base


def test_folder_must_be_private(tmp_path):
    open_folder = tmp_path / "open"
    open_folder.mkdir(mode=0o777)
    open_folder.chmod(0o777)
    env = {"TORCHMSA_DAEMON_DIR": str(open_folder), "HOME": str(tmp_path)}
    assert where.folder(env) != str(open_folder)


def test_same_results_as_a_local_run(server, tmp_path):
    folder, env = server
    local_env = {**env, "TORCHMSA_DAEMON": "off"}
    before = _served(folder)
    # a file in, a relative file out, in the caller's working directory
    shutil.copy(EXAMPLE, tmp_path / "in.fa")
    warm = _cli(["align", "in.fa", "-o", "warm.fa", "-v"], env, cwd=tmp_path)
    here = _cli(["align", "in.fa", "-o", "here.fa", "-v"], local_env, cwd=tmp_path)
    assert warm.returncode == here.returncode == 0, warm.stderr + here.stderr
    assert (tmp_path / "warm.fa").read_bytes() == (tmp_path / "here.fa").read_bytes()
    assert warm.stderr.count(b"torchmsa: stage") == here.stderr.count(b"torchmsa: stage") > 0
    # standard input to standard output, another format
    text = EXAMPLE.read_bytes()
    warm = _cli(["align", "-", "--format", "clustal"], env, stdin=text)
    here = _cli(["align", "-", "--format", "clustal"], local_env, stdin=text)
    assert warm.returncode == here.returncode == 0
    assert warm.stdout == here.stdout and warm.stdout.startswith(b"CLUSTAL")
    # a user error: one line, status 2, the same words
    (tmp_path / "bad.fa").write_text(">a\nAC1D\n>b\nACD\n")
    warm = _cli(["align", "bad.fa"], env, cwd=tmp_path)
    here = _cli(["align", "bad.fa"], local_env, cwd=tmp_path)
    assert warm.returncode == here.returncode == 2
    assert warm.stderr == here.stderr and warm.stderr.count(b"\n") == 1
    assert _wait_served(folder, before + 3) == before + 3


def _wait_served(folder: str, count: int) -> int:
    """Waits (30 s at most) until the servers have logged ``count`` commands; returns the
    number logged (the log line follows the command's status by the server's tidying)."""
    deadline = time.monotonic() + 30
    while _served(folder) < count and time.monotonic() < deadline:
        time.sleep(0.05)
    return _served(folder)


def _hold(env) -> tuple[socket.socket, Channel]:
    """A raw caller whose command (``align -``) waits for standard input it never sends."""
    p = where.paths(where.key(env), env)
    request = {"argv": ["align", "-"], "cwd": "/", "env": env, "umask": 0o022, "tty": [0, 0, 0]}
    deadline = time.monotonic() + 30
    while True:  # the server may still be tidying up after the last command
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(p.socket)
        ch = Channel(sock)
        ch.send_json(REQUEST, request)
        kind = ch.recv()[0]
        if kind == ACCEPT or time.monotonic() > deadline:
            break
        sock.close()
        time.sleep(0.1)
    assert kind == ACCEPT
    assert ch.recv()[0] == NEED  # it reads standard input now
    return sock, ch


def test_busy_server_turns_commands_away(server, tmp_path):
    folder, env = server
    sock, ch = _hold(env)
    try:
        before = _served(folder)
        out = _cli(["align", str(EXAMPLE), "-o", str(tmp_path / "a.fa")], env)
        assert out.returncode == 0 and (tmp_path / "a.fa").read_bytes().startswith(b">")
        assert _served(folder) == before  # it ran in the caller
    finally:
        sock.close()  # end of input: the held command fails as a local one would
    assert _wait_served(folder, before + 1) == before + 1


def test_commands_in_a_row_are_all_served(server, tmp_path):
    # a shell loop's next command arrives while the server tidies up after the last one: it
    # waits for that (milliseconds) instead of being turned away to run itself (seconds)
    folder, env = server
    before = _served(folder)
    argv = ["align", str(EXAMPLE), "--mode", "default", "-o"]
    codes = [client.forward([*argv, str(tmp_path / f"{k}.fa")], env) for k in range(3)]
    assert codes == [0, 0, 0]
    assert _wait_served(folder, before + 3) == before + 3
    assert len({(tmp_path / f"{k}.fa").read_bytes() for k in range(3)}) == 1


def test_interrupt_ends_the_command_not_the_server(server, tmp_path):
    folder, env = server
    before = _served(folder)
    sock, ch = _hold(env)
    try:
        ch.send_json(CONTROL, {"interrupt": True})
        messages = []
        while True:
            kind, payload = ch.recv()
            assert kind is not None, "the server closed the connection without a status"
            if kind == EXIT:
                break
            messages.append(payload)
        assert as_int(payload) == 130
        assert b"torchmsa: interrupted" in b"".join(messages)
    finally:
        sock.close()
    assert _wait_served(folder, before + 1) == before + 1
    out = _cli(["align", str(EXAMPLE), "-o", str(tmp_path / "b.fa")], env)
    assert out.returncode == 0 and _wait_served(folder, before + 2) == before + 2


def test_other_environment_gets_its_own_server(server, tmp_path):
    # no server of that key yet: the command starts one for itself, which runs it at once
    # (no preload) and stays for the next command (decision 0062)
    folder, env = server
    other = {**env, "TORCHMSA_TEST_ENV_MARK": "1"}
    log = Path(where.paths(where.key(other), other).log)
    before = _served(folder)
    out = _cli(["align", str(EXAMPLE), "-o", str(tmp_path / "c.fa")], other)
    assert out.returncode == 0, out.stderr
    assert _wait_served(folder, before + 1) == before + 1
    assert "(to run the command that started it)" in log.read_text()
    local = _cli(
        ["align", str(EXAMPLE), "-o", str(tmp_path / "d.fa")], {**other, "TORCHMSA_DAEMON": "off"}
    )
    assert local.returncode == 0
    assert (tmp_path / "c.fa").read_bytes() == (tmp_path / "d.fa").read_bytes()
    again = _cli(["align", str(EXAMPLE), "-o", str(tmp_path / "e.fa")], other)
    assert again.returncode == 0 and _wait_served(folder, before + 2) == before + 2
    status = _cli(["daemon", "status"], other)  # both stopped by the fixture's --all
    keys = {line.split()[0] for line in status.stdout.decode().splitlines() if " pid " in line}
    assert {where.key(other), where.key(env)} <= keys


def test_a_server_that_died_is_not_restarted_by_every_command():
    folder = tempfile.mkdtemp(prefix="tmd", dir="/tmp")
    try:
        env = _env(folder, TORCHMSA_TEST_ENV_MARK="died")
        p = where.paths(where.key(env), env)
        mark = p.lock + ".started"
        Path(mark).touch()  # started a moment ago: it may not hold its lock yet
        assert client.start(env) == "starting" and client.alive(p) is None
        os.utime(mark, (time.time() - 60, time.time() - 60))  # a minute ago, and gone: died
        assert client.start(env) == "failed" and client.alive(p) is None
        os.utime(mark, (0, 0))  # long ago: a command may start one again
        assert client.start(env) == "started"
        deadline = time.monotonic() + 60
        while client.alive(p) is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert client.start(env) == "running"  # it holds the lock while it loads
        assert client.stop(env) == 1 and client.alive(p) is None
        assert not Path(p.lock + ".started").exists()  # an ordinary end clears the mark
    finally:
        client.stop(_env(folder), every=True)
        shutil.rmtree(folder, ignore_errors=True)
