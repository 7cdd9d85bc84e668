"""Alphabets: residue letters, their integer codes, validation, detection and reduced alphabets.

Codes are ``uint8``: residues are ``0 .. size-1`` in the order of :attr:`Alphabet.letters` and
the gap is :attr:`Alphabet.gap_code` (= ``size``). Lowercase letters get the code of their
uppercase form; the original text is kept elsewhere (``SequenceBatch.residues``) so that output
reproduces the input's case.

Accepted letters:

* protein: the 20 standard amino acids, ``B`` (D/N), ``Z`` (E/Q), ``J`` (I/L), ``X`` (unknown),
  ``U`` (selenocysteine), ``O`` (pyrrolysine) and ``*`` (stop);
* DNA / RNA: ``A C G T U``, ``N`` and the IUPAC ambiguity codes ``R Y S W K M B D H V``.

Gap characters ``-`` and ``.`` in unaligned input are removed (documented behaviour of
:func:`encode`); any other character raises :class:`~torchmsa.errors.InvalidCharacterError`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from torchmsa.errors import AlphabetError, InvalidCharacterError

__all__ = ["Alphabet", "PROTEIN", "DNA", "RNA", "get_alphabet", "detect_seqtype", "encode"]

INVALID = 255
GAP_CHARS = "-."


@dataclass(frozen=True)
class Alphabet:
    """A residue alphabet.

    Attributes:
        name: ``"protein"``, ``"dna"`` or ``"rna"``.
        letters: the residue letters in code order (upper case).
        reduced: for each code, its group in the reduced alphabet used for k-mer counting, or
            255 where a k-mer containing that residue is not counted.
        reduced_size: the number of reduced groups.
    """

    name: str
    letters: str
    reduced: tuple[int, ...]
    reduced_size: int
    lookup: np.ndarray = field(repr=False, compare=False)

    @property
    def size(self) -> int:
        """Number of residue codes (the gap code is this value)."""
        return len(self.letters)

    @property
    def gap_code(self) -> int:
        return len(self.letters)

    @property
    def is_nucleotide(self) -> bool:
        return self.name in ("dna", "rna")

    def __repr__(self) -> str:
        return f"Alphabet({self.name!r})"

    def __reduce__(self):
        return (get_alphabet, (self.name,))


def _lookup(letters: str) -> np.ndarray:
    table = np.full(256, INVALID, dtype=np.uint8)
    for code, ch in enumerate(letters):
        table[ord(ch)] = code
        table[ord(ch.lower())] = code
    for ch in GAP_CHARS:
        table[ord(ch)] = len(letters)
    return table


def _make(name: str, letters: str, groups: list[str], aliases: dict[str, str]) -> Alphabet:
    reduced = [INVALID] * len(letters)
    for g, members in enumerate(groups):
        for ch in members:
            reduced[letters.index(ch)] = g
    for ch, target in aliases.items():
        reduced[letters.index(ch)] = reduced[letters.index(target)]
    return Alphabet(name, letters, tuple(reduced), len(groups), _lookup(letters))


_PROTEIN_LETTERS = "ARNDCQEGHILKMFPSTWYVBZXUOJ*"
_NUC_LETTERS = "ACGTURYSWKMBDHVN"
DAYHOFF6 = ["AGPST", "C", "DENQ", "FWY", "HKR", "ILMV"]

PROTEIN = _make("protein", _PROTEIN_LETTERS, DAYHOFF6, {})
DNA = _make("dna", _NUC_LETTERS, ["A", "C", "G", "T"], {"U": "T"})
RNA = _make("rna", _NUC_LETTERS, ["A", "C", "G", "T"], {"U": "T"})

_BY_NAME = {"protein": PROTEIN, "dna": DNA, "rna": RNA}
_NUC_CORE = set("ACGTUN")
_NUC_ALL = set(_NUC_LETTERS)


def get_alphabet(name: str | Alphabet) -> Alphabet:
    """Return the alphabet called ``name`` (``protein``, ``dna`` or ``rna``)."""
    if isinstance(name, Alphabet):
        return name
    key = str(name).lower()
    if key in ("nucleotide", "nuc"):
        key = "dna"
    if key not in _BY_NAME:
        raise AlphabetError(
            f"Invalid value for `seqtype` argument: {name!r}; use 'protein', 'dna', 'rna' or 'auto'"
        )
    return _BY_NAME[key]


def detect_seqtype(seqs: list[str]) -> Alphabet:
    """Guess the alphabet of ``seqs``.

    Nucleotide when every letter is a nucleotide IUPAC code and at least 90% of the letters are
    ``A C G T U N`` (RNA when ``U`` occurs and ``T`` does not); protein otherwise. Gap
    characters are ignored; an input without letters counts as protein.
    """
    text = "".join(seqs).upper().encode("ascii", "replace")
    hist = np.bincount(np.frombuffer(text, dtype=np.uint8), minlength=256)
    letters = {chr(c): int(n) for c, n in enumerate(hist) if n and chr(c) not in GAP_CHARS}
    total = sum(letters.values())
    if total == 0 or not set(letters) <= _NUC_ALL:
        return PROTEIN
    core = sum(c for ch, c in letters.items() if ch in _NUC_CORE)
    if core < 0.9 * total:
        return PROTEIN
    return RNA if "U" in letters and "T" not in letters else DNA


def encode(seq: str, alphabet: Alphabet, name: str = "", index: int = 0) -> tuple[np.ndarray, str]:
    """Encode one sequence.

    Arguments:
        seq: the sequence text; gap characters (``-``, ``.``) are removed.
        alphabet: the alphabet to check and encode against.
        name: the sequence's name, for error messages.
        index: the sequence's 0-based index in its input, for error messages.

    Returns:
        ``(codes, residues)``: ``uint8`` codes of the residues, and the residue text with the
        gaps removed (case kept).

    Raises:
        InvalidCharacterError: naming the sequence, the 1-based position and the character.
    """
    try:
        raw = np.frombuffer(seq.encode("ascii"), dtype=np.uint8)
    except UnicodeEncodeError as exc:
        pos = exc.start
        raise InvalidCharacterError(name, index, pos + 1, seq[pos], alphabet.name) from None
    codes = alphabet.lookup[raw]
    bad = np.flatnonzero(codes == INVALID)
    if bad.size:
        pos = int(bad[0])
        raise InvalidCharacterError(name, index, pos + 1, seq[pos], alphabet.name)
    keep = codes != alphabet.gap_code
    if keep.all():
        return codes, seq
    return codes[keep], raw[keep].tobytes().decode("ascii")
