"""One FASTA file written by every rank of a shared alignment, each its own rows (#42).

Every rank of a shared alignment holds the whole alignment (decision 0068), so each can
format a share of the rows. A FASTA file is its rows' records one after the other, so a
share's bytes go at the summed size of the shares before it:

1. rank 0 makes an empty temporary file beside the output (as a lone process writes it:
   renamed over the output once complete, so that a failed run leaves no partial file);
2. every rank that sees that file (the same device and inode: ranks on another host may
   not share the folder) takes a share of the rows, in rank order, and formats it;
3. the ranks exchange their shares' sizes (one integer each) and each writes its bytes at
   its offset with ``pwrite``;
4. the ranks exchange whether their writes succeeded; rank 0 renames the file over the
   output, or removes it and every rank raises.

The file is the one a lone process writes, byte for byte, for any number of ranks.
"""

from __future__ import annotations

import os
import time

from torchmsa.errors import ArgumentError, TorchMSAError
from torchmsa.io.write import Replacement

__all__ = ["write_fasta"]


def write_fasta(aln, path: str, ranks) -> None:
    """Write ``aln`` (held alike by every rank of ``ranks``) to the FASTA file ``path``,
    each rank its share of the rows (see the module docstring). Every rank calls it.

    Raises:
        ArgumentError: the file cannot be made or written (on every rank).
    """
    t0 = time.perf_counter()
    target, made = _make(path) if ranks.leader else (None, None)
    made = ranks.broadcast(made)
    if isinstance(made, str):
        raise ArgumentError(made)
    tmp, ident = made
    sees = _ident(tmp) == ident
    writers = [r for r, ok in enumerate(ranks.all_gather(sees)) if ok]
    share = slice(0, 0)
    if sees:
        k, n = writers.index(ranks.rank), len(aln)
        share = slice(n * k // len(writers), n * (k + 1) // len(writers))
    part, failed = b"", None
    try:
        part = aln.fasta_array(share) if sees else b""
    except (TorchMSAError, ValueError) as exc:  # the others must not wait for this rank
        failed = f"{ranks.tag}: {exc}"
    sizes = ranks.all_gather(len(part))
    if len(part):
        failed = _put(tmp, part, sum(sizes[: ranks.rank]))
    failures = [f for f in ranks.all_gather(failed) if f]
    if target is not None:
        if not failures:
            try:
                target.commit()
            except OSError as exc:
                failures.append(_message(path, exc))
        if failures:
            target.discard()
    failures = ranks.broadcast(failures)
    if failures:
        raise ArgumentError(failures[0])
    ranks.say(
        f"torchmsa: {ranks.tag}: wrote rows {share.start}-{share.stop} of {len(aln)} "
        f"({len(part) / 2**20:.1f} MiB) in {time.perf_counter() - t0:.2f} s"
    )


def _make(path: str):
    """Rank 0's ``(Replacement, (temporary file, its identity))``, or ``(None, the message
    of why it cannot be made)``."""
    try:
        target = Replacement(path)
    except OSError as exc:
        return None, _message(path, exc)
    if target.tmp is None:
        return None, f"cannot write {path!r} in shares: it is not a regular file"
    return target, (target.tmp, _ident(target.tmp))


def _ident(path: str):
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _put(tmp: str, data, offset: int) -> str | None:
    """Writes ``data`` at ``offset`` of ``tmp``; the message of a failure, else ``None``."""
    try:
        fd = os.open(tmp, os.O_WRONLY)
        try:
            view, at = memoryview(data), 0
            while at < len(view):
                at += os.pwrite(fd, view[at:], offset + at)
        finally:
            os.close(fd)
    except OSError as exc:
        return _message(tmp, exc)
    return None


def _message(path: str, exc: OSError) -> str:
    return (
        f"cannot write {path!r}: {exc.strerror or exc}; check that its directory exists and "
        f"is writable"
    )
