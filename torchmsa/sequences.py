"""SequenceBatch: many sequences as one padded integer tensor."""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import NamedTuple

import numpy as np
import torch

from torchmsa.alphabet import Alphabet, detect_seqtype, encode, get_alphabet
from torchmsa.errors import ArgumentError, EmptyInputError

__all__ = ["Record", "SequenceBatch", "as_records"]


class Record(NamedTuple):
    """One input sequence: its id, its whole header line, and its text as given."""

    name: str
    description: str
    seq: str


def as_records(seqs) -> list[Record]:
    """Normalise every accepted input form to a list of :class:`Record`.

    Accepted: a path (``str`` or ``os.PathLike``; ``"-"`` is standard input), a list of
    strings (named ``seq1``, ``seq2``, ...), a ``dict`` of name to sequence, a list of
    ``Bio.SeqRecord.SeqRecord``, a list of :class:`Record` or of ``(name, seq)`` pairs.
    """
    from torchmsa import io

    if isinstance(seqs, (str, os.PathLike)):
        return io.read_sequences(seqs)
    if isinstance(seqs, dict):
        return [Record(str(k), str(k), str(v)) for k, v in seqs.items()]
    if isinstance(seqs, SequenceBatch):
        return [Record(n, d, r) for n, d, r in zip(seqs.names, seqs.descriptions, seqs.residues)]
    if not isinstance(seqs, Iterable):
        raise ArgumentError(
            f"Invalid value for `seqs` argument: {type(seqs).__name__}; pass a file path, a list "
            f"of strings, a dict of name to sequence or a list of Bio.SeqRecord"
        )
    out = []
    for i, item in enumerate(seqs):
        if isinstance(item, Record):
            out.append(item)
        elif isinstance(item, str):
            out.append(Record(f"seq{i + 1}", f"seq{i + 1}", item))
        elif hasattr(item, "seq") and hasattr(item, "id"):
            desc = getattr(item, "description", "") or item.id
            out.append(Record(str(item.id), str(desc), str(item.seq)))
        elif isinstance(item, tuple) and len(item) == 2:
            out.append(Record(str(item[0]), str(item[0]), str(item[1])))
        else:
            raise ArgumentError(
                f"Invalid item #{i + 1} in `seqs`: {type(item).__name__}; items must be strings, "
                f"Bio.SeqRecord objects or (name, sequence) pairs"
            )
    return out


@dataclass(frozen=True)
class SequenceBatch:
    """Sequences as a padded code tensor, on any torch device.

    Attributes:
        names: sequence ids, input order (duplicates allowed).
        descriptions: whole header lines (the id and any description after it).
        residues: residue text with gaps removed and the input's case kept.
        codes: ``uint8 [N, Lmax]`` residue codes; positions past a sequence's length hold
            ``alphabet.gap_code``.
        lengths: ``int32 [N]`` residue counts.
        alphabet: the alphabet of :attr:`codes`.
    """

    names: list[str]
    descriptions: list[str]
    residues: list[str]
    codes: torch.Tensor
    lengths: torch.Tensor
    alphabet: Alphabet

    def __len__(self) -> int:
        return len(self.names)

    def __repr__(self) -> str:
        return (
            f"SequenceBatch(n={len(self)}, alphabet={self.alphabet.name!r}, "
            f"max_length={self.codes.shape[1]}, device={str(self.codes.device)!r})"
        )

    @property
    def device(self) -> torch.device:
        return self.codes.device

    def to(self, device) -> SequenceBatch:
        """The same batch with its tensors on ``device``."""
        return replace(self, codes=self.codes.to(device), lengths=self.lengths.to(device))

    @classmethod
    def from_input(cls, seqs, seqtype: str | Alphabet = "auto", device="cpu") -> SequenceBatch:
        """Encode sequences given in any form that :func:`as_records` accepts.

        Arguments:
            seqs: the sequences.
            seqtype: ``"auto"`` (detect), ``"protein"``, ``"dna"`` or ``"rna"``.
            device: where to put the tensors.

        Raises:
            InvalidCharacterError: a sequence holds a character its alphabet does not allow.
            EmptyInputError: there are no sequences.
        """
        records = as_records(seqs)
        if not records:
            raise EmptyInputError("no sequences were given; the input is empty")
        texts = [r.seq for r in records]
        alphabet = detect_seqtype(texts) if seqtype == "auto" else get_alphabet(seqtype)
        encoded = [encode(r.seq, alphabet, r.name, i) for i, r in enumerate(records)]
        lengths = np.array([len(c) for c, _ in encoded], dtype=np.int32)
        codes = np.full((len(records), max(1, int(lengths.max()))), alphabet.gap_code, np.uint8)
        for i, (c, _) in enumerate(encoded):
            codes[i, : len(c)] = c
        return cls(
            names=[r.name for r in records],
            descriptions=[r.description for r in records],
            residues=[res for _, res in encoded],
            codes=torch.from_numpy(codes).to(device),
            lengths=torch.from_numpy(lengths).to(device),
            alphabet=alphabet,
        )
