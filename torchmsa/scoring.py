"""Substitution matrices and gap costs, as integers over alphabet codes.

Matrices come from :mod:`Bio.Align.substitution_matrices`. They are laid out over an alphabet's
codes (``matrix[code_a, code_b]``), scaled by a power of ten until every entry is an integer
(``Scoring.scale``; 1 for BLOSUM, PAM and NUC.4.4). Letters that a matrix lacks take the row of a
stand-in: ``U`` (selenocysteine) scores as ``C``, ``O`` (pyrrolysine) as ``K``, ``J`` as ``L``,
RNA ``U`` as ``T``; then the unknown letter (``X`` / ``N``); then the matrix's lowest score.

Gap model: affine. A gap of length k scores ``-(gap_open + (k - 1) * gap_extend)``, the
convention of Biopython's ``PairwiseAligner`` with ``open_gap_score=-gap_open`` and
``extend_gap_score=-gap_extend``. Both costs are non-negative and ``gap_extend <= gap_open``.

Defaults for pairwise alignment:

========== ========== ======== ==========
alphabet   matrix     gap_open gap_extend
========== ========== ======== ==========
protein    BLOSUM62   10       1
DNA / RNA  NUC.4.4    10       1
========== ========== ======== ==========
"""

from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass, field
from functools import lru_cache
from numbers import Real

import numpy as np

from torchmsa.alphabet import Alphabet, get_alphabet
from torchmsa.errors import ScoringError

__all__ = ["Scoring", "get_scoring", "load_matrix", "gap_cost", "DEFAULTS", "MATRICES"]

MATRICES = ("BLOSUM45", "BLOSUM62", "BLOSUM80", "PAM250", "NUC.4.4")
DEFAULTS = {
    "protein": ("BLOSUM62", 10, 1),
    "dna": ("NUC.4.4", 10, 1),
    "rna": ("NUC.4.4", 10, 1),
}
_STAND_IN = {"protein": {"U": "C", "O": "K", "J": "L"}, "dna": {"U": "T"}, "rna": {"U": "T"}}
_UNKNOWN = {"protein": "X", "dna": "N", "rna": "N"}


@dataclass(frozen=True)
class Scoring:
    """An integer scoring scheme over an alphabet's codes.

    Attributes:
        alphabet: the alphabet whose codes index :attr:`matrix`.
        matrix_name: the matrix's name (``"custom"`` for a user-supplied array).
        matrix: ``int32 [A, A]`` substitution scores, ``A = alphabet.size``.
        gap_open: cost of a gap's first position, in matrix units.
        gap_extend: cost of each further position, in matrix units.
        scale: the factor applied to the source matrix (and to the gap costs) to make them
            integers.
    """

    alphabet: Alphabet
    matrix_name: str
    matrix: np.ndarray = field(repr=False, compare=False)
    gap_open: int
    gap_extend: int
    scale: int = 1

    def __reduce__(self):
        return (
            _rebuild,
            (
                self.alphabet.name,
                self.matrix_name,
                self.matrix,
                self.gap_open,
                self.gap_extend,
                self.scale,
            ),
        )


def _rebuild(alphabet, name, matrix, gap_open, gap_extend, scale):
    return Scoring(get_alphabet(alphabet), name, matrix, gap_open, gap_extend, scale)


def _integer_scale(values: np.ndarray, what: str) -> int:
    for scale in (1, 10, 100, 1000):
        scaled = values * scale
        if np.all(np.abs(scaled - np.round(scaled)) < 1e-9):
            return scale
    raise ScoringError(f"{what} has entries with more than 3 decimals; round it first")


class _Table(np.ndarray):
    """A square matrix of Biopython's data folder with its letters (``alphabet``), as
    ``Bio.Align.substitution_matrices.Array`` holds them."""

    alphabet: str | tuple[str, ...] = ""


def _data_folder() -> str:
    """Biopython's folder of substitution matrices, found without importing ``Bio.Align``."""
    spec = importlib.util.find_spec("Bio")
    if spec is None or spec.origin is None:
        raise ScoringError("Biopython is not installed: it provides the substitution matrices")
    return os.path.join(os.path.dirname(spec.origin), "Align", "substitution_matrices", "data")


def _read_table(path: str):
    """The square matrix in ``path``, parsed as ``substitution_matrices.read`` parses it (the
    same letters and values), without importing ``Bio.Align`` and the sequence modules it
    pulls in (50-90 ms of every ``align`` process on 2 cores, issue #36); other layouts go to
    Biopython."""
    with open(path) as fh:
        rows = [line.split() for line in fh if not line.startswith("#")]
    rows = [r for r in rows if r]
    letters = rows[0] if rows else []
    square = len(rows) == len(letters) + 1 and all(
        len(r) == len(letters) + 1 and r[0] == key for r, key in zip(rows[1:], letters)
    )
    if not square or len(letters) < 2:
        from Bio.Align import substitution_matrices

        return substitution_matrices.read(path)
    table = np.array([[float(w) for w in r[1:]] for r in rows[1:]]).view(_Table)
    multi = any(len(key) > 1 for key in letters)
    table.alphabet = tuple(letters) if multi else "".join(letters)
    return table


def _source(matrix, what: str) -> tuple[str, np.ndarray]:
    if isinstance(matrix, str):
        folder = _data_folder()
        names = {n.upper(): n for n in sorted(os.listdir(folder)) if n != "README.txt"}
        if matrix.upper() not in names:
            raise ScoringError(
                f"Invalid value for `matrix` argument: {matrix!r}; use one of "
                f"{', '.join(MATRICES)} or another name from Bio.Align.substitution_matrices"
            )
        name = names[matrix.upper()]
        return name, _read_table(os.path.join(folder, name))
    if hasattr(matrix, "alphabet") and getattr(matrix, "ndim", 0) == 2:
        return "custom", matrix
    raise ScoringError(
        f"Invalid value for `{what}` argument: {type(matrix).__name__}; pass a matrix name or a "
        f"Bio.Align.substitution_matrices.Array"
    )


@lru_cache(maxsize=64)
def _matrix_by_name(name: str, alphabet_name: str) -> tuple[str, np.ndarray, int]:
    return _layout(*_source(name, "matrix"), get_alphabet(alphabet_name))


def _layout(name: str, src, alphabet: Alphabet) -> tuple[str, np.ndarray, int]:
    src_letters = (
        "".join(src.alphabet).upper() if not isinstance(src.alphabet, str) else src.alphabet
    )
    src_letters = src_letters.upper()
    values = np.asarray(src, dtype=np.float64)
    scale = _integer_scale(values, f"matrix {name!r}")
    values = np.round(values * scale).astype(np.int64)
    stand_in = _STAND_IN[alphabet.name]
    unknown = _UNKNOWN[alphabet.name]
    rows = []
    for ch in alphabet.letters:
        for cand in (ch, stand_in.get(ch), unknown):
            if cand is not None and cand in src_letters:
                rows.append(src_letters.index(cand))
                break
        else:
            rows.append(-1)
    if sum(r >= 0 for r in rows) < 4:
        raise ScoringError(
            f"matrix {name!r} (letters {src_letters!r}) does not fit the {alphabet.name} "
            f"alphabet; choose a {'nucleotide' if alphabet.is_nucleotide else 'protein'} matrix"
        )
    lowest = int(values.min())
    out = np.full((alphabet.size, alphabet.size), lowest, dtype=np.int32)
    for i, ri in enumerate(rows):
        for j, rj in enumerate(rows):
            if ri >= 0 and rj >= 0:
                out[i, j] = values[ri, rj]
    out.setflags(write=False)
    return name, out, scale


def load_matrix(matrix, alphabet: Alphabet | str) -> tuple[str, np.ndarray, int]:
    """Return ``(name, int32 [A, A] matrix over codes, scale)`` for a name or a Biopython Array."""
    alphabet = get_alphabet(alphabet)
    if isinstance(matrix, str):
        return _matrix_by_name(matrix, alphabet.name)
    return _layout(*_source(matrix, "matrix"), alphabet)


def gap_cost(value, what: str) -> float:
    """Check a gap cost: a finite number >= 0 (raises :class:`ScoringError` otherwise)."""
    if isinstance(value, bool) or not isinstance(value, Real) or value != value:
        raise ScoringError(f"Invalid value for `{what}` argument: {value!r}; pass a number >= 0")
    if value < 0 or value == float("inf"):
        raise ScoringError(
            f"Invalid value for `{what}` argument: {value!r}; gap costs are positive numbers "
            f"(a gap of length k scores -(gap_open + (k-1)*gap_extend))"
        )
    return float(value)


def _gap_cost(value, scale: int, what: str) -> int:
    value = gap_cost(value, what)
    scaled = value * scale
    if abs(scaled - round(scaled)) > 1e-9:
        raise ScoringError(
            f"Invalid value for `{what}` argument: {value!r}; with this matrix (scale {scale}) gap "
            f"costs must be multiples of {1 / scale:g}"
        )
    return int(round(scaled))


def get_scoring(
    alphabet: Alphabet | str,
    matrix=None,
    gap_open: float | None = None,
    gap_extend: float | None = None,
) -> Scoring:
    """Build a :class:`Scoring` for ``alphabet``; ``None`` arguments take the defaults above."""
    alphabet = get_alphabet(alphabet)
    default_matrix, default_open, default_extend = DEFAULTS[alphabet.name]
    name, table, scale = load_matrix(default_matrix if matrix is None else matrix, alphabet)
    g_open = _gap_cost(default_open if gap_open is None else gap_open, scale, "gap_open")
    g_ext = _gap_cost(default_extend if gap_extend is None else gap_extend, scale, "gap_extend")
    if g_ext > g_open:
        raise ScoringError(
            f"gap_extend ({gap_extend!r}) is larger than gap_open ({gap_open!r}); torchmsa needs "
            f"gap_extend <= gap_open"
        )
    return Scoring(alphabet, name, table, g_open, g_ext, scale)
