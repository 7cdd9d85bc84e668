"""Pairwise sequence identity of the rows of an alignment, in tiles that fit a memory budget.

The identity of rows i and j is ``same(i, j) / den(i, j)``, where ``same`` counts the columns
holding the same residue in both rows (gap-gap columns count only for ``"hamming"``):

============ ================================================================================
definition   denominator
============ ================================================================================
``aligned``  columns where both rows hold a residue (the usual percent identity; 0 if none)
``width``    every column of the alignment (for an A3M read: the query length)
``shorter``  the residue count of the shorter of the two rows (AlphaFold's template check)
``hamming``  every column, with the gap as a 21st state: ``1 -`` the Hamming distance
             (gap-gap columns count as identical; DCA / EVcouplings weights)
============ ================================================================================

A zero denominator gives identity 0. Residues are compared by code: the case of a letter does
not matter, and ``X`` matches ``X``.

Counts come from exact one-hot products (:mod:`torchmsa.features.onehot`: int8 on the CPU,
float16 on CUDA). Tiles of at most 2048 rows are sized from a
:class:`~torchmsa.config.MemoryBudget`; each row block's one-hot matrices are built once and
kept while they fit in half of it, and a symmetric pass computes only the tiles on and above
the diagonal.
"""

from __future__ import annotations

from collections.abc import Iterator

import torch

from torchmsa.config import MemoryBudget
from torchmsa.errors import ArgumentError, ResourceError
from torchmsa.features.onehot import class_table, column_chunk, one_hot_flat, product, product_dtype
from torchmsa.ops.backend import budget_bytes

__all__ = ["DEFINITIONS", "PairIdentity", "identity_matrix", "identity_to_rows", "check_codes"]

DEFINITIONS = ("aligned", "width", "shorter", "hamming")
# bytes of the tile buffers per pair of rows: counts, denominators, identities, comparisons
_PAIR_BYTES = 40
# the most rows of a tile: smaller tiles let a symmetric pass skip more of the lower triangle
_MAX_TILE = 2048


def check_codes(codes: torch.Tensor, gap_code: int) -> torch.Tensor:
    """``codes`` as a 2-D integer tensor whose values lie in ``0 .. gap_code``."""
    if not isinstance(codes, torch.Tensor) or codes.ndim != 2 or codes.is_floating_point():
        shape = tuple(getattr(codes, "shape", ()))
        raise ArgumentError(
            f"`codes` must be an integer tensor [N, C] of residue codes; got "
            f"{type(codes).__name__} of shape {shape}"
        )
    if codes.numel() and (int(codes.min()) < 0 or int(codes.max()) > gap_code):
        raise ArgumentError(
            f"`codes` holds values outside 0..{gap_code} (residue codes and the gap code "
            f"{gap_code}); pass the alignment's codes and its alphabet's gap_code"
        )
    return codes


def _check_definition(definition: str) -> str:
    if definition not in DEFINITIONS:
        raise ArgumentError(
            f"Invalid value for `definition` argument: {definition!r}; use one of "
            f"{', '.join(map(repr, DEFINITIONS))}"
        )
    return definition


class PairIdentity:
    """Identity tiles of an alignment's rows (module docstring), on the codes' device.

    Arguments:
        codes: ``[N, C]`` integer residue codes, ``gap_code`` for gaps.
        gap_code: the alphabet's gap code.
        definition: one of :data:`DEFINITIONS`.
        budget: the memory the tiles may use (a MemoryBudget, bytes, or ``None``: the
            default MemoryBudget on the codes' device).
        compute_dtype: the one-hot products' dtype (``None``: int8 on the CPU, float16 on
            CUDA; :func:`~torchmsa.features.onehot.product_dtype`).
        reserve: bytes of the budget kept for the caller's own buffers.
        pair_bytes: extra bytes per tile entry the caller needs.
    """

    def __init__(
        self,
        codes: torch.Tensor,
        gap_code: int,
        definition: str = "aligned",
        *,
        budget: MemoryBudget | int | None = None,
        compute_dtype: torch.dtype | None = None,
        reserve: int = 0,
        pair_bytes: int = 0,
    ):
        self.codes = check_codes(codes, gap_code)
        self.gap_code = int(gap_code)
        self.definition = _check_definition(definition)
        device = codes.device
        self.dtype = product_dtype(device, compute_dtype)
        counted = torch.ones(256, dtype=torch.bool)
        counted[gap_code] = definition == "hamming"
        self.lut, self.k = class_table(codes, counted)
        n, c = codes.shape
        self.chunk = column_chunk(self.dtype, c)
        limit = budget_bytes(budget, device) - reserve
        elt = torch.empty((), dtype=self.dtype).element_size()
        # one-hot bytes per row: the classes, plus the residue indicator for "aligned"
        hot_row = c * (self.k + (definition == "aligned")) * elt
        # per row of a tile: two one-hot chunks and their int64 indices
        per_row = self.chunk * ((self.k + 2) * elt + 24)
        per_pair = _PAIR_BYTES + pair_bytes
        self._cache: dict[int, list] | None = None
        if n * hot_row <= limit // 2:
            self._cache = {}
            limit -= n * hot_row
        rows = _fit(per_row, per_pair, limit)
        if rows < min(n, 16):
            need = 16 * per_row + 256 * per_pair + max(reserve, 0)
            raise ResourceError(
                f"the identity tiles of {n} x {c} codes",
                need,
                max(limit + reserve, 0),
                f"raise the memory budget ({_source(budget, device)})",
            )
        self.rows = max(1, min(rows, n, _MAX_TILE))

    def _hots(self, codes: torch.Tensor) -> list[tuple[torch.Tensor, torch.Tensor | None]]:
        """Per column chunk: the one-hot classes and (for ``"aligned"``) residue indicators."""
        out = []
        for c0 in range(0, codes.shape[1], self.chunk):
            part = codes[:, c0 : c0 + self.chunk]
            hot = one_hot_flat(part, self.lut, self.k, self.dtype)
            res = (part != self.gap_code).to(self.dtype) if self.definition == "aligned" else None
            out.append((hot, res))
        return out

    def _block(self, i0: int) -> list:
        if self._cache is None:
            return self._hots(self.codes[i0 : i0 + self.rows])
        if i0 not in self._cache:
            self._cache[i0] = self._hots(self.codes[i0 : i0 + self.rows])
        return self._cache[i0]

    def _identity(self, hots_a, hots_b, a, b) -> torch.Tensor:
        same = torch.zeros((a.shape[0], b.shape[0]), dtype=torch.int64, device=a.device)
        both = torch.zeros_like(same) if self.definition == "aligned" else None
        for (ha, ra), (hb, rb) in zip(hots_a, hots_b):
            if self.k:
                same += product(ha, hb).long()
            if both is not None:
                both += product(ra, rb).long()
        if self.definition in ("width", "hamming"):
            den = torch.full_like(same, a.shape[1])
        elif self.definition == "shorter":
            la = (a != self.gap_code).sum(1)
            lb = (b != self.gap_code).sum(1)
            den = torch.minimum(la[:, None], lb[None, :])
        else:
            den = both
        same, den = same.double(), den.double()
        return torch.where(den > 0, same / den.clamp_min(1), torch.zeros_like(same))

    def between(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        """``float64 [n, m]`` identities of the rows ``a`` against ``b`` (codes of this
        alignment's width)."""
        return self._identity(self._hots(a), self._hots(b), a, b)

    def tile(self, i0: int, j0: int) -> torch.Tensor:
        """``float64`` identities of the row blocks starting at ``i0`` and ``j0`` (multiples
        of :attr:`rows`)."""
        a = self.codes[i0 : i0 + self.rows]
        b = self.codes[j0 : j0 + self.rows]
        return self._identity(self._block(i0), self._block(j0), a, b)

    def tiles(self, symmetric: bool = False) -> Iterator[tuple[int, int, int, int, torch.Tensor]]:
        """``(i0, i1, j0, j1, identities)`` over every tile; only ``j0 >= i0`` when
        ``symmetric`` (every definition is symmetric)."""
        n, t = self.codes.shape[0], self.rows
        for i0 in range(0, n, t):
            for j0 in range(i0 if symmetric else 0, n, t):
                yield i0, min(n, i0 + t), j0, min(n, j0 + t), self.tile(i0, j0)


def _fit(per_row: int, per_pair: int, limit: int) -> int:
    """The largest t with ``2 * t * per_row + t * t * per_pair <= limit``."""
    if limit <= 0:
        return 0
    a, b = per_pair, 2 * per_row
    t = int((-b + (b * b + 4 * a * limit) ** 0.5) / (2 * a))
    while t > 0 and 2 * t * per_row + t * t * per_pair > limit:
        t -= 1
    return t


def _source(budget, device) -> str:
    if isinstance(budget, int) and not isinstance(budget, bool):
        return f"budget={budget} bytes was given"
    return (budget if isinstance(budget, MemoryBudget) else MemoryBudget()).source(device)


def identity_matrix(
    codes: torch.Tensor,
    gap_code: int,
    *,
    definition: str = "aligned",
    budget: MemoryBudget | int | None = None,
    compute_dtype: torch.dtype | None = None,
    dtype: torch.dtype = torch.float32,
) -> torch.Tensor:
    """The ``[N, N]`` identity matrix of an alignment's rows (module docstring).

    Arguments:
        codes: ``[N, C]`` residue codes, ``gap_code`` for gaps.
        gap_code: the alphabet's gap code.
        definition: ``"aligned"``, ``"width"``, ``"shorter"`` or ``"hamming"``.
        budget: memory for the matrix and the tiles (MemoryBudget, bytes or ``None``).
        compute_dtype: dtype of the one-hot products (``None``: int8 on the CPU, float16 on CUDA).
        dtype: the result's dtype.

    Returns:
        ``[N, N]`` identities in 0..1, on the codes' device.

    >>> from torchmsa.alphabet import PROTEIN, encode
    >>> c = torch.tensor([list(encode("ACDE", PROTEIN)[0]), [0, 4, 27, 27]])
    >>> identity_matrix(c, 27).tolist()
    [[1.0, 1.0], [1.0, 1.0]]
    >>> identity_matrix(c, 27, definition="width").tolist()
    [[1.0, 0.5], [0.5, 0.5]]
    """
    n = codes.shape[0]
    out_bytes = n * n * torch.empty((), dtype=dtype).element_size()
    pairs = PairIdentity(
        codes, gap_code, definition, budget=budget, compute_dtype=compute_dtype, reserve=out_bytes
    )
    out = torch.empty((n, n), dtype=dtype, device=codes.device)
    for i0, i1, j0, j1, tile in pairs.tiles(symmetric=True):
        out[i0:i1, j0:j1] = tile.to(dtype)
        out[j0:j1, i0:i1] = tile.T.to(dtype)
    return out


def identity_to_rows(
    codes: torch.Tensor,
    gap_code: int,
    rows,
    *,
    definition: str = "aligned",
    budget: MemoryBudget | int | None = None,
    compute_dtype: torch.dtype | None = None,
) -> torch.Tensor:
    """``float64 [len(rows), N]``: identities of the given rows against every row."""
    pairs = PairIdentity(codes, gap_code, definition, budget=budget, compute_dtype=compute_dtype)
    idx = torch.as_tensor(rows, dtype=torch.long, device=codes.device).reshape(-1)
    out = torch.empty((idx.numel(), codes.shape[0]), dtype=torch.float64, device=codes.device)
    t = pairs.rows
    for a0 in range(0, idx.numel(), t):
        a = codes[idx[a0 : a0 + t]]
        for j0 in range(0, codes.shape[0], t):
            out[a0 : a0 + t, j0 : j0 + t] = pairs.between(a, codes[j0 : j0 + t])
    return out
