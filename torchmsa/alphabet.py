"""Alphabets: residue letters, their integer codes, validation, detection and reduced alphabets.

Codes are ``uint8``: residues are ``0 .. size-1`` in the order of :attr:`Alphabet.letters` and
the gap is :attr:`Alphabet.gap_code` (= ``size``). Lowercase letters get the code of their
uppercase form; the original text is kept elsewhere (``SequenceBatch.residues``) so that output
reproduces the input's case.

Accepted letters:

* protein: the 20 standard amino acids, ``B`` (D/N), ``Z`` (E/Q), ``J`` (I/L), ``X`` (unknown),
  ``U`` (selenocysteine), ``O`` (pyrrolysine) and ``*`` (stop);
* DNA / RNA: ``A C G T U``, ``N`` and the IUPAC ambiguity codes ``R Y S W K M B D H V``
  (the two share one letter set, so ``T`` in RNA and ``U`` in DNA are accepted; for k-mers
  ``U`` counts as ``T``).

Gap characters ``-`` and ``.`` in unaligned input are removed (documented behaviour of
:func:`encode`); any other character raises :class:`~torchmsa.errors.InvalidCharacterError`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from torchmsa.constants import NOT_COUNTED
from torchmsa.errors import AlphabetError, ArgumentError, InvalidCharacterError

__all__ = [
    "Alphabet",
    "PROTEIN",
    "DNA",
    "RNA",
    "get_alphabet",
    "resolve_alphabet",
    "detect_seqtype",
    "detect_texts",
    "require_strings",
    "encode",
    "encode_batch",
    "encode_texts",
    "join_texts",
    "EncodedTexts",
]

INVALID = 255  # the lookup's code of a character the alphabet does not allow
GAP_CHARS = "-."


@dataclass(frozen=True)
class Alphabet:
    """A residue alphabet.

    Attributes:
        name: ``"protein"``, ``"dna"`` or ``"rna"``.
        letters: the residue letters in code order (upper case).
        reduced: for each code, its group in the reduced alphabet used for k-mer counting, or
            ``NOT_COUNTED`` (255) where a k-mer containing that residue is not counted.
        reduced_size: the number of reduced groups.
        lookup: ``uint8 [256]``, read-only: the code of each ASCII byte (either case), the gap
            code for ``-`` and ``.``, 255 for anything the alphabet does not allow.
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
        """The code of a gap (and of padding): one past the last residue code."""
        return len(self.letters)

    @property
    def is_nucleotide(self) -> bool:
        """True for DNA and RNA."""
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
    table.flags.writeable = False
    return table


def _make(name: str, letters: str, groups: list[str], aliases: dict[str, str]) -> Alphabet:
    reduced = [NOT_COUNTED] * len(letters)
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
_ALIASES = {"prot": "protein", "aa": "protein", "nucleotide": "dna", "nuc": "dna"}
_NUC_CORE = set("ACGTUN")
# X is not a nucleotide code, but DNA with a few X (masked bases) is still DNA: detecting it
# as such makes encode() point at the X instead of silently aligning the DNA as protein.
_NUC_DETECT = set(_NUC_LETTERS) | {"X"}


def _detect_classes() -> bytes:
    """Per ASCII byte, as :func:`detect_seqtype` counts it (either case): 0 a gap, 1 a core
    nucleotide letter, 2 another nucleotide code, 3 anything else."""
    out = bytearray(b"\x03" * 256)
    for b in range(128):
        ch = chr(b).upper()
        out[b] = 0 if ch in GAP_CHARS else 1 if ch in _NUC_CORE else 2 if ch in _NUC_DETECT else 3
    return bytes(out)


_DETECT_CLASSES = _detect_classes()
_DETECT_HEAD = 1 << 16  # characters searched first for a letter that makes the input protein


def get_alphabet(name: str | Alphabet) -> Alphabet:
    """Return the alphabet called ``name``.

    Arguments:
        name: ``"protein"``, ``"dna"`` or ``"rna"`` (any case; ``"aa"`` and ``"nucleotide"``
            are accepted too), or an :class:`Alphabet`, returned as it is.

    Returns:
        One of :data:`PROTEIN`, :data:`DNA`, :data:`RNA`.

    Raises:
        AlphabetError: for any other name (``"auto"`` included: see :func:`resolve_alphabet`).
    """
    if isinstance(name, Alphabet):
        return name
    key = str(name).strip().lower()
    key = _ALIASES.get(key, key)
    if key not in _BY_NAME:
        raise AlphabetError(
            f"Invalid value for `seqtype` argument: {name!r}; use 'protein', 'dna', 'rna' or 'auto'"
        )
    return _BY_NAME[key]


def resolve_alphabet(seqtype: str | Alphabet, seqs: list[str]) -> Alphabet:
    """The alphabet asked for by ``seqtype``, detected from ``seqs`` when it is ``"auto"``.

    Arguments:
        seqtype: ``"auto"`` (any case), an alphabet name or an :class:`Alphabet`.
        seqs: the sequence texts, used only for detection.

    Returns:
        The alphabet.
    """
    if isinstance(seqtype, str) and seqtype.strip().lower() == "auto":
        return detect_seqtype(seqs)
    return get_alphabet(seqtype)


def detect_seqtype(seqs: list[str]) -> Alphabet:
    """Guess the alphabet of ``seqs``.

    Nucleotide when every letter is a nucleotide IUPAC code (or ``X``) and at least 90% of the
    letters are ``A C G T U N`` (RNA when ``U`` occurs and ``T`` does not); protein otherwise.
    Case and gap characters are ignored; an input without letters counts as protein. A
    protein made only of nucleotide letters is detected as DNA: pass ``seqtype="protein"``.

    Arguments:
        seqs: sequence texts.

    Returns:
        :data:`PROTEIN`, :data:`DNA` or :data:`RNA`.
    """
    try:
        joined = "".join(seqs)
    except TypeError:
        require_strings(seqs, "seqs")
        raise
    if joined.isascii():  # the common case, counted by class without a histogram
        return _detect_ascii(joined)
    text = joined.upper().encode("ascii", "replace")
    hist = np.bincount(np.frombuffer(text, dtype=np.uint8), minlength=256)
    letters = {chr(c): int(hist[c]) for c in np.flatnonzero(hist) if chr(c) not in GAP_CHARS}
    total = sum(letters.values())
    if total == 0 or not set(letters) <= _NUC_DETECT:
        return PROTEIN
    core = sum(c for ch, c in letters.items() if ch in _NUC_CORE)
    if core < 0.9 * total:
        return PROTEIN
    return RNA if "U" in letters and "T" not in letters else DNA


def detect_texts(*texts: str) -> Alphabet:
    """:func:`detect_seqtype` of ``texts`` joined (each the texts of many sequences, joined),
    without joining them where the first one's first characters already hold a letter that
    makes the input protein (the common case of a batch of pairs)."""
    head = texts[0][:_DETECT_HEAD]
    if head.isascii() and b"\x03" in head.encode("ascii").translate(_DETECT_CLASSES):
        return PROTEIN
    return detect_seqtype(texts)


def _detect_ascii(text: str) -> Alphabet:
    """:func:`detect_seqtype` of ASCII text: each byte mapped to its class (``bytes.translate``,
    :data:`_DETECT_CLASSES`) and the classes counted."""
    # a letter that is no nucleotide code decides at once: looked for in the first characters
    # alone, it ends most protein inputs without a pass over all of their text
    if b"\x03" in text[:_DETECT_HEAD].encode("ascii").translate(_DETECT_CLASSES):
        return PROTEIN
    classes = text.encode("ascii").translate(_DETECT_CLASSES)
    if b"\x03" in classes:
        return PROTEIN
    counts = np.frombuffer(classes, dtype=np.uint8)
    core, total = np.count_nonzero(counts == 1), np.count_nonzero(counts)
    if total == 0 or core < 0.9 * total:
        return PROTEIN
    rna = ("U" in text or "u" in text) and not ("T" in text or "t" in text)
    return RNA if rna else DNA


def require_strings(seqs, label: str) -> None:
    """Raise :class:`~torchmsa.errors.ArgumentError` naming the first item of ``seqs`` that is
    not a ``str`` (as ``label[k]``, with its 1-based number), as :func:`encode` names one."""
    for k, seq in enumerate(seqs):
        if not isinstance(seq, str):
            raise _not_a_string(seq, f"{label}[{k}]", k)


def _not_a_string(seq, name: str, index: int) -> ArgumentError:
    return ArgumentError(
        f"sequence {name!r} (#{index + 1}) is a {type(seq).__name__}, not a string; pass its "
        f"text (str(seq) for a Bio.Seq)"
    )


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
        InvalidCharacterError: naming the sequence, the 1-based position (counted in ``seq``
            as given, gaps included) and the first character the alphabet does not allow.
        ArgumentError: ``seq`` is not a ``str``.
    """
    if not isinstance(seq, str):
        raise _not_a_string(seq, name, index)
    # each non-ASCII character becomes one '?' (invalid), so byte i is still character i;
    # bytes.translate looks the codes up at a byte a residue (a numpy index array takes 8)
    raw = seq.encode("ascii", "replace")
    coded = raw.translate(alphabet.lookup.tobytes())
    if INVALID in coded:
        pos = coded.index(INVALID)
        raise InvalidCharacterError(name, index, pos + 1, seq[pos], alphabet.name)
    codes = np.frombuffer(bytearray(coded), dtype=np.uint8)  # a writable copy
    if alphabet.gap_code not in coded:
        return codes, seq
    keep = codes != alphabet.gap_code
    return codes[keep], np.frombuffer(raw, dtype=np.uint8)[keep].tobytes().decode("ascii")


class EncodedTexts(NamedTuple):
    """What :func:`encode_texts` returns.

    Attributes:
        codes: ``uint8 [N, width]`` residue codes padded with the gap code.
        lengths: ``int32 [N]`` residue counts.
        residues: each residue text with gaps removed (case kept).
        raw: the residue texts as ASCII bytes (case kept), text ``i`` from byte
            ``i * width``, padded with ``-`` to ``width``.
        width: the longest residue count.
    """

    codes: np.ndarray
    lengths: np.ndarray
    residues: list[str]
    raw: bytes
    width: int


def encode_batch(
    seqs: list[str], alphabet: Alphabet, names: list[str] | None = None
) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Encode many sequences at once into a padded matrix (what :func:`encode` does for one).

    The texts, joined (and padded with ``-`` to one length where they differ), are encoded in
    one ``bytes.translate`` through :attr:`Alphabet.lookup`, which also finds any invalid
    character; texts holding gap characters are encoded again without them.

    Arguments:
        seqs: the sequence texts; gap characters are removed.
        alphabet: the alphabet to check and encode against.
        names: the sequences' names, for error messages (default ``seq1``, ``seq2``, ...).

    Returns:
        ``(codes, lengths, residues)``: ``uint8 [N, Lmax]`` codes padded with the gap code,
        ``int32 [N]`` residue counts, and each residue text with gaps removed (case kept).

    Raises:
        InvalidCharacterError: for the first sequence holding an invalid character, at its first
            one, as :func:`encode` would.
        ArgumentError: an item of ``seqs`` is not a ``str``.
    """
    return encode_texts(seqs, alphabet, names, keep_raw=False)[:3]


def encode_texts(
    seqs: list[str],
    alphabet: Alphabet,
    names: list[str] | None = None,
    text: str | None = None,
    *,
    keep_raw: bool = True,
) -> EncodedTexts:
    """:func:`encode_batch`, which also returns the residue texts as one block of ASCII bytes
    (what rows of an alignment are cut from; ``b""`` without ``keep_raw``: the block then
    goes as soon as it is encoded, which spares the allocator a second one, about 20% of the
    call at 10^4 texts of 300 letters); ``text``: ``"".join(seqs)`` where the caller has it
    already."""
    text = join_texts(seqs, names) if text is None else text
    gapped = any(ch in text for ch in GAP_CHARS)
    lengths = np.fromiter(map(len, seqs), np.int32, len(seqs))
    width = int(lengths.max(initial=0))
    if len(text) < len(seqs) * width:  # each text padded with '-' (a gap, valid) to the width
        text = "".join([s.ljust(width, "-") for s in seqs])
    # the rows of codes in one lookup, bytes.translate (numpy's index arrays cost 8 bytes a
    # residue); one '?' (invalid) per non-ASCII character keeps character offsets
    raw = text.encode("ascii", "replace")
    coded = raw.translate(alphabet.lookup.tobytes())
    if not keep_raw:
        raw = b""
    if INVALID in coded:  # the first bad character in row order: that of the first bad text
        i, pos = divmod(coded.index(INVALID), width)
        raise InvalidCharacterError(_name(names, i), i, pos + 1, seqs[i][pos], alphabet.name)
    if gapped:  # checked as given (error positions count the gaps), encoded without them
        residues = [s.replace("-", "").replace(".", "") for s in seqs]
        return encode_texts(residues, alphabet, names, keep_raw=keep_raw)
    codes = np.frombuffer(bytearray(coded), dtype=np.uint8)  # a writable copy
    return EncodedTexts(codes.reshape(len(seqs), width), lengths, list(seqs), raw, width)


def join_texts(seqs: list[str], names: list[str] | None = None) -> str:
    """The texts of ``seqs`` joined (what :func:`encode_texts` takes as ``text``); an item
    that is not a ``str`` is named as :func:`encode` names it."""
    try:
        return "".join(seqs)
    except TypeError:
        for i, seq in enumerate(seqs):
            if not isinstance(seq, str):
                raise _not_a_string(seq, _name(names, i), i) from None
        raise


def _name(names: list[str] | None, index: int) -> str:
    """The name of sequence ``index`` for an error message."""
    return names[index] if names else f"seq{index + 1}"
