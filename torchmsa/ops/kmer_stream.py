"""Shared k-mer counts streamed in tiles sized to the memory budget.

All pairs of 100,000 sequences are 10^10 counts (40 GB as int32): more than many GPUs hold, and
more than most consumers need. :func:`count_tiles` yields the ``[Na, Nb]`` counts tile by tile
(only the tiles on and above the diagonal for all pairs within one set), each computed on the
backend's device, and :func:`full_counts` assembles them when the whole matrix fits.

The Triton kernels (``triton_kernels/kmer.py``) count *occurrence keys*: the o-th copy of k-mer
x in a sequence is the key ``(x, o)``, two sequences share ``min(count_a(x), count_b(x))``
keys of x, and each key present in the call gets a column, in ascending key order (so the
columns, and every result, do not depend on the tiling). A tile needs the binary indicator
strips of its rows over these ``K`` columns: ``int8 [rows, K]`` for the ``matrix`` method (and
of its columns), ``int8 [K, columns]`` for the ``lists`` method. Tile sides are the largest
that fit the budget: :meth:`torchmsa.config.MemoryBudget.limit` of the device, unless the
caller gives bytes. The method's default is ``ExecutionPolicy.kmer_method``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple

import torch

from torchmsa.config import ExecutionPolicy, MemoryBudget
from torchmsa.cpu import kmer as cpu_kmer
from torchmsa.errors import ArgumentError, ResourceError
from torchmsa.ops.backend import budget_bytes

__all__ = [
    "METHODS",
    "KeyColumns",
    "key_columns",
    "plan_tiles",
    "count_tiles",
    "full_counts",
]

# ExecutionPolicy.kmer_method picks one; "matrix" by default: its tensor-core products are
# ~6e14 int8 operations for all pairs of 100,000 sequences (K ~ 62,000 key columns), against
# ~3e12 scattered byte loads for "lists" (benchmarks/kmer_gpu.py times both on a GPU)
METHODS = ("matrix", "lists")
ALIGN = 256  # strip rows and K are padded to this (the largest block of the kernels)
TILE_STEP = 256  # tile sides are multiples of this (or the whole side)
MAX_TILE = 1 << 15  # rows a tile side: 4 GiB int32 tiles keep the peak memory moderate
KEY_CHUNK = 1 << 22  # k-mers per step when building the key columns
SCATTER_BYTES = 24  # temporaries per k-mer occurrence while a strip is filled


class KeyColumns(NamedTuple):
    """Occurrence-key columns of two sets (``b`` is ``a`` for all pairs within one set).

    Attributes:
        cols_a: ``int32 [Na, Wa]``: row p's key columns, ascending, then -1.
        n_a: ``int32 [Na]``: k-mers (keys) of each sequence.
        cols_b, n_b: the same for the second set.
        k: the number of columns (distinct keys).
    """

    cols_a: torch.Tensor
    n_a: torch.Tensor
    cols_b: torch.Tensor
    n_b: torch.Tensor
    k: int


def _round_up(x: int, m: int) -> int:
    return -(-x // m) * m


def _keys(ids: torch.Tensor, lens: torch.Tensor, mult: int) -> torch.Tensor:
    """``int64 [rows, W]``: ``id * mult + o`` for the o-th copy of an id in its row, -1 past
    the row's length (rows are sorted, so copies are adjacent)."""
    w = ids.shape[1]
    pos = torch.arange(w, device=ids.device)
    start = torch.ones_like(ids, dtype=torch.bool)
    start[:, 1:] = ids[:, 1:] != ids[:, :-1]
    first = torch.cummax(torch.where(start, pos, 0), dim=1).values
    keys = ids.long() * mult + (pos - first)
    return torch.where(pos < lens[:, None].long(), keys, -1)


def _chunks(n_rows: int, width: int):
    step = max(1, KEY_CHUNK // max(1, width))
    return [(r, min(n_rows, r + step)) for r in range(0, n_rows, step)]


def key_columns(ids_a, len_a, ids_b=None, len_b=None) -> KeyColumns:
    """Columns of the occurrence keys of sorted id lists (see the module docstring).

    Arguments:
        ids_a, len_a: ``int32 [Na, Wa]`` sorted ids (``kmer_ids``) and ``int32 [Na]`` lengths.
        ids_b, len_b: the second set, or ``None`` for all pairs within the first.

    Returns:
        :class:`KeyColumns` on the device of ``ids_a``.
    """
    sets = [(ids_a, len_a)] if ids_b is None else [(ids_a, len_a), (ids_b, len_b)]
    mult = max(ids.shape[1] for ids, _ in sets) + 1  # more than any id's copies in a row
    uniq = []
    for ids, lens in sets:
        for r0, r1 in _chunks(ids.shape[0], ids.shape[1]):
            keys = _keys(ids[r0:r1], lens[r0:r1], mult)
            uniq.append(torch.unique(keys[keys >= 0]))
    dev = ids_a.device
    table = torch.unique(torch.cat(uniq)) if uniq else torch.zeros(0, dtype=torch.int64, device=dev)
    out = []
    for ids, lens in sets:
        cols = torch.empty(ids.shape, dtype=torch.int32, device=dev)
        for r0, r1 in _chunks(ids.shape[0], ids.shape[1]):
            keys = _keys(ids[r0:r1], lens[r0:r1], mult)
            col = torch.searchsorted(table, keys.clamp(min=0)).to(torch.int32)
            cols[r0:r1] = torch.where(keys >= 0, col, -1)
        out += [cols, lens.to(device=dev, dtype=torch.int32).contiguous()]
    if ids_b is None:
        out += out
    return KeyColumns(*out, k=int(table.numel()))


def tile_bytes(tm: int, tn: int, k: int, width: int, method: str, symmetric: bool) -> int:
    k_pad = _round_up(max(k, 1), ALIGN)
    out = 8 * tm * tn  # the caller may hold the last tile while the next one is made
    if method == "cpu":
        return out
    strips = _round_up(tn, ALIGN) * k_pad
    if method == "matrix":
        strips += _round_up(tm, ALIGN) * k_pad
    return out + strips + SCATTER_BYTES * width * (tm + tn)


def _grow(x: int, limit: int, step: int, fits) -> int:
    """The largest ``x + i * step`` (or ``limit``) that ``fits``, by bisection."""
    lo, hi = 0, -(-(limit - x) // step)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fits(min(limit, x + mid * step)):
            lo = mid
        else:
            hi = mid - 1
    return min(limit, x + lo * step)


class TilePlan(NamedTuple):
    """Tile sides (``tm`` rows of a, ``tn`` rows of b) and the bytes one tile needs."""

    tm: int
    tn: int
    needed: int


def plan_tiles(na, nb, k, width, budget, method, symmetric) -> TilePlan:
    """The largest tiles that fit ``budget`` bytes, sides at most :data:`MAX_TILE` (square
    ones for all pairs within a set).

    Arguments:
        na, nb: rows of a and b.
        k: key columns (ignored by ``method="cpu"``, which needs only the output tile).
        width: the longest id list.
        budget: bytes.
        method: ``"matrix"``, ``"lists"`` or ``"cpu"``.
        symmetric: all pairs within one set.

    Raises:
        ResourceError: not even a tile of ``min(n, TILE_STEP)`` rows a side fits.
    """
    step = TILE_STEP

    def fits(tm: int, tn: int) -> bool:
        return tile_bytes(tm, tn, k, width, method, symmetric) <= budget

    lo = (min(na, step), min(nb, step))
    if not fits(*lo):
        raise ResourceError(
            f"a {lo[0]} x {lo[1]} tile of shared k-mer counts over {k} key columns",
            tile_bytes(*lo, k, width, method, symmetric),
            budget,
            "free device memory, or count on the CPU (backend='cpu')",
        )
    side = step
    while (
        2 * side <= MAX_TILE and side < max(na, nb) and fits(min(na, 2 * side), min(nb, 2 * side))
    ):
        side *= 2
    tm, tn = min(na, side), min(nb, side)
    if not symmetric:
        # a short side leaves room for a longer other one (N x n blocks)
        tn = _grow(tn, min(nb, MAX_TILE), step, lambda x: fits(tm, x))
        tm = _grow(tm, min(na, MAX_TILE), step, lambda x: fits(x, tn))
    return TilePlan(tm, tn, tile_bytes(tm, tn, k, width, method, symmetric))


def _limit(plan: TilePlan, tile: int | None) -> TilePlan:
    if tile is None:
        return plan
    if isinstance(tile, bool) or not isinstance(tile, int) or tile < 1:
        raise ArgumentError(f"Invalid value for `tile` argument: {tile!r}; use an int >= 1")
    return plan._replace(tm=min(plan.tm, tile), tn=min(plan.tn, tile))


def _strip(cols, r0: int, r1: int, k_pad: int, rows_pad: int, transpose: bool) -> torch.Tensor:
    """Indicator of rows ``r0:r1``: ``int8 [rows_pad, k_pad]`` (or its transpose)."""
    c = cols[r0:r1]
    rows = torch.arange(r1 - r0, device=c.device)[:, None].expand_as(c)
    valid = c >= 0
    if transpose:
        flat = c[valid].long() * rows_pad + rows[valid]
        x = torch.zeros(k_pad * rows_pad, dtype=torch.int8, device=c.device)
    else:
        flat = rows[valid] * k_pad + c[valid].long()
        x = torch.zeros(rows_pad * k_pad, dtype=torch.int8, device=c.device)
    x[flat] = 1
    return x.view(k_pad, rows_pad) if transpose else x.view(rows_pad, k_pad)


def _check_method(method, policy: ExecutionPolicy | None) -> str:
    if method is None:
        method = (policy or ExecutionPolicy()).kmer_method
    if method not in METHODS:
        raise ArgumentError(f"Invalid value for `method` argument: {method!r}; use {METHODS}")
    return method


def count_tiles(
    ids_a,
    len_a,
    ids_b=None,
    len_b=None,
    *,
    backend: str = "triton",
    method: str | None = None,
    budget: MemoryBudget | int | None = None,
    tile: int | None = None,
    config=None,
    policy: ExecutionPolicy | None = None,
) -> Iterator[tuple[int, int, torch.Tensor]]:
    """Shared counts ``[Na, Nb]`` of sorted id lists, tile by tile.

    Arguments:
        ids_a, len_a: ``int32 [Na, Wa]`` sorted ids (``kmer_ids``) and ``int32 [Na]`` lengths,
            on the device to count on.
        ids_b, len_b: the second set, or ``None`` for all pairs within the first: then only
            tiles with ``c0 >= r0`` are yielded (their mirror images are the transposes), and
            the tiles are square with equal boundaries on both sides.
        backend: ``"triton"`` (kernels, or their interpreter on CPU tensors) or ``"cpu"``
            (the numba twin on each tile).
        method: ``"matrix"`` or ``"lists"`` (Triton only; ``None``: the policy's
            ``kmer_method``).
        budget: bytes a tile may use, or a :class:`~torchmsa.config.MemoryBudget` (``None``:
            the default one) whose limit on the device applies.
        tile: at most this many rows a tile side (tests and benchmarks force small tiles).
        config: a ``GEMM_CONFIGS`` entry for the ``matrix`` method (benchmarks).
        policy: the :class:`~torchmsa.config.ExecutionPolicy` (``None``: the default).

    Yields:
        ``(r0, c0, tile)``: ``tile`` is ``int32 [tm, tn]``, the counts of rows ``r0 : r0 + tm``
        of a and ``c0 : c0 + tn`` of b, on the device of ``ids_a`` (a fresh tensor each time).

    Raises:
        ResourceError: not even the smallest tile fits the budget.
    """
    symmetric = ids_b is None
    if symmetric:
        ids_b, len_b = ids_a, len_a
    dev = ids_a.device
    budget = budget_bytes(budget, dev)
    na, nb = ids_a.shape[0], ids_b.shape[0]
    width = max(ids_a.shape[1], ids_b.shape[1])
    if backend == "cpu":
        plan = _limit(plan_tiles(na, nb, 0, width, budget, "cpu", symmetric), tile)
        for r0 in range(0, na, plan.tm):
            r1 = min(na, r0 + plan.tm)
            for c0 in range(r0 if symmetric else 0, nb, plan.tn):
                c1 = min(nb, c0 + plan.tn)
                if symmetric and c0 == r0:
                    tile = cpu_kmer.shared_counts(ids_a[r0:r1], len_a[r0:r1])
                else:
                    tile = cpu_kmer.shared_counts(
                        ids_a[r0:r1], len_a[r0:r1], ids_b[c0:c1], len_b[c0:c1]
                    )
                yield r0, c0, tile.to(dev)
        return
    from torchmsa._triton import kmer as tk

    method = _check_method(method, policy)
    kc = key_columns(ids_a, len_a, None if symmetric else ids_b, None if symmetric else len_b)
    plan = _limit(plan_tiles(na, nb, kc.k, width, budget, method, symmetric), tile)
    k_pad = _round_up(max(kc.k, 1), ALIGN)
    for r0 in range(0, na, plan.tm):
        r1 = min(na, r0 + plan.tm)
        xa = None
        if method == "matrix":
            xa = _strip(kc.cols_a, r0, r1, k_pad, _round_up(r1 - r0, ALIGN), False)
        for c0 in range(r0 if symmetric else 0, nb, plan.tn):
            c1 = min(nb, c0 + plan.tn)
            diagonal = symmetric and c0 == r0
            tile = torch.empty((r1 - r0, c1 - c0), dtype=torch.int32, device=dev)
            if method == "matrix":
                rows_pad = _round_up(c1 - c0, ALIGN)
                xb = xa if diagonal else _strip(kc.cols_b, c0, c1, k_pad, rows_pad, False)
                tk.gemm_tile(xa, xb, tile, r1 - r0, c1 - c0, diagonal, config)
            else:
                xb = _strip(kc.cols_b, c0, c1, max(kc.k, 1), _round_up(c1 - c0, 16), True)
                tk.lists_tile(kc.cols_a[r0:r1], kc.n_a[r0:r1], xb, tile, c1 - c0, diagonal)
            if diagonal:
                tk.mirror_lower(tile, r1 - r0)
            del xb  # freed before the next strip is built
            yield r0, c0, tile
            del tile


def full_counts(
    ids_a,
    len_a,
    ids_b=None,
    len_b=None,
    *,
    backend: str = "triton",
    method: str | None = None,
    budget: MemoryBudget | int | None = None,
    tile: int | None = None,
    policy: ExecutionPolicy | None = None,
) -> torch.Tensor:
    """The whole ``int32 [Na, Nb]`` matrix of :func:`count_tiles` (arguments as there), on the
    device of ``ids_a``.

    Raises:
        ResourceError: the matrix itself, or the matrix and one tile, do not fit the budget
            (stream with :func:`count_tiles` instead, or build the guide tree with PartTree).
    """
    dev = ids_a.device
    na = ids_a.shape[0]
    nb = na if ids_b is None else ids_b.shape[0]
    budget = budget_bytes(budget, dev)
    needed = 4 * na * nb
    if needed > budget:
        raise ResourceError(
            f"the {na} x {nb} int32 matrix of shared k-mer counts",
            needed,
            budget,
            "stream it with torchmsa.ops.kmer_stream.count_tiles, or use a PartTree guide tree "
            "(torchmsa.parttree), which needs only N x n blocks",
        )
    out = torch.empty((na, nb), dtype=torch.int32, device=dev)
    tiles = count_tiles(
        ids_a,
        len_a,
        ids_b,
        len_b,
        backend=backend,
        method=method,
        budget=budget - needed,
        tile=tile,
        policy=policy,
    )
    for r0, c0, tile in tiles:
        out[r0 : r0 + tile.shape[0], c0 : c0 + tile.shape[1]] = tile
        if ids_b is None and c0 != r0:
            out[c0 : c0 + tile.shape[1], r0 : r0 + tile.shape[0]] = tile.T
    return out
