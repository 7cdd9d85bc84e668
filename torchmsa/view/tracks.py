"""Per-column tracks of a view: the profile, its conservation and its consensus line.

Rows are handled as a ``uint8 [N, C]`` matrix of ASCII bytes. Symbols are the 26 letters
``A..Z`` (either case, so A3M insertions count with their residue), the gap (``-`` or ``.``)
and "other" (``*``, ``?``), which no track counts.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from torchmsa.errors import FormatError

__all__ = ["GAP", "OTHER", "row_bytes", "symbols", "profile", "conservation", "consensus"]

GAP = 26
OTHER = 27
N_SYMBOLS = 28
CHUNK_CELLS = 1 << 22  # cells per block of rows when counting (bounds temporary memory)

_SYMBOL = np.full(256, OTHER, dtype=np.uint8)
_SYMBOL[np.arange(65, 91)] = np.arange(26)
_SYMBOL[np.arange(97, 123)] = np.arange(26)
_SYMBOL[[ord("-"), ord(".")]] = GAP


def row_bytes(rows: list[str]) -> np.ndarray:
    """``uint8 [N, C]``: the rows' characters (non-ASCII ones become ``?``).

    Raises:
        FormatError: the rows differ in length.
    """
    if not rows:
        return np.zeros((0, 0), dtype=np.uint8)
    width = len(rows[0])
    if any(len(r) != width for r in rows):
        bad = next(i for i, r in enumerate(rows) if len(r) != width)
        raise FormatError(
            f"row #{bad + 1} has {len(rows[bad])} columns but row #1 has {width}; an alignment "
            f"needs rows of equal length"
        )
    flat = np.frombuffer("".join(rows).encode("ascii", "replace"), dtype=np.uint8)
    return flat.reshape(len(rows), width)


def symbols(chars: np.ndarray) -> np.ndarray:
    """``uint8`` symbols of ASCII bytes: 0..25 for ``A..Z``/``a..z``, :data:`GAP`, :data:`OTHER`."""
    return _SYMBOL[chars]


def profile(chars: np.ndarray, *, chunk_cells: int = CHUNK_CELLS) -> torch.Tensor:
    """``float64 [C, 27]``: each column's fraction of rows holding ``A..Z`` (either case), gap last.

    Unweighted, so that the view of an alignment file and of the same ``Alignment`` in memory
    agree: for an ``Alignment`` it equals ``aln.profile(weighted=False)`` on the letters.
    """
    n, width = chars.shape
    counts = np.zeros(width * N_SYMBOLS, dtype=np.int64)
    step = max(1, chunk_cells // max(width, 1))
    offsets = np.arange(width, dtype=np.int32) * N_SYMBOLS
    for start in range(0, n, step):
        idx = _SYMBOL[chars[start : start + step]].astype(np.int32) + offsets  # [k, C]
        counts += np.bincount(idx.ravel(), minlength=width * N_SYMBOLS)
    counts = counts.reshape(width, N_SYMBOLS)[:, : GAP + 1]
    return torch.from_numpy(counts / max(n, 1))


def conservation(prof: torch.Tensor, nucleotide: bool = False) -> np.ndarray:
    """``float64 [C]`` in 0..1: one minus the normalised Shannon entropy of each column's
    residues, times the column's residue fraction.

    1 is a column of one residue without gaps; 0 a column of gaps or of evenly spread residues.
    Entropy is normalised by ``log 20`` (``log 4`` for nucleotides).
    """
    p = prof.numpy()
    res = p[:, :GAP]
    filled = res.sum(axis=1)
    q = np.divide(res, filled[:, None], out=np.zeros_like(res), where=filled[:, None] > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(q > 0, q * np.log(q), 0.0)
    entropy = -terms.sum(axis=1)
    scale = math.log(4 if nucleotide else 20)
    return np.clip(1.0 - entropy / scale, 0.0, 1.0) * filled


def consensus(prof: torch.Tensor) -> str:
    """One character per column: the most frequent residue, upper case where at least half the
    rows hold it, lower case where it is only the most frequent; ``-`` where at least half the
    rows have a gap. Ties go to the letter first in ``A..Z``."""
    p = prof.numpy()
    res = p[:, :GAP]
    top = res.argmax(axis=1) if len(res) else np.zeros(0, dtype=np.int64)
    share = res.max(axis=1) if len(res) else np.zeros(0)
    chars = np.where(share >= 0.5, top + 65, top + 97).astype(np.uint8)
    chars[(p[:, GAP] >= 0.5) | (share == 0)] = ord("-")
    return chars.tobytes().decode("ascii")
