"""Alignment: the result of ``torchmsa.align``, as text for biologists and tensors for ML."""

from __future__ import annotations

import os
from typing import IO, Any

import numpy as np
import torch

from torchmsa import io
from torchmsa.alphabet import Alphabet
from torchmsa.errors import ArgumentError

__all__ = ["Alignment"]


class Alignment:
    """A multiple sequence alignment, rows in input order.

    Attributes:
        names: sequence ids, input order.
        descriptions: whole header lines.
        codes: ``uint8 [N, C]`` residue codes, ``alphabet.gap_code`` for gaps.
        alphabet: the alphabet of :attr:`codes`.
        tree: the guide tree used last (``tree.newick()`` gives Newick), or ``None``.
        weights: ``float64 [N]`` sequence weights from the tree (mean 1).
        metadata: how it was made: mode, device, backend, timings, and the settings that
            differ from the defaults (``"config"``: :func:`torchmsa.config.describe` of the
            :class:`~torchmsa.config.AlignConfig`, ``""`` for the defaults; ``"policy"``
            likewise for the :class:`~torchmsa.config.ExecutionPolicy`).
    """

    def __init__(
        self,
        names: list[str],
        descriptions: list[str],
        residues: list[str],
        codes: torch.Tensor,
        alphabet: Alphabet,
        tree=None,
        weights=None,
        metadata: dict[str, Any] | None = None,
    ):
        self.names = list(names)
        self.descriptions = list(descriptions)
        self._residues = list(residues)
        self.codes = codes
        self.alphabet = alphabet
        self.tree = tree
        n = len(self.names)
        self.weights = torch.ones(n, dtype=torch.float64) if weights is None else weights
        self.metadata = dict(metadata or {})
        self._rows: list[str] | None = None

    def __len__(self) -> int:
        return len(self.names)

    @property
    def width(self) -> int:
        """Number of columns."""
        return int(self.codes.shape[1])

    def __repr__(self) -> str:
        return (
            f"Alignment(n={len(self)}, width={self.width}, alphabet={self.alphabet.name!r}, "
            f"mode={self.metadata.get('mode')!r})"
        )

    @property
    def rows(self) -> list[str]:
        """Gapped rows with the input's residue case, in input order."""
        if self._rows is None:
            residue = self.codes.cpu().numpy() != self.alphabet.gap_code
            chars = np.full(residue.shape, ord("-"), dtype=np.uint8)
            flat = "".join(self._residues).encode("ascii")
            chars[residue] = np.frombuffer(flat, dtype=np.uint8)
            self._rows = [r.tobytes().decode("ascii") for r in chars]
        return self._rows

    def format(self, format: str = "fasta", query: int = 0) -> str:
        """The alignment as text: ``fasta``, ``clustal``, ``stockholm``, ``phylip`` or ``a3m``."""
        self._check_query(query)
        return io.format_alignment(self.names, self.rows, format, self.descriptions, query)

    def write(
        self, target: str | os.PathLike | IO[str], format: str = "fasta", query: int = 0
    ) -> None:
        """Write to a path (``.gz`` compresses), ``"-"`` (stdout) or an open text handle."""
        self._check_query(query)
        io.write_alignment(self.names, self.rows, target, format, self.descriptions, query)

    def to_html(self, **kwargs) -> str:
        """A self-contained HTML page of the alignment (:func:`torchmsa.view.to_html`'s
        keywords: ``color``, ``consensus``, ``tree``, ``region``, ``rows``, ``title``)."""
        from torchmsa.view import to_html

        return to_html(self, **kwargs)

    def to_png(self, path: str | os.PathLike | None = None, **kwargs) -> bytes:
        """An overview picture, written to ``path`` when given (:func:`torchmsa.view.to_png`'s
        keywords, plus ``max_width`` / ``max_height``); returns the PNG's bytes."""
        from torchmsa.view import to_png

        return to_png(self, path, **kwargs)

    def _repr_html_(self) -> str:
        from torchmsa.view import repr_html

        return repr_html(self)

    def to_biopython(self):
        """A ``Bio.Align.MultipleSeqAlignment`` with ids, descriptions and rows."""
        from Bio.Align import MultipleSeqAlignment
        from Bio.Seq import Seq
        from Bio.SeqRecord import SeqRecord

        return MultipleSeqAlignment(
            [
                SeqRecord(Seq(r), id=n, name=n, description=d)
                for n, d, r in zip(self.names, self.descriptions, self.rows)
            ]
        )

    def gap_mask(self) -> torch.Tensor:
        """``bool [N, C]``: True where a row has a gap."""
        return self.codes == self.alphabet.gap_code

    def one_hot(self, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        """``[N, C, A + 1]`` one-hot codes; the last channel is the gap."""
        return torch.nn.functional.one_hot(self.codes.long(), self.alphabet.size + 1).to(dtype)

    def profile(self, weighted: bool = True, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        """``[C, A + 1]`` column frequencies (gap last), with the tree's sequence weights."""
        w = self.weights.to(self.codes.device, torch.float64)
        if not weighted:
            w = torch.ones_like(w)
        prof = torch.einsum("n,nca->ca", w, self.one_hot(torch.float64))
        return (prof / w.sum().clamp_min(1e-300)).to(dtype)

    def a3m(self, query: int = 0) -> str:
        """A3M text relative to row ``query``: its gap columns become lowercase insertions."""
        return self.format("a3m", query)

    def deletion_matrix(self, query: int = 0) -> torch.Tensor:
        """``int32 [N, L_query]``: insertions in each row just before each query residue.

        Column j is the query's j-th residue; entry (i, j) counts row i's residues in the
        columns between the query's residues j-1 and j (the AlphaFold convention).
        """
        self._check_query(query)
        gaps = self.gap_mask()
        match = ~gaps[query]
        inserted = (~gaps & ~match[None, :]).to(torch.int32)
        running = torch.cumsum(inserted, dim=1)
        at_match = running[:, match]
        before = torch.cat([torch.zeros_like(at_match[:, :1]), at_match[:, :-1]], dim=1)
        return (at_match - before).to(torch.int32)

    def _check_query(self, query: int) -> None:
        if not isinstance(query, int) or not -len(self) <= query < len(self):
            raise ArgumentError(
                f"Invalid value for `query` argument: {query!r}; use a row index in "
                f"0..{len(self) - 1}"
            )
