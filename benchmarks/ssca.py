"""SSCA#1-style synthetic pairs for long local alignment: a random subject of ``m`` residues, a
random query of ``n``, and copies of query pieces, mutated by substitutions and short indels,
planted in the subject at recorded places (seed 003's benchmark, issue #38).

    python -m benchmarks.ssca --n 10000 --m 100000000 --out DIR [--seqtype protein] [--seed 0]

writes ``DIR/query.fa.gz``, ``DIR/subject.fa.gz`` and ``DIR/planted.tsv`` (one row per planted
segment, 0-based half-open intervals) for command-line runs.

Everything is drawn from one seeded ``numpy.random.Generator``, so a pair is a function of its
arguments. The background is drawn with one table lookup per residue (protein: the Robinson &
Robinson background frequencies, quantised to 1/4096; DNA: uniform), so ``m = 10**8`` takes a
few seconds; the planted segments are short and few, one small vectorised mutation each.
"""

from __future__ import annotations

import argparse
import gzip
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

__all__ = ["Planted", "SSCAPair", "make_pair", "write_fasta", "LETTERS"]

LETTERS = {"protein": "ARNDCQEGHILKMFPSTWYV", "dna": "ACGT"}
# Robinson & Robinson (1991) background frequencies (%), in the order of LETTERS["protein"]
_AMINO_FREQ = (7.8, 5.1, 4.5, 5.4, 1.9, 4.3, 6.3, 7.4, 2.2, 5.2, 9.0, 5.7, 2.2, 3.9, 5.2, 7.1,
               5.8, 1.3, 3.2, 6.4)  # fmt: skip
_TABLE_BITS = 12  # residues are drawn as table[uint16 % 4096]


@dataclass(frozen=True)
class Planted:
    """One planted segment: ``query[q_start:q_end]`` mutated and written over
    ``subject[s_start:s_end]`` (0-based, end exclusive)."""

    q_start: int
    q_end: int
    s_start: int
    s_end: int
    substitutions: int  # residues changed to another letter
    inserted: int  # residues inserted
    deleted: int  # query residues deleted


@dataclass(frozen=True)
class SSCAPair:
    """A query, a subject and the segments planted in it (sorted by subject position)."""

    query: str
    subject: str
    planted: tuple[Planted, ...]
    seqtype: str
    seed: int
    spacing: int  # least subject residues between two segments

    def __repr__(self) -> str:
        return (
            f"SSCAPair(n={len(self.query)}, m={len(self.subject)}, planted={len(self.planted)}, "
            f"seqtype={self.seqtype!r}, seed={self.seed})"
        )


def _table(seqtype: str) -> np.ndarray:
    """``uint8 [4096]`` ASCII letters, each as often as its background frequency says."""
    letters = np.frombuffer(LETTERS[seqtype].encode("ascii"), np.uint8)
    size = 1 << _TABLE_BITS
    if seqtype == "dna":
        return np.repeat(letters, size // len(letters))
    freq = np.asarray(_AMINO_FREQ) / sum(_AMINO_FREQ)
    counts = np.floor(freq * size).astype(np.int64)
    counts[np.argsort(freq * size - counts)[::-1][: size - counts.sum()]] += 1  # largest rests
    return np.repeat(letters, counts)


def _draw(rng: np.random.Generator, table: np.ndarray, count: int) -> np.ndarray:
    """``count`` background residues (ASCII ``uint8``)."""
    return table[rng.integers(0, len(table), count, dtype=np.uint16)]


def _mutate(rng, table, piece, sub_rate, indel_rate, max_indel):
    """``piece`` (ASCII ``uint8``) with substitutions and indels: ``(copy, subs, ins, dels)``.

    Each residue is substituted with probability ``sub_rate`` (drawn from the background until
    it differs); at each residue an indel starts with probability ``indel_rate``, half of them
    deletions of 1..``max_indel`` residues from there, half insertions of as many background
    residues after it."""
    L = len(piece)
    out = piece.copy()
    sub = np.flatnonzero(rng.random(L) < sub_rate)
    for _ in range(64):  # redraw the letters that came out the same (1/20 or 1/4 each round)
        if not len(sub):
            break
        out[sub] = _draw(rng, table, len(sub))
        sub = sub[out[sub] == piece[sub]]
    subs = int((out != piece).sum())
    event = rng.random(L) < indel_rate
    deletion = rng.random(L) < 0.5
    size = rng.integers(1, max_indel + 1, L)
    keep = np.ones(L, bool)
    starts = np.flatnonzero(event & deletion)
    if len(starts):
        span = np.arange(max_indel)
        gone = (starts[:, None] + span[None, :])[span[None, :] < size[starts][:, None]]
        keep[gone[gone < L]] = False
    ins = np.where(event & ~deletion, size, 0)  # [L] residues inserted after each residue
    per = keep.astype(np.int64) + ins  # [L] residues each position gives the copy
    at = np.repeat(np.arange(L), per)  # [L'] position each output residue comes from
    offset = np.arange(len(at)) - np.repeat(np.cumsum(per) - per, per)
    copy = _draw(rng, table, len(at))
    own = keep[at] & (offset == 0)
    copy[own] = out[at[own]]
    return copy, subs, int(ins.sum()), int((~keep).sum())


def make_pair(
    n: int,
    m: int,
    *,
    seqtype: str = "protein",
    planted: int = 50,
    seg_len: tuple[int, int] = (64, 192),
    sub_rate: float = 0.15,
    indel_rate: float = 0.02,
    max_indel: int = 3,
    spacing: int | None = None,
    seed: int = 0,
) -> SSCAPair:
    """A deterministic SSCA#1-style pair with planted homologous segments.

    Arguments:
        n, m: query and subject lengths.
        seqtype: ``"protein"`` (20 amino acids at background frequencies) or ``"dna"``.
        planted: segments to plant.
        seg_len: the range of a segment's length in the query (inclusive), cut to ``n``.
        sub_rate, indel_rate, max_indel: the mutation of each copy (see :func:`_mutate`).
        spacing: least subject residues between two segments. The default is ten times the
            longest segment, or the most that fits when that does not: a path from one segment
            to the next then costs more than a segment scores (random residue pairs score about
            -1 each, a gap 1 per residue), so each segment is an alignment of its own.
        seed: the ``numpy.random.default_rng`` seed.

    Returns:
        An :class:`SSCAPair`.

    Raises:
        ValueError: an argument is out of range, or the segments do not fit in ``m``.

    >>> pair = make_pair(200, 5000, planted=3, seed=1)
    >>> len(pair.query), len(pair.subject), len(pair.planted)
    (200, 5000, 3)
    """
    if seqtype not in LETTERS:
        raise ValueError(
            f"Invalid value for `seqtype` argument: {seqtype!r}; use 'protein' or 'dna'"
        )
    if n < 1 or m < 1 or planted < 0:
        raise ValueError(f"`n`, `m` must be >= 1 and `planted` >= 0; got {n}, {m}, {planted}")
    lo, hi = min(seg_len[0], n), min(seg_len[1], n)
    if lo < 1 or lo > hi:
        raise ValueError(f"Invalid value for `seg_len` argument: {seg_len!r}")
    if not (0 <= sub_rate <= 1 and 0 <= indel_rate <= 1 and max_indel >= 1):
        raise ValueError(
            f"`sub_rate`, `indel_rate` must lie in [0, 1] and `max_indel` >= 1; got "
            f"{sub_rate}, {indel_rate}, {max_indel}"
        )
    rng = np.random.default_rng(seed)
    table = _table(seqtype)
    query = _draw(rng, table, n)
    lengths = rng.integers(lo, hi + 1, planted)
    q_starts = rng.integers(0, n - lengths + 1)
    copies = [
        _mutate(rng, table, query[s : s + L], sub_rate, indel_rate, max_indel)
        for s, L in zip(q_starts.tolist(), lengths.tolist())
    ]
    sizes = np.array([len(c[0]) for c in copies], np.int64)
    if spacing is None:
        spacing = min(10 * hi, max(m - int(sizes.sum()), 0) // max(planted - 1, 1))
    free = m - int(sizes.sum()) - spacing * max(planted - 1, 0)
    if free < 0:
        raise ValueError(
            f"{planted} segments of {lo}..{hi} residues, {spacing} apart, do not fit in a "
            f"subject of {m}; lower `planted`, `seg_len` or `spacing`, or raise `m`"
        )
    # sorted free residues before each segment, then each segment after the ones before it
    s_starts = np.sort(rng.integers(0, free + 1, planted))
    s_starts += np.cumsum(sizes + spacing) - sizes - spacing
    subject = _draw(rng, table, m)
    if planted:
        at = (
            np.repeat(s_starts, sizes)
            + np.arange(sizes.sum())
            - np.repeat(np.cumsum(sizes) - sizes, sizes)
        )
        subject[at] = np.concatenate([c[0] for c in copies])
    records = tuple(
        Planted(int(qs), int(qs + L), int(ss), int(ss + size), subs, ins, dels)
        for qs, L, ss, size, (_, subs, ins, dels) in zip(
            q_starts.tolist(), lengths.tolist(), s_starts.tolist(), sizes.tolist(), copies
        )
    )
    return SSCAPair(
        query.tobytes().decode("ascii"),
        subject.tobytes().decode("ascii"),
        records,
        seqtype,
        seed,
        spacing,
    )


def _fasta_body(text: str, width: int = 80) -> bytes:
    """``text`` cut into lines of ``width``, each ending in a newline (vectorised)."""
    raw = np.frombuffer(text.encode("ascii"), np.uint8)
    full = len(raw) // width
    lines = np.full((full, width + 1), ord("\n"), np.uint8)
    lines[:, :width] = raw[: full * width].reshape(full, width)
    tail = raw[full * width :].tobytes()
    return lines.tobytes() + (tail + b"\n" if tail else b"")


def write_fasta(pair: SSCAPair, folder: str | os.PathLike, gz: bool = True) -> dict[str, Path]:
    """Write ``query.fa[.gz]``, ``subject.fa[.gz]`` and ``planted.tsv`` into ``folder``.

    Returns:
        ``{"query": path, "subject": path, "planted": path}``.
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    paths = {}
    for name, text in (("query", pair.query), ("subject", pair.subject)):
        path = folder / (f"{name}.fa.gz" if gz else f"{name}.fa")
        header = f">{name} ssca n={len(pair.query)} m={len(pair.subject)} seed={pair.seed}\n"
        opener = gzip.open(path, "wb", compresslevel=1) if gz else open(path, "wb")
        with opener as fh:
            fh.write(header.encode("ascii") + _fasta_body(text))
        paths[name] = path
    path = folder / "planted.tsv"
    fields = list(Planted.__dataclass_fields__)
    with open(path, "w") as fh:
        fh.write("\t".join(fields) + "\n")
        for p in pair.planted:
            fh.write("\t".join(str(getattr(p, f)) for f in fields) + "\n")
    paths["planted"] = path
    return paths


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, required=True, help="query length")
    ap.add_argument("--m", type=float, required=True, help="subject length (1e8 allowed)")
    ap.add_argument("--seqtype", default="protein", choices=sorted(LETTERS))
    ap.add_argument("--planted", type=int, default=50)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--plain", action="store_true", help="write .fa, not .fa.gz")
    ap.add_argument("--out", required=True, help="folder for the FASTA files and planted.tsv")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    pair = make_pair(
        args.n, int(args.m), seqtype=args.seqtype, planted=args.planted, seed=args.seed
    )
    t1 = time.perf_counter()
    paths = write_fasta(pair, args.out, gz=not args.plain)
    t2 = time.perf_counter()
    print(f"{pair!r}: generated in {t1 - t0:.2f} s, written in {t2 - t1:.2f} s")
    for path in paths.values():
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
