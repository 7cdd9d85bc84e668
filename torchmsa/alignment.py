"""Alignment: the result of ``torchmsa.align``, as text for biologists and tensors for ML."""

from __future__ import annotations

import copy
import os
from collections.abc import Sequence
from typing import IO, Any

import numpy as np
import torch

from torchmsa import features, io
from torchmsa.alphabet import PROTEIN, Alphabet
from torchmsa.config import MemoryBudget
from torchmsa.errors import AlphabetError, ArgumentError, EmptyInputError
from torchmsa.features.read import encode_msa, read_msa
from torchmsa.records import bulk, header

__all__ = ["Alignment"]


class Alignment:
    """A multiple sequence alignment, rows in input order.

    Made by :func:`torchmsa.align`, read from a file (:meth:`read`: A3M insertions are kept as
    the deletion matrix) or built from rows (:meth:`from_rows`). Every tensor lives on the
    device of :attr:`codes` (:meth:`to` moves them); the feature methods delegate to
    :mod:`torchmsa.features`.

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
        *,
        deletions: torch.Tensor | None = None,
        a3m_rows: list[str] | None = None,
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
        # an A3M's insertions (deletion matrix and original rows), when read from one
        self._deletions = deletions
        self._a3m = None if a3m_rows is None else list(a3m_rows)

    @classmethod
    def read(
        cls, source: str | os.PathLike | IO, format: str | None = None, *, seqtype: str = "auto"
    ) -> Alignment:
        """Read an existing MSA: FASTA, A2M, A3M, Stockholm, Clustal or PHYLIP.

        A2M / A3M keep their match columns (upper case, ``-``) as the alignment, and the
        insertions (lowercase letters) as :meth:`deletion_matrix`, as AlphaFold's
        ``parse_a3m`` does; writing ``a3m`` gives the rows back with their insertions. Other
        formats keep every column. See :mod:`torchmsa.features.read`.

        Arguments:
            source: a path (``.gz`` too), ``"-"`` (standard input) or an open handle.
            format: one of :data:`torchmsa.io.READ_FORMATS`; ``None`` guesses it.
            seqtype: ``"auto"``, ``"protein"``, ``"dna"`` or ``"rna"``.

        >>> import io
        >>> aln = Alignment.read(io.StringIO(">q\\nMKVLA\\n>h\\nMKaaVL-\\n"), "a3m")
        >>> aln.rows, aln.deletion_matrix().tolist()
        (['MKVLA', 'MKVL-'], [[0, 0, 0, 0, 0], [0, 0, 2, 0, 0]])
        """
        msa = read_msa(source, format)
        aln = cls.from_rows(
            msa.names, msa.rows, descriptions=msa.descriptions, seqtype=seqtype,
            deletion_matrix=None if msa.deletions is None else torch.from_numpy(msa.deletions),
        )  # fmt: skip
        aln._a3m, aln.metadata = msa.a3m, {"format": msa.format}
        return aln

    @classmethod
    def from_rows(
        cls,
        names: Sequence[str],
        rows: Sequence[str],
        *,
        descriptions: Sequence[str] | None = None,
        seqtype: str = "auto",
        deletion_matrix=None,
    ) -> Alignment:
        """An alignment from aligned rows of equal length (``-`` or ``.`` gaps, case kept).

        Arguments:
            names: one id per row.
            rows: the gapped rows.
            descriptions: whole header lines (``None``: the names).
            seqtype: ``"auto"``, ``"protein"``, ``"dna"`` or ``"rna"``.
            deletion_matrix: ``[N, C]`` insertion counts before each column (AlphaFold's
                ``deletion_matrix``), returned by :meth:`deletion_matrix`.

        >>> Alignment.from_rows(["a", "b"], ["AC-D", "ACG."]).rows
        ['AC-D', 'ACG-']
        """
        *enc, deletions = encode_msa(names, rows, descriptions, seqtype, deletion_matrix)
        return cls(*enc, deletions=deletions)

    def to(self, device: str | torch.device) -> Alignment:
        """The same alignment with its tensors on ``device``."""
        out = copy.copy(self)
        out.codes = self.codes.to(device)
        out.weights = self.weights.to(device)
        if self._deletions is not None:
            out._deletions = self._deletions.to(device)
        return out

    def subset(self, indices) -> Alignment:
        """The rows at ``indices`` (in that order) as an alignment; the tree is dropped."""
        idx = torch.as_tensor(indices, dtype=torch.long).reshape(-1).cpu()
        n = len(self)
        if idx.numel() == 0 or int(idx.min()) < 0 or int(idx.max()) >= n:
            raise ArgumentError(
                f"Invalid value for `indices` argument: {indices!r}; use row indices in 0..{n - 1}"
            )
        rows = idx.tolist()
        dev = idx.to(self.codes.device)
        return Alignment(
            [self.names[i] for i in rows],
            [self.descriptions[i] for i in rows],
            [self._residues[i] for i in rows],
            self.codes[dev],
            self.alphabet,
            weights=self.weights[idx.to(self.weights.device)],
            metadata=self.metadata,
            deletions=None if self._deletions is None else self._deletions[dev],
            a3m_rows=None if self._a3m is None else [self._a3m[i] for i in rows],
        )

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
            chars = self._lines()
            n, stride = chars.shape
            text = chars.tobytes().decode("ascii")  # one decode, then a slice per row
            with bulk():
                self._rows = [text[k : k + stride - 1] for k in range(0, n * stride, stride)]
        return self._rows

    def _lines(self) -> np.ndarray:
        """``uint8 [N, width + 1]``: each row's characters (the input's case, ``-`` for gaps)
        and a line end."""
        from torchmsa.cpu.lines import gapped_lines

        flat = "".join(self._residues).encode("ascii")
        lengths = np.fromiter(map(len, self._residues), np.int64, len(self._residues))
        return gapped_lines(self.codes.cpu().numpy(), self.alphabet.gap_code, flat, lengths)

    def fasta_bytes(self, rows: slice | None = None) -> bytes:
        """The alignment as FASTA in UTF-8: the bytes of ``format("fasta")``, made without a
        string per row (10^6 rows in a few seconds).

        Arguments:
            rows: only these rows' records (a slice of step 1): consecutive slices' bytes
                put together are the whole file's (the ranks of a distributed run each
                write their share).
        """
        return self.fasta_array(rows).tobytes()

    def fasta_array(self, rows: slice | None = None) -> np.ndarray:
        """:meth:`fasta_bytes` as a ``uint8`` array, without the copy into a ``bytes``
        object (1.9 GB at 10^6 rows of 2,000 columns): what ``torchmsa align`` writes, a
        file taking it as it is (``fh.write(array)``)."""
        from torchmsa.cpu.lines import fasta_file
        from torchmsa.runtime import usable_cores

        lo, hi, step = (rows or slice(None)).indices(len(self.names))
        if step != 1:
            raise ArgumentError(f"Invalid value for `rows` argument: {rows!r}; give a step of 1")
        names, descriptions = self.names[lo:hi], self.descriptions[lo:hi]
        io.check_writable(names, descriptions, "fasta")
        if not self.names:
            raise EmptyInputError("no rows to write as fasta")
        if hi <= lo:
            return np.zeros(0, dtype=np.uint8)
        with bulk():
            texts = list(map(header, names, descriptions))
        joined = "".join(texts)
        if joined.isascii():
            sizes = np.fromiter(map(len, texts), np.int64, len(texts))
        else:  # UTF-8 headers: their lengths in bytes
            sizes = np.fromiter((len(t.encode()) for t in texts), np.int64, len(texts))
        residues = self._residues[lo:hi]
        letters = "".join(residues).encode("ascii")
        lengths = np.fromiter(map(len, residues), np.int64, len(residues))
        codes = self.codes[lo:hi].cpu().numpy()
        threads = usable_cores() if codes.size >= 1 << 22 else 1
        gap = self.alphabet.gap_code
        return fasta_file(codes, gap, letters, lengths, joined.encode(), sizes, threads)

    def format(self, format: str = "fasta", query: int = 0) -> str:
        """The alignment as text: ``fasta``, ``clustal``, ``stockholm``, ``phylip`` or ``a3m``.

        An alignment read from A2M / A3M writes ``a3m`` (query 0) with its insertions."""
        self._check_query(query)
        rows, fmt = self._text(format, query)
        return io.format_alignment(self.names, rows, fmt, self.descriptions, query)

    def _text(self, format: str, query: int) -> tuple[list[str], str]:
        if (
            self._a3m is not None
            and str(format).strip().lower() == "a3m"
            and query % len(self) == 0
        ):
            return self._a3m, "fasta"
        return self.rows, format

    def write(
        self, target: str | os.PathLike | IO[str], format: str | None = None, query: int = 0
    ) -> None:
        """Write to a path (``.gz`` compresses), ``"-"`` (stdout) or an open text handle;
        ``format=None`` takes it from the file name (``x.aln`` Clustal, ``x.sto``
        Stockholm...), else FASTA, as ``torchmsa align -o`` does."""
        self._check_query(query)
        fmt = io.output_format(target, format)
        if fmt == "fasta":  # bytes straight from the codes, as the command line writes them
            io.write_encoded(target, self.fasta_bytes())
            return
        rows, fmt = self._text(fmt, query)
        io.write_alignment(self.names, rows, target, fmt, self.descriptions, query)

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

    def deletion_matrix(self, query: int | None = None) -> torch.Tensor:
        """``int32 [N, L_query]``: insertions in each row just before each query residue.

        Column j is the query's j-th residue; entry (i, j) counts row i's residues in the
        columns between the query's residues j-1 and j (the AlphaFold convention), and the
        insertions read from an A3M file before those columns. ``query=None``: the matrix
        read from an A2M / A3M file (``[N, C]``, exactly AlphaFold's ``parse_a3m``), else
        row 0.
        """
        if query is None:
            if self._deletions is not None:
                return self._deletions
            query = 0
        self._check_query(query)
        gaps = self.gap_mask()
        match = ~gaps[query]
        inserted = (~gaps & ~match[None, :]).to(torch.int32)
        if self._deletions is not None:
            inserted = inserted + self._deletions
        running = torch.cumsum(inserted, dim=1)
        at_match = running[:, match]
        before = torch.cat([torch.zeros_like(at_match[:, :1]), at_match[:, :-1]], dim=1)
        return (at_match - before).to(torch.int32)

    def identity(
        self, definition: str = "aligned", *, budget: MemoryBudget | int | None = None
    ) -> torch.Tensor:
        """``float32 [N, N]`` pairwise identity (:mod:`torchmsa.features.identity` defines
        ``"aligned"``, ``"width"``, ``"shorter"`` and ``"hamming"``)."""
        return features.identity_matrix(
            self.codes, self.alphabet.gap_code, definition=definition, budget=budget
        )

    def sequence_weights(
        self,
        theta: float | Sequence[float] = 0.8,
        *,
        definition: str = "aligned",
        budget: MemoryBudget | int | None = None,
    ) -> torch.Tensor:
        """``float64 [N]`` (``[T, N]`` for T thresholds): ``1 / |{j : id(i, j) >= theta}|``
        (:mod:`torchmsa.features.weights`). Not :attr:`weights`, which come from the tree."""
        return features.sequence_weights(
            self.codes, self.alphabet.gap_code, theta, definition=definition, budget=budget
        )

    def neff(
        self,
        theta: float | Sequence[float] = 0.8,
        *,
        normalize: bool = False,
        definition: str = "aligned",
        budget: MemoryBudget | int | None = None,
    ) -> float | torch.Tensor:
        """The effective number of sequences at ``theta`` (a float; a tensor for several
        thresholds), divided by ``sqrt(width)`` when ``normalize``."""
        value = features.neff(
            self.codes,
            self.alphabet.gap_code,
            theta,
            normalize=normalize,
            definition=definition,
            budget=budget,
        )
        return float(value) if value.ndim == 0 else value

    def filter(
        self,
        *,
        max_identity: float | None = None,
        min_coverage: float | None = None,
        min_query_identity: float | None = None,
        max_seqs: int | None = None,
        query: int = 0,
        definition: str = "aligned",
        budget: MemoryBudget | int | None = None,
    ) -> Alignment:
        """The rows an hhfilter-like filter keeps, in input order
        (:func:`torchmsa.features.filter_rows`; fractions, not percentages)."""
        keep = features.filter_rows(
            self.codes,
            self.alphabet.gap_code,
            max_identity=max_identity,
            min_coverage=min_coverage,
            min_query_identity=min_query_identity,
            max_seqs=max_seqs,
            query=query,
            definition=definition,
            budget=budget,
        )
        return self.subset(keep)

    def select_diverse(self, n: int, *, criterion: str = "mean", query: int = 0) -> Alignment:
        """``n`` rows chosen greedily for diversity, as ESM's ``greedy_select`` does
        (:func:`torchmsa.features.select_diverse`), in input order."""
        return self.subset(features.select_diverse(self.codes, n, criterion=criterion, query=query))

    def alphafold_features(
        self,
        *,
        max_clusters: int = 512,
        max_extra: int = 1024,
        seed: int = 0,
        shuffle: bool = True,
        budget: MemoryBudget | int | None = None,
    ) -> dict[str, torch.Tensor]:
        """AlphaFold's MSA features (:func:`torchmsa.features.alphafold_features`) over the
        columns of row 0's residues (every column of an A3M read) with :meth:`deletion_matrix`.
        Protein only."""
        if self.alphabet is not PROTEIN:
            raise AlphabetError(
                f"AlphaFold's features are for proteins and this alignment is "
                f"{self.alphabet.name}; read it with seqtype='protein' if that is wrong"
            )
        codes = self.codes
        if self._deletions is None:
            codes = codes[:, codes[0] != self.alphabet.gap_code]
        return features.alphafold_features(
            features.alphafold_ids(codes),
            self.deletion_matrix(),
            max_clusters=max_clusters,
            max_extra=max_extra,
            seed=seed,
            shuffle=shuffle,
            budget=budget,
        )

    def pssm(self, theta: float | None = 0.8, *, pseudocount: float = 1.0) -> torch.Tensor:
        """``float32 [C, S]`` log-odds scores in bits (:mod:`torchmsa.features.logodds`; columns
        ``ARNDCQEGHILKMFPSTWYV``, or ``ACGT`` / ``ACGU``), rows weighted by
        :meth:`sequence_weights` at ``theta`` (``None``: 1 each)."""
        _, states, background = features.pssm_states(self.alphabet)
        weights = None if theta is None else self.sequence_weights(theta)
        return features.pssm(
            self.codes, states, background, weights=weights, pseudocount=pseudocount
        )

    def _check_query(self, query: int) -> None:
        if not isinstance(query, int) or not -len(self) <= query < len(self):
            raise ArgumentError(
                f"Invalid value for `query` argument: {query!r}; use a row index in "
                f"0..{len(self) - 1}"
            )
