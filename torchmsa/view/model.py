"""What a view shows: the rows picked, the columns cut, the tree, and the column tracks."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from torchmsa.errors import ArgumentError, EmptyInputError
from torchmsa.view import tracks
from torchmsa.view.dendrogram import Dendrogram, distance_newick, layout

__all__ = ["LoadedAlignment", "View", "load", "parse_region", "parse_rows", "prepare"]

_DETECT_ROWS = 200  # rows read to tell protein from nucleotides


class LoadedAlignment:
    """An alignment read from a file, for viewing: what :func:`prepare` needs and no tensors.

    Attributes:
        names: row ids, file order.
        descriptions: whole header lines.
        rows: gapped rows (``-`` for gaps, case kept).
        tree: always ``None`` (a file holds no guide tree).
        source: the file's name.
    """

    tree = None

    def __init__(self, names: list[str], descriptions: list[str], rows: list[str], source: str):
        self.names = names
        self.descriptions = descriptions
        self.rows = rows
        self.source = source

    def __len__(self) -> int:
        return len(self.names)

    @property
    def width(self) -> int:
        return len(self.rows[0]) if self.rows else 0

    def __repr__(self) -> str:
        return f"LoadedAlignment(n={len(self)}, width={self.width}, source={self.source!r})"


def load(path, format: str | None = None) -> LoadedAlignment:
    """Read an alignment file (FASTA, A2M/A3M, Stockholm, Clustal, PHYLIP; ``.gz``; ``"-"``).

    Raises:
        FormatError: the file cannot be read as an alignment.
        EmptyInputError: it holds no rows.
    """
    from torchmsa.io import read_alignment

    records = read_alignment(path, format)
    source = "<stdin>" if path == "-" else os.path.basename(os.fsdecode(path))
    names, descriptions = [r.name for r in records], [r.description for r in records]
    return LoadedAlignment(names, descriptions, [r.seq for r in records], source)


def parse_region(region, width: int) -> tuple[int, int]:
    """``(start, end)``, 0-based and end-exclusive, of ``"START-END"`` (1-based, inclusive;
    either end may be left out) or a ``(START, END)`` pair; ``None`` is every column.

    Raises:
        ArgumentError: not of that form, or outside ``1..width``.
    """
    if region is None:
        return 0, width
    if isinstance(region, str):
        m = re.fullmatch(r"\s*(\d*)\s*(?:[-:]|\.\.)\s*(\d*)\s*|\s*(\d+)\s*", region)
        if m is None:
            start = end = None
        elif m.group(3) is not None:
            start = end = int(m.group(3))
        else:
            start = int(m.group(1)) if m.group(1) else 1
            end = int(m.group(2)) if m.group(2) else width
    elif isinstance(region, Sequence) and len(region) == 2:
        start, end = region
    else:
        start = end = None
    ok = isinstance(start, int) and isinstance(end, int) and 1 <= start <= end <= width
    if not ok:
        raise ArgumentError(
            f"Invalid value for `region` argument: {region!r}; give START-END with "
            f"1 <= START <= END <= {width} (1-based columns, both included), e.g. "
            f"'1-{min(width, 100)}'"
        )
    return start - 1, end


def parse_rows(rows, names: list[str]) -> list[int]:
    """Indices of the rows named in ``rows`` (``"NAME,NAME"`` or a list of names), in the
    order given; ``None`` is every row. A repeated name in the alignment picks all its rows.

    Raises:
        ArgumentError: a name is not a row of the alignment, or nothing is named.
    """
    if rows is None:
        return list(range(len(names)))
    wanted = [s.strip() for s in rows.split(",")] if isinstance(rows, str) else list(rows)
    wanted = [w for w in wanted if w != ""]
    index: dict[str, list[int]] = {}
    for i, name in enumerate(names):
        index.setdefault(name, []).append(i)
    unknown = [w for w in wanted if w not in index]
    if unknown or not wanted:
        what = f"{unknown[0]!r} is not a row name" if unknown else "no row is named"
        raise ArgumentError(
            f"Invalid value for `rows` argument: {rows!r}; {what}; give names separated by "
            f"commas, e.g. {','.join(names[:2])!r}"
        )
    out: list[int] = []
    seen: set[int] = set()
    for w in wanted:
        for i in index[w]:
            if i not in seen:
                seen.add(i)
                out.append(i)
    return out


@dataclass(eq=False)
class View:
    """The rows, columns and tracks one picture shows.

    Attributes:
        title: the page's or picture's title.
        names, rows: the shown rows, top to bottom (tree order when a tree is shown).
        chars: ``uint8 [N, C]`` of ``rows``.
        first: the alignment column (1-based) of the first shown column.
        total: ``(rows, columns)`` of the whole alignment.
        nucleotide: DNA or RNA rather than protein.
        dendrogram: the tree's layout, or ``None``.
        profile: ``float64 [C, 27]`` (:func:`tracks.profile`) of the shown rows.
        conservation: ``float64 [C]`` in 0..1.
        consensus: one character per shown column.
        residues_before: for each shown row, its residues left of the first shown column.
    """

    title: str
    names: list[str]
    rows: list[str]
    chars: np.ndarray
    first: int
    total: tuple[int, int]
    nucleotide: bool
    dendrogram: Dendrogram | None
    profile: torch.Tensor
    conservation: np.ndarray
    consensus: str
    residues_before: list[int]


def _is_nucleotide(aln, rows: list[str]) -> bool:
    alphabet = getattr(aln, "alphabet", None)
    if alphabet is None:
        from torchmsa.alphabet import detect_seqtype

        alphabet = detect_seqtype(rows[:_DETECT_ROWS])
    return alphabet.name in ("dna", "rna")


def prepare(aln, *, rows=None, region=None, tree=False, title=None) -> View:
    """The :class:`View` of ``aln`` (anything with ``names`` and gapped ``rows``; ``tree``
    with ``newick()`` and ``alphabet`` are used when present).

    Arguments:
        rows: names to show (see :func:`parse_rows`); default all, in alignment order.
        region: columns to show (see :func:`parse_region`); default all.
        tree: ``True`` to show the guide tree (``aln.tree``, else a UPGMA tree of p-distances
            for up to 1,000 rows), or a Newick string; rows then follow the tree.
        title: default: the file name, else ``"alignment"``.

    Raises:
        EmptyInputError: the alignment has no rows.
        ArgumentError: bad ``rows``, ``region`` or ``tree``.
    """
    names, all_rows = list(aln.names), aln.rows
    if not names:
        raise EmptyInputError("the alignment has no rows; nothing to show")
    width = len(all_rows[0])
    if width == 0:
        raise EmptyInputError("the alignment has no columns; nothing to show")
    keep = parse_rows(rows, names)
    start, end = parse_region(region, width)
    dendrogram = None
    if tree is not False and tree is not None:
        if isinstance(tree, str):
            newick = tree
        elif tree is True and getattr(aln, "tree", None) is not None:
            newick = aln.tree.newick()
        elif tree is True:
            kept_rows = tracks.row_bytes([all_rows[i] for i in keep])
            newick = distance_newick(kept_rows, [names[i] for i in keep])
        else:
            raise ArgumentError(
                f"Invalid value for `tree` argument: {tree!r}; use True, False or a Newick string"
            )
        if tree is True and getattr(aln, "tree", None) is None:
            # the computed tree's leaves are the kept rows, named as in the alignment
            dendrogram = layout(newick, [names[i] for i in keep], list(range(len(keep))))
            dendrogram = Dendrogram([keep[i] for i in dendrogram.order], dendrogram.h, dendrogram.v)
        else:
            dendrogram = layout(newick, names, keep)
        keep = dendrogram.order
    whole = start == 0 and end == width
    shown = [all_rows[i] if whole else all_rows[i][start:end] for i in keep]
    chars = tracks.row_bytes(shown)
    before = [0] * len(keep)
    if start > 0:
        left = tracks.symbols(tracks.row_bytes([all_rows[i][:start] for i in keep]))
        before = (left < tracks.GAP).sum(axis=1).tolist()
    nucleotide = _is_nucleotide(aln, shown)
    prof = tracks.profile(chars)
    if title is None:
        title = getattr(aln, "source", None) or "alignment"
    return View(
        title=str(title),
        names=[names[i] for i in keep],
        rows=shown,
        chars=chars,
        first=start + 1,
        total=(len(names), width),
        nucleotide=nucleotide,
        dendrogram=dendrogram,
        profile=prof,
        conservation=tracks.conservation(prof, nucleotide),
        consensus=tracks.consensus(prof),
        residues_before=before,
    )
