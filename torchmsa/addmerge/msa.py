"""Existing alignments as ``add`` and ``merge`` take them: an :class:`~torchmsa.Alignment`, a
path or handle of an aligned file, or rows given as ``(name, gapped row)`` pairs or a dict;
normalised to names, descriptions and gapped rows (:class:`Msa`), then encoded on a device
(:class:`EncodedMsa`) against one alphabet shared with the other inputs."""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
import torch

from torchmsa.alphabet import INVALID, Alphabet, resolve_alphabet
from torchmsa.errors import ArgumentError, EmptyInputError, FormatError, InvalidCharacterError
from torchmsa.records import Record

__all__ = ["Msa", "EncodedMsa", "as_msa", "encode_msa", "shared_alphabet"]


@dataclass(frozen=True)
class Msa:
    """An existing alignment: names, whole header lines, gapped rows of one width, and the
    sequence weights (``float64 [N]``) of the guide tree it was made with, when known."""

    names: list[str]
    descriptions: list[str]
    rows: list[str]
    weights: torch.Tensor | None = None
    alphabet: Alphabet | None = None

    def __len__(self) -> int:
        return len(self.names)

    @property
    def width(self) -> int:
        return len(self.rows[0]) if self.rows else 0


@dataclass(frozen=True)
class EncodedMsa:
    """An :class:`Msa` on a device: ``codes uint8 [N, C]`` (the gap code for gaps) and each
    row's residues as text without gaps (case kept)."""

    msa: Msa
    codes: torch.Tensor
    residues: list[str]
    alphabet: Alphabet


def as_msa(obj, what: str) -> Msa:
    """An alignment given as an :class:`~torchmsa.Alignment`, a path / handle of an aligned
    file (any format :func:`torchmsa.io.read_alignment` reads), a dict of name to gapped row,
    or a list of ``(name, row)`` pairs or :class:`~torchmsa.records.Record` items.

    Raises:
        ArgumentError: ``obj`` holds no alignment, or its rows differ in length.
        EmptyInputError: it holds no rows.
    """
    from torchmsa.alignment import Alignment

    if isinstance(obj, Alignment):
        weights = obj.weights.detach().cpu().to(torch.float64) if obj.tree is not None else None
        return _checked(Msa(obj.names, obj.descriptions, obj.rows, weights, obj.alphabet), what)
    if isinstance(obj, (str, os.PathLike)) or hasattr(obj, "read"):
        from torchmsa import io

        records = io.read_alignment(obj)
    elif isinstance(obj, dict):
        records = [Record(str(k), str(k), v) for k, v in obj.items()]
    elif isinstance(obj, (list, tuple)):
        records = []
        for i, item in enumerate(obj):
            if isinstance(item, Record):
                records.append(item)
            elif isinstance(item, tuple) and len(item) == 2:
                records.append(Record(str(item[0]), str(item[0]), item[1]))
            else:
                raise ArgumentError(
                    f"Invalid item #{i + 1} of `{what}`: {type(item).__name__}; give (name, "
                    f"gapped row) pairs, a dict, an aligned file or a torchmsa.Alignment"
                )
    else:
        raise ArgumentError(
            f"Invalid value for `{what}` argument: {type(obj).__name__}; give a "
            f"torchmsa.Alignment, the path of an aligned file, a dict of name to gapped row "
            f"or a list of (name, row) pairs"
        )
    for r in records:
        if not isinstance(r.seq, str):
            raise ArgumentError(
                f"row {r.name!r} of `{what}` is a {type(r.seq).__name__}, not a str"
            )
    rows = [r.seq.replace(".", "-") for r in records]
    return _checked(Msa([r.name for r in records], [r.description for r in records], rows), what)


def _checked(msa: Msa, what: str) -> Msa:
    if not msa.rows:
        raise EmptyInputError(f"`{what}` holds no sequences; give an alignment with rows")
    widths = {len(r) for r in msa.rows}
    if len(widths) > 1:
        short = min(range(len(msa)), key=lambda i: len(msa.rows[i]))
        raise FormatError(
            f"`{what}`: rows differ in length ({min(widths)} to {max(widths)} columns, e.g. "
            f"{msa.names[short]!r}); an alignment needs rows of one width (align the "
            f"sequences first with torchmsa.align)"
        )
    return msa


def shared_alphabet(seqtype, msas: list[Msa], extra: list[str] = ()) -> Alphabet:
    """One alphabet for every input: ``seqtype``'s, else the alphabet of a torchmsa
    :class:`~torchmsa.Alignment` among them, else the one detected from all the rows."""
    if isinstance(seqtype, str) and seqtype.strip().lower() == "auto":
        known = [m.alphabet for m in msas if m.alphabet is not None]
        if known:
            return known[0]
    return resolve_alphabet(seqtype, [r for m in msas for r in m.rows] + list(extra))


def encode_msa(msa: Msa, alphabet: Alphabet, device: torch.device) -> EncodedMsa:
    """Encodes every row (``-`` and ``.`` gaps) as ``uint8 [N, C]`` on ``device``.

    Raises:
        InvalidCharacterError: a row holds a character the alphabet does not allow (its
            position counted in the row as given).
    """
    width = msa.width
    raw = np.frombuffer("".join(msa.rows).encode("ascii", "replace"), np.uint8)
    codes = alphabet.lookup[raw].reshape(len(msa), width)
    bad = np.argwhere(codes == INVALID)
    if len(bad):
        i, j = (int(x) for x in bad[0])
        raise InvalidCharacterError(msa.names[i], i, j + 1, msa.rows[i][j], alphabet.name)
    residues = [r.replace("-", "") for r in msa.rows]
    return EncodedMsa(msa, torch.from_numpy(codes.copy()).to(device), residues, alphabet)
