"""Other aligners, run the same way: a FASTA file in, aligned rows and wall-clock seconds out.

Each peer runs with a given thread count. Executables are looked up on ``PATH``, then under
``$TORCHMSA_PEERS_ROOT/usr/bin`` (default ``.debs/root`` in the repository), where
``benchmarks/setup_peers.sh extract`` unpacks Debian packages on a machine without network or
root; peers found there get ``MAFFT_BINARIES`` and ``LD_LIBRARY_PATH`` pointing into that tree.
Whatever is already in the environment (e.g. a ``MAFFT_BINARIES`` set by hand) is kept.

``python -m benchmarks.peers`` prints which peers are installed and their versions.
"""

from __future__ import annotations

import gzip
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import NamedTuple

from benchmarks.harness import REPO, Timer

__all__ = [
    "PEERS",
    "DEFAULT_PEERS",
    "PeerResult",
    "PeerNotInstalled",
    "PeerFailed",
    "peer_status",
    "plain_fasta",
    "run_peer",
]

PEERS_ROOT = Path(os.environ.get("TORCHMSA_PEERS_ROOT", REPO / ".debs" / "root"))


class PeerResult(NamedTuple):
    """An alignment made by a peer: ids, gapped rows (file order) and wall-clock seconds."""

    names: list[str]
    rows: list[str]
    seconds: float


class PeerNotInstalled(RuntimeError):
    """The peer's program or module cannot be found."""


class PeerFailed(RuntimeError):
    """The peer ran but gave no usable alignment (exit status, timeout, unreadable output)."""


def _which(program: str) -> str | None:
    found = shutil.which(program)
    if found:
        return found
    local = PEERS_ROOT / "usr" / "bin" / program
    return str(local) if os.access(local, os.X_OK) else None


def _env_for(executable: str) -> dict[str, str]:
    """The environment to run ``executable`` in: ours, plus paths into an unpacked .deb tree."""
    env = dict(os.environ)
    root = PEERS_ROOT.resolve()
    if Path(executable).resolve().is_relative_to(root):
        mafft_lib = root / "usr" / "lib" / "mafft" / "lib" / "mafft"
        if mafft_lib.is_dir():
            env.setdefault("MAFFT_BINARIES", str(mafft_lib))
        libs = [str(p) for p in (root / "usr/lib/x86_64-linux-gnu", root / "usr/lib") if p.is_dir()]
        if env.get("LD_LIBRARY_PATH"):
            libs.append(env["LD_LIBRARY_PATH"])
        env["LD_LIBRARY_PATH"] = os.pathsep.join(libs)
    return env


def _need(program: str) -> str:
    exe = _which(program)
    if exe is None:
        raise PeerNotInstalled(
            f"{program} is not installed (not on PATH, not in {PEERS_ROOT}/usr/bin); run "
            f"benchmarks/setup_peers.sh"
        )
    return exe


def plain_fasta(path: str | os.PathLike, workdir: str | os.PathLike) -> Path:
    """``path`` itself, or an uncompressed copy in ``workdir`` when it is gzipped."""
    path = Path(path)
    with open(path, "rb") as fh:
        if fh.read(2) != b"\x1f\x8b":
            return path
    out = Path(workdir) / path.name.removesuffix(".gz")
    with gzip.open(path, "rb") as src, open(out, "wb") as dst:
        shutil.copyfileobj(src, dst)
    return out


def _read_fasta(path: Path, tool: str) -> tuple[list[str], list[str]]:
    names, rows, cur = [], [], []
    try:
        text = path.read_text()
    except OSError as exc:
        raise PeerFailed(f"{tool} wrote no output file ({exc.strerror})") from None
    for line in text.splitlines():
        if line.startswith(">"):
            if names:
                rows.append("".join(cur))
            names.append(line[1:].split()[0] if line[1:].split() else "")
            cur = []
        else:
            cur.append(line.strip())
    if names:
        rows.append("".join(cur))
    if not names or len({len(r) for r in rows}) != 1:
        raise PeerFailed(f"{tool} wrote no alignment (or rows of unequal length) to {path}")
    return names, rows


def _run(
    tool: str, argv: list[str], out: Path, timeout: float | None, stdout_to_out: bool = False
) -> PeerResult:
    env = _env_for(argv[0])
    try:
        with Timer() as t:
            if stdout_to_out:
                with open(out, "w") as fh:
                    proc = subprocess.run(
                        argv, stdout=fh, stderr=subprocess.PIPE, env=env, timeout=timeout
                    )
            else:
                proc = subprocess.run(argv, capture_output=True, env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise PeerFailed(f"{tool} timed out after {timeout} s") from None
    if proc.returncode != 0:
        tail = proc.stderr.decode(errors="replace").strip().splitlines()[-3:]
        raise PeerFailed(f"{tool} exited with status {proc.returncode}: {' / '.join(tail)}")
    names, rows = _read_fasta(out, tool)
    return PeerResult(names, rows, t.seconds)


def _mafft(*options: str) -> Callable[..., PeerResult]:
    def run(in_fasta: Path, threads: int, workdir: Path, timeout: float | None) -> PeerResult:
        exe = _need("mafft")
        out = workdir / "mafft.afa"
        argv = [exe, *options, "--thread", str(threads), "--quiet", str(in_fasta)]
        return _run("mafft " + " ".join(options), argv, out, timeout, stdout_to_out=True)

    return run


def clustalo(in_fasta: Path, threads: int, workdir: Path, timeout: float | None) -> PeerResult:
    """Clustal Omega with its defaults."""
    exe = _need("clustalo")
    out = workdir / "clustalo.afa"
    argv = [exe, "-i", str(in_fasta), "-o", str(out), "--outfmt=fasta", "--force"]
    return _run("clustalo", [*argv, f"--threads={threads}"], out, timeout)


def _muscle(command: str) -> Callable[..., PeerResult]:
    def run(in_fasta: Path, threads: int, workdir: Path, timeout: float | None) -> PeerResult:
        exe = _need("muscle")
        out = workdir / "muscle.afa"
        argv = [exe, command, str(in_fasta), "-output", str(out), "-threads", str(threads)]
        return _run(f"muscle {command}", argv, out, timeout)

    return run


def kalign(in_fasta: Path, threads: int, workdir: Path, timeout: float | None) -> PeerResult:
    """Kalign 3 with its defaults (alphabet detected from the input)."""
    exe = _need("kalign")
    out = workdir / "kalign.afa"
    argv = [exe, "-i", str(in_fasta), "-o", str(out), "-n", str(threads)]
    return _run("kalign", argv, out, timeout)


def famsa(
    in_fasta: Path, threads: int, workdir: Path, timeout: float | None, **options
) -> PeerResult:
    """FAMSA through pyfamsa with its defaults (``options``: more ``pyfamsa.Aligner``
    arguments); runs in this process, so no timeout.

    pyfamsa 0.7.0 does not always give the same alignment for the same input: on BAliBASE
    BB11001 (4 sequences) repeated runs gave SP 1.0 or 0.816 with one thread.
    """
    try:
        import pyfamsa
    except ImportError:
        raise PeerNotInstalled("pyfamsa is not installed; pip install pyfamsa") from None
    from torchmsa.io import read_sequences

    records = read_sequences(in_fasta)
    with Timer() as t:
        seqs = [pyfamsa.Sequence(r.name.encode(), r.seq.upper().encode()) for r in records]
        try:
            aln = pyfamsa.Aligner(threads=threads, **options).align(seqs)
        except (ValueError, RuntimeError) as exc:
            raise PeerFailed(f"famsa failed: {exc}") from None
        names = [s.id.decode() for s in aln]
        rows = [s.sequence.decode() for s in aln]
    return PeerResult(names, rows, t.seconds)


PEERS: dict[str, Callable[..., PeerResult]] = {
    "mafft-auto": _mafft("--auto"),
    "mafft-linsi": _mafft("--localpair", "--maxiterate", "1000"),
    "mafft-fftns2": _mafft("--retree", "2", "--maxiterate", "0"),
    "mafft-parttree": _mafft("--parttree"),
    "clustalo": clustalo,
    "muscle": _muscle("-align"),
    "muscle-super5": _muscle("-super5"),
    "kalign": kalign,
    "famsa": famsa,
    # FAMSA 2's -medoidtree: a medoid-clustering guide tree instead of all pairs
    "famsa-medoid": partial(famsa, tree_heuristic="medoid"),
}
# muscle-super5 is MUSCLE's mode for inputs of thousands of sequences, famsa-medoid FAMSA's for
# hundreds of thousands: asked for by name only.
DEFAULT_PEERS = [p for p in PEERS if p not in ("muscle-super5", "famsa-medoid")]

_PROGRAM = {p: p.split("-")[0] for p in PEERS} | {"famsa": "pyfamsa", "famsa-medoid": "pyfamsa"}


def run_peer(
    name: str,
    in_fasta: str | os.PathLike,
    threads: int = 1,
    timeout: float | None = None,
) -> PeerResult:
    """Align ``in_fasta`` (FASTA, optionally gzipped) with peer ``name`` on ``threads`` threads.

    Arguments:
        name: a key of :data:`PEERS`.
        in_fasta: the unaligned sequences.
        threads: threads the peer may use.
        timeout: seconds before a command-line peer is killed (``None``: no limit).

    Returns:
        :class:`PeerResult`; ``seconds`` is the peer's wall-clock time (decompressing the
        input is not counted).

    Raises:
        PeerNotInstalled: the peer cannot be found.
        PeerFailed: it ran and failed.
    """
    if name not in PEERS:
        raise KeyError(f"unknown peer {name!r}; known peers are {sorted(PEERS)}")
    with tempfile.TemporaryDirectory(prefix=f"torchmsa-{name}-") as tmp:
        plain = plain_fasta(in_fasta, tmp)
        return PEERS[name](plain, threads, Path(tmp), timeout)


def _version_of(program: str) -> str:
    if program == "pyfamsa":
        try:
            import pyfamsa
        except ImportError:
            return ""
        return f"pyfamsa {pyfamsa.__version__}"
    exe = _which(program)
    if exe is None:
        return ""
    flag = "-version" if program == "muscle" else "--version"
    try:
        proc = subprocess.run([exe, flag], capture_output=True, env=_env_for(exe), timeout=60)
    except (OSError, subprocess.SubprocessError):
        return f"{program} (version unknown)"
    text = (proc.stdout + proc.stderr).decode(errors="replace").strip().splitlines()
    line = next((s.strip() for s in text if s.strip()), "")
    return f"{program} {line}" if program not in line.lower() else line


def peer_status() -> dict[str, str]:
    """Peer name to its version line, or to a ``"not installed: ..."`` message."""
    versions = {p: _version_of(p) for p in set(_PROGRAM.values())}
    out = {}
    for name, program in _PROGRAM.items():
        out[name] = versions[program] or f"not installed: {program} not found"
    return out


if __name__ == "__main__":
    for peer, status in peer_status().items():
        print(f"{peer:15s} {status}")
