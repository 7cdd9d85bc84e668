"""Gapped rows as text lines: each residue code replaced by its letter as given (the input's
case), ``-`` for gaps, a line end after each row; what FASTA output and ``Alignment.rows``
are made of. One pass over the codes: numpy's boolean scatter took seconds at 10^6 rows."""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["gapped_lines", "fasta_file"]

ROWS_PER_TASK = 4096  # rows a thread fills at a time in fasta_file

GAP, LINE_END = ord("-"), ord("\n")


@njit(cache=True, nogil=True, inline="always")
def _line(row, gap, letters, lo, hi, out, o) -> int:
    """One gapped line at ``out[o:]``: the codes ``row``, residue cells taking the letters
    ``letters[lo:hi]`` in order, ``-`` for gaps, then a line end; returns how many residue
    cells the row holds (``hi - lo`` when it matches its letters)."""
    p = lo
    for j in range(row.shape[0]):
        if row[j] != gap:
            if p < hi:
                out[o + j] = letters[p]
            p += 1
        else:
            out[o + j] = GAP
    out[o + row.shape[0]] = LINE_END
    return p - lo


@njit(cache=True, nogil=True)
def _fill(codes, gap, letters, starts, out) -> int:
    """Fill ``out [N, C + 1]``; returns the first row whose residue cells do not match its
    letters' count, or -1."""
    for i in range(codes.shape[0]):
        lo, hi = starts[i], starts[i + 1]
        if _line(codes[i], gap, letters, lo, hi, out[i], 0) != hi - lo:
            return i
    return -1


def _starts(letters: bytes, lengths: np.ndarray) -> np.ndarray:
    """Where each row's letters start in ``letters`` (``int64 [N + 1]``), once they are known
    to be all of them."""
    starts = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=starts[1:])
    if starts[-1] != len(letters):
        raise ValueError(f"{len(letters)} letters for rows of {int(starts[-1])} residues")
    return starts


def gapped_lines(codes: np.ndarray, gap: int, letters: bytes, lengths: np.ndarray) -> np.ndarray:
    """``uint8 [N, C + 1]`` lines of the alignment ``codes`` (``uint8 [N, C]``, ``gap`` for
    gaps): row ``i``'s residue cells take ``lengths[i]`` letters of ``letters`` in order (the
    rows' letters one after another).

    Raises:
        ValueError: a row holds a different number of residue cells than its letters.
    """
    codes = np.ascontiguousarray(codes, dtype=np.uint8)
    starts = _starts(letters, lengths)
    out = np.empty((codes.shape[0], codes.shape[1] + 1), dtype=np.uint8)
    bad = _fill(codes, np.uint8(gap), np.frombuffer(letters, dtype=np.uint8), starts, out)
    if bad >= 0:
        raise ValueError(f"row {bad} of the codes does not hold its {int(lengths[bad])} residues")
    return out


@njit(cache=True, nogil=True)
def _fill_fasta(codes, gap, letters, starts, heads, head_at, at, lo, hi, out) -> int:
    """Rows ``lo .. hi`` of a FASTA file into ``out``: row ``i`` at ``at[i]`` as ``>``, its
    header bytes ``heads[head_at[i]:head_at[i + 1]]``, a line end, its gapped line and a line
    end. Returns the first row whose residue cells do not match its letters, or -1."""
    for i in range(lo, hi):
        o = at[i]
        out[o] = 62  # '>'
        o += 1
        for b in range(head_at[i], head_at[i + 1]):
            out[o] = heads[b]
            o += 1
        out[o] = LINE_END
        first, last = starts[i], starts[i + 1]
        if _line(codes[i], gap, letters, first, last, out, o + 1) != last - first:
            return i
    return -1


def fasta_file(
    codes: np.ndarray, gap: int, letters: bytes, lengths: np.ndarray, heads: bytes,
    head_lengths: np.ndarray, threads: int = 1,
) -> np.ndarray:  # fmt: skip
    """The bytes of a FASTA file of the alignment ``codes`` (as :func:`gapped_lines`), row
    ``i`` headed by the next ``head_lengths[i]`` bytes of ``heads``, as a ``uint8`` array (a
    file is written from it as it is: ``tobytes`` would copy 1.9 GB at 10^6 rows of 2,000
    columns); filled by ``threads`` threads (rows in tasks of :data:`ROWS_PER_TASK`), the same
    bytes for any count.

    Raises:
        ValueError: as :func:`gapped_lines`.
    """
    codes = np.ascontiguousarray(codes, dtype=np.uint8)
    n, width = codes.shape
    starts = _starts(letters, lengths)
    head_at = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(head_lengths, out=head_at[1:])
    at = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.asarray(head_lengths, np.int64) + width + 3, out=at[1:])
    out = np.empty(int(at[-1]), dtype=np.uint8)
    args = (codes, np.uint8(gap), np.frombuffer(letters, np.uint8), starts)
    args += (np.frombuffer(heads, np.uint8), head_at, at)
    tasks = [(lo, min(lo + ROWS_PER_TASK, n)) for lo in range(0, n, ROWS_PER_TASK)]
    if threads > 1 and len(tasks) > 1:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(min(threads, len(tasks))) as pool:
            bad = list(pool.map(lambda t: _fill_fasta(*args, t[0], t[1], out), tasks))
    else:
        bad = [_fill_fasta(*args, lo, hi, out) for lo, hi in tasks]
    wrong = [b for b in bad if b >= 0]
    if wrong:
        k = min(wrong)
        raise ValueError(f"row {k} of the codes does not hold its {int(lengths[k])} residues")
    return out
