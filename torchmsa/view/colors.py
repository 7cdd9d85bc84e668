"""Colour schemes: which colour each residue gets, column by column.

A :class:`Coloring` is a palette and a look-up table ``lut [C or 1, 26]`` giving the palette
index of each letter ``A..Z`` (either case) in each column; one row when the scheme does not
depend on the column. Palette entry 0 is "residue left uncoloured"; gaps are :data:`GAP_COLOR`.
The HTML page and the PNG both draw from the same tables.

=============== ==========================================================================
scheme          rule
=============== ==========================================================================
clustal         Clustal X style: a residue takes its class colour only where its class is
                conserved in the column (fractions of all rows, gaps included): hydrophobic
                ``AILMFWVC`` blue where ``WLVIMAFCHP`` > 60%; ``KR`` red where ``KR`` > 60%;
                ``ED`` magenta where ``ED`` > 50% (``E`` also where ``QE`` > 50%); ``N``
                green where ``N`` > 50%, ``Q`` where ``QE`` > 50% or ``KR`` > 60%, ``ST``
                where ``ST`` > 50% or hydrophobic > 60%; ``HY`` cyan where hydrophobic >
                60%; ``C`` pink where ``C`` > 85%; any of these also where the residue
                alone is > 85%; ``G`` orange and ``P`` yellow always
zappo           physico-chemical classes, whatever the column
identity        residues equal to the column's most frequent one, shaded by its share of the
                rows (> 80%, > 60%, > 40%)
hydrophobicity  Kyte-Doolittle scale, blue (hydrophilic) to red (hydrophobic)
=============== ==========================================================================

For DNA and RNA, ``clustal``, ``zappo`` and ``hydrophobicity`` colour the four bases.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from torchmsa.errors import ArgumentError
from torchmsa.view.schemes import SCHEMES

if TYPE_CHECKING:
    import torch

__all__ = [
    "SCHEMES",
    "GAP_COLOR",
    "Coloring",
    "coloring",
    "check_scheme",
    "cell_colors",
    "symbol_table",
    "rgb",
]

GAP_COLOR = "#ffffff"
PLAIN = "#ececec"

_CLUSTAL = {
    "blue": "#80a0f0",
    "red": "#f01505",
    "magenta": "#c048c0",
    "green": "#15c015",
    "pink": "#f08080",
    "orange": "#f09048",
    "yellow": "#c0c000",
    "cyan": "#15a4a4",
}
_ZAPPO = {
    "ILVAM": "#ffafaf",
    "FWY": "#ffc800",
    "KRH": "#6464ff",
    "DE": "#ff0000",
    "STNQ": "#00ff00",
    "PG": "#ff00ff",
    "C": "#ffff00",
}
_BASES = {"A": "#64d264", "C": "#6496ff", "G": "#ffb43c", "TU": "#ff6464"}
_IDENTITY = ((0.8, "#6464ff"), (0.6, "#9999ff"), (0.4, "#ccccff"))
_KYTE_DOOLITTLE = {
    "I": 4.5, "V": 4.2, "L": 3.8, "F": 2.8, "C": 2.5, "M": 1.9, "A": 1.8, "G": -0.4,
    "T": -0.7, "S": -0.8, "W": -0.9, "Y": -1.3, "P": -1.6, "H": -3.2, "E": -3.5, "Q": -3.5,
    "D": -3.5, "N": -3.5, "K": -3.9, "R": -4.5, "B": -3.5, "Z": -3.5, "J": 4.15,
}  # fmt: skip
_HYDROPHILIC_RGB = (90, 120, 255)
_HYDROPHOBIC_RGB = (255, 90, 90)


@dataclass(frozen=True, eq=False)
class Coloring:
    """A scheme applied to one alignment.

    Attributes:
        scheme: the scheme's name.
        palette: ``#rrggbb`` colours; entry 0 is an uncoloured residue.
        lut: ``uint8 [C, 26]`` (or ``[1, 26]`` for a scheme that ignores the column): the
            palette index of letter ``A..Z`` in each column.
    """

    scheme: str
    palette: tuple[str, ...]
    lut: np.ndarray


def check_scheme(scheme: str) -> str:
    """``scheme`` if it is one of :data:`SCHEMES`, else :class:`ArgumentError`."""
    if scheme not in SCHEMES:
        raise ArgumentError(
            f"Invalid value for `color` argument: {scheme!r}; use one of {', '.join(SCHEMES)}"
        )
    return scheme


def _idx(letters: str) -> list[int]:
    return [ord(ch) - 65 for ch in letters]


def _static(scheme: str, classes: dict[str, str]) -> Coloring:
    palette = [PLAIN]
    lut = np.zeros((1, 26), dtype=np.uint8)
    for letters, colour in classes.items():
        palette.append(colour)
        lut[0, _idx(letters)] = len(palette) - 1
    return Coloring(scheme, tuple(palette), lut)


def _hydrophobicity() -> Coloring:
    palette = [PLAIN]
    lut = np.zeros((1, 26), dtype=np.uint8)
    for letter, value in _KYTE_DOOLITTLE.items():
        t = (value + 4.5) / 9.0
        rgb = [round(a + (b - a) * t) for a, b in zip(_HYDROPHILIC_RGB, _HYDROPHOBIC_RGB)]
        palette.append("#{:02x}{:02x}{:02x}".format(*rgb))
        lut[0, ord(letter) - 65] = len(palette) - 1
    return Coloring("hydrophobicity", tuple(palette), lut)


def _clustal(p: np.ndarray) -> Coloring:
    def share(letters: str) -> np.ndarray:
        return p[:, _idx(letters)].sum(axis=1)

    hydrophobic = share("WLVIMAFCHP") > 0.6
    kr = share("KR") > 0.6
    qe = share("QE") > 0.5
    always = np.ones(len(p), dtype=bool)
    # (letters, colour, columns where the class holds); the first rule that holds wins, and
    # every rule also holds where the residue alone is above 85%
    rules = [
        ("C", "pink", p[:, 2] > 0.85),
        ("AILMFWVC", "blue", hydrophobic),
        ("KR", "red", kr),
        ("ED", "magenta", share("ED") > 0.5),
        ("E", "magenta", qe),
        ("N", "green", share("N") > 0.5),
        ("Q", "green", qe | kr),
        ("ST", "green", (share("ST") > 0.5) | hydrophobic),
        ("HY", "cyan", hydrophobic),
        ("G", "orange", always),
        ("P", "yellow", always),
    ]
    names = list(_CLUSTAL)
    palette = (PLAIN, *(_CLUSTAL[k] for k in names))
    lut = np.zeros((len(p), 26), dtype=np.uint8)
    for letters, colour, holds in rules:
        code = names.index(colour) + 1
        for k in _idx(letters):
            hit = (holds | (p[:, k] > 0.85)) & (lut[:, k] == 0)
            lut[hit, k] = code
    return Coloring("clustal", palette, lut)


def _identity(p: np.ndarray) -> Coloring:
    palette = (PLAIN, *(colour for _, colour in _IDENTITY))
    lut = np.zeros((len(p), 26), dtype=np.uint8)
    if len(p):
        top = p[:, :26].argmax(axis=1)
        share = p[np.arange(len(p)), top]
        band = np.zeros(len(p), dtype=np.uint8)
        for k, (floor, _) in reversed(list(enumerate(_IDENTITY))):
            band[share > floor] = k + 1
        lut[np.arange(len(p)), top] = band
    return Coloring("identity", palette, lut)


def coloring(scheme: str, prof: torch.Tensor, nucleotide: bool = False) -> Coloring:
    """Apply ``scheme`` to an alignment whose profile (``tracks.profile``) is ``prof``."""
    check_scheme(scheme)
    p = prof.numpy()
    if scheme == "identity":
        return _identity(p)
    if nucleotide:
        return _static(scheme, _BASES)
    if scheme == "clustal":
        return _clustal(p)
    if scheme == "zappo":
        return _static(scheme, _ZAPPO)
    return _hydrophobicity()


def rgb(colours: tuple[str, ...] | list[str]) -> np.ndarray:
    """``uint8 [P, 3]`` of ``#rrggbb`` strings."""
    return np.array([[int(c[i : i + 2], 16) for i in (1, 3, 5)] for c in colours], np.uint8)


def symbol_table(col: Coloring) -> np.ndarray:
    """``uint8 [C or 1, 28]``: the palette index of each symbol (``tracks``: letters, gap,
    other) in each column; gaps get ``len(col.palette)``, other symbols 0."""
    full = np.zeros((len(col.lut), 28), dtype=np.uint8)
    full[:, :26] = col.lut
    full[:, 26] = len(col.palette)
    return full


def cell_colors(syms: np.ndarray, col: Coloring) -> np.ndarray:
    """``uint8 [k, C]`` palette indices of symbols (``tracks.symbols``) of all the columns;
    gaps get index ``len(col.palette)``."""
    full = symbol_table(col)
    offsets = 0 if len(full) == 1 else np.arange(syms.shape[1], dtype=np.int32) * 28
    return full.ravel()[syms.astype(np.int32) + offsets]
