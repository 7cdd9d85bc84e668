"""SequenceBatch: many sequences as one padded integer tensor."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from dataclasses import dataclass, replace

import torch

from torchmsa import io
from torchmsa.alphabet import Alphabet, encode_batch, resolve_alphabet
from torchmsa.errors import ArgumentError, EmptyInputError
from torchmsa.records import Record, header

__all__ = ["Record", "SequenceBatch", "as_records", "segments"]


def _bio_seqs() -> tuple[type, ...]:
    """``Bio.Seq.Seq`` and ``MutableSeq``, or none while Biopython's module is not loaded (no
    such object can exist then): a plain ``align`` does not pay for importing it."""
    module = sys.modules.get("Bio.Seq")
    return (module.Seq, module.MutableSeq) if module is not None else ()


def _text(value, where: str) -> str:
    """A sequence's text: ``str``, ``Bio.Seq.Seq`` / ``MutableSeq``; anything else is refused
    (``str(None)`` would otherwise become the protein ``"NONE"``)."""
    if isinstance(value, str):
        return value
    if isinstance(value, _bio_seqs()):
        try:
            return str(value)
        except ValueError:
            raise ArgumentError(
                f"{where} is a Bio.Seq of undefined content; give its letters"
            ) from None
    raise ArgumentError(
        f"{where} is a {type(value).__name__}, not a sequence; give a str or a Bio.Seq"
    )


def _from_seqrecord(item) -> Record:
    name = str(item.id)
    return Record(name, header(name, str(item.description or "")), _text(item.seq, f"{name!r}"))


def as_records(seqs, *, limits: io.InputLimits | None = None) -> list[Record]:
    """Normalise every accepted input form to a list of :class:`Record`.

    Arguments:
        seqs: a path (``str`` or ``os.PathLike``; ``"-"`` is standard input) or an open file;
            a list (or any iterable) of strings (named ``seq1``, ``seq2``, ...), of
            ``Bio.SeqRecord.SeqRecord``, of :class:`Record` or of ``(name, seq)`` pairs; a
            ``dict`` of name to sequence; a ``Bio.Align.MultipleSeqAlignment`` or
            ``Bio.Align.Alignment`` (its sequences); a single ``SeqRecord``; a
            :class:`SequenceBatch`. Sequences may be ``str`` or ``Bio.Seq.Seq``.
        limits: for a path or file, how much to read (:class:`torchmsa.io.InputLimits`).

    Returns:
        The records, input order. A ``SeqRecord``'s description becomes ``"id description"``
        when it does not start with the id, as Biopython writes FASTA headers.

    Raises:
        ArgumentError: an input or item of a type that holds no sequence.
    """
    if isinstance(seqs, (str, os.PathLike)) or hasattr(seqs, "read"):
        return io.read_sequences(seqs, limits=limits)
    if isinstance(seqs, SequenceBatch):
        return [Record(n, d, r) for n, d, r in zip(seqs.names, seqs.descriptions, seqs.residues)]
    if isinstance(seqs, dict):
        return [Record(str(k), str(k), _text(v, f"sequence {k!r}")) for k, v in seqs.items()]
    if hasattr(seqs, "seq") and hasattr(seqs, "id"):
        return [_from_seqrecord(seqs)]
    if hasattr(seqs, "sequences") and hasattr(seqs, "coordinates"):
        seqs = seqs.sequences  # Bio.Align.Alignment: ungapped sequences, names kept
    if isinstance(seqs, (bytes, bytearray)) or not isinstance(seqs, Iterable):
        raise ArgumentError(
            f"Invalid value for `seqs` argument: {type(seqs).__name__}; pass a file path, a list "
            f"of strings, a dict of name to sequence or a list of Bio.SeqRecord"
        )
    bio_seqs = _bio_seqs()
    if isinstance(seqs, bio_seqs):
        raise ArgumentError("`seqs` is a single Bio.Seq; pass a list of sequences, e.g. [str(seq)]")
    texts = (str, *bio_seqs)
    out = []
    for i, item in enumerate(seqs):
        if isinstance(item, Record):
            if not isinstance(item.seq, str):
                item = item._replace(seq=_text(item.seq, f"sequence {item.name!r}"))
            out.append(item)
        elif isinstance(item, texts):
            name = f"seq{i + 1}"
            out.append(Record(name, name, _text(item, f"item #{i + 1} of `seqs`")))
        elif hasattr(item, "seq") and hasattr(item, "id"):
            out.append(_from_seqrecord(item))
        elif isinstance(item, tuple) and len(item) == 2:
            name = str(item[0])
            out.append(Record(name, name, _text(item[1], f"sequence {name!r}")))
        else:
            raise ArgumentError(
                f"Invalid item #{i + 1} in `seqs`: {type(item).__name__}; items must be strings, "
                f"Bio.SeqRecord objects or (name, sequence) pairs"
            )
    return out


@dataclass(frozen=True, eq=False)
class SequenceBatch:
    """Sequences as a padded code tensor, on any torch device.

    Attributes:
        names: sequence ids, input order (duplicates allowed).
        descriptions: whole header lines (the id and any description after it).
        residues: residue text with gaps removed and the input's case kept.
        codes: ``uint8 [N, Lmax]`` residue codes (``Lmax`` may be 0); positions past a
            sequence's length hold ``alphabet.gap_code``.
        lengths: ``int32 [N]`` residue counts.
        alphabet: the alphabet of :attr:`codes`.
    """

    names: list[str]
    descriptions: list[str]
    residues: list[str]
    codes: torch.Tensor
    lengths: torch.Tensor
    alphabet: Alphabet

    def __post_init__(self):
        n = len(self.names)
        if len(self.descriptions) != n or len(self.residues) != n:
            raise ArgumentError(
                f"SequenceBatch needs as many descriptions ({len(self.descriptions)}) and "
                f"residue strings ({len(self.residues)}) as names ({n})"
            )
        if self.codes.dtype != torch.uint8 or self.codes.dim() != 2 or len(self.codes) != n:
            raise ArgumentError(
                f"SequenceBatch.codes must be uint8 [N={n}, Lmax]; got {self.codes.dtype} "
                f"{list(self.codes.shape)} (build batches with SequenceBatch.from_input)"
            )
        if self.lengths.dtype != torch.int32 or list(self.lengths.shape) != [n]:
            raise ArgumentError(
                f"SequenceBatch.lengths must be int32 [N={n}]; got {self.lengths.dtype} "
                f"{list(self.lengths.shape)} (build batches with SequenceBatch.from_input)"
            )

    def __len__(self) -> int:
        return len(self.names)

    def __repr__(self) -> str:
        return (
            f"SequenceBatch(n={len(self)}, alphabet={self.alphabet.name!r}, "
            f"max_length={self.codes.shape[1]}, device={str(self.codes.device)!r})"
        )

    @property
    def device(self) -> torch.device:
        """The device of :attr:`codes` and :attr:`lengths`."""
        return self.codes.device

    def to(self, device) -> SequenceBatch:
        """The same batch with its tensors on ``device``.

        Arguments:
            device: ``"auto"``, ``"cpu"``, ``"cuda"``, ``"cuda:N"`` or a ``torch.device``.

        Returns:
            A new batch (this one when it is on ``device`` already).

        Raises:
            DeviceError: a CUDA device that does not exist or cannot be used.
        """
        from torchmsa.ops.backend import resolve_device

        dev = resolve_device(device)
        if self.codes.device == dev and self.lengths.device == dev:
            return self
        return replace(self, codes=self.codes.to(dev), lengths=self.lengths.to(dev))

    @classmethod
    def from_input(
        cls,
        seqs,
        seqtype: str | Alphabet = "auto",
        device="cpu",
        *,
        limits: io.InputLimits | None = None,
    ) -> SequenceBatch:
        """Encode sequences given in any form that :func:`as_records` accepts.

        Arguments:
            seqs: the sequences. Gap characters (``-`` ``.``) are removed; case is kept in
                :attr:`residues`. Empty sequences are allowed.
            seqtype: ``"auto"`` (detect), ``"protein"``, ``"dna"``, ``"rna"`` or an
                :class:`~torchmsa.alphabet.Alphabet`. A :class:`SequenceBatch` keeps its
                alphabet under ``"auto"``.
            device: where to put the tensors (as in :meth:`to`).
            limits: for a path or file, how much to read (:class:`torchmsa.io.InputLimits`).

        Returns:
            The batch.

        Raises:
            InvalidCharacterError: a sequence holds a character its alphabet does not allow.
            EmptyInputError: there are no sequences.
            AlphabetError: ``seqtype`` is not an alphabet name.

        >>> b = SequenceBatch.from_input({"a": "ACgt", "b": "A-C"})
        >>> b.alphabet.name, b.lengths.tolist(), b.residues
        ('dna', [4, 2], ['ACgt', 'AC'])
        """
        if isinstance(seqs, SequenceBatch):
            same = isinstance(seqtype, str) and seqtype.strip().lower() == "auto"
            if same or resolve_alphabet(seqtype, []) == seqs.alphabet:
                return seqs.to(device)
        records = as_records(seqs, limits=limits)
        if not records:
            raise EmptyInputError("no sequences were given; the input is empty")
        alphabet = resolve_alphabet(seqtype, [r.seq for r in records])
        codes, lengths, residues = encode_batch(
            [r.seq for r in records], alphabet, [r.name for r in records]
        )
        batch = cls(
            names=[r.name for r in records],
            descriptions=[r.description for r in records],
            residues=residues,
            codes=torch.from_numpy(codes),
            lengths=torch.from_numpy(lengths),
            alphabet=alphabet,
        )
        return batch.to(device)


def segments(
    codes: torch.Tensor, rows: torch.Tensor, start: torch.Tensor, count: torch.Tensor, gap: int
) -> torch.Tensor:
    """``uint8 [P, max(count)]``: residues ``start[p] .. start[p] + count[p]`` of row ``rows[p]``
    of ``codes`` (int64 index tensors on its device), padded with ``gap``."""
    pos = torch.arange(int(count.max()) if count.numel() else 0, device=codes.device)
    at = (start[:, None] + pos).clamp(max=max(0, codes.shape[1] - 1))
    return torch.where(pos < count[:, None], codes[rows].gather(1, at), gap)
