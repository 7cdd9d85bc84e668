"""Filtering and subsampling rows of an MSA: hhfilter-like filters and diverse selection.

:func:`filter_rows` applies, as HH-suite's ``hhfilter`` does, first the per-row filters
against the query (``min_coverage``, ``min_query_identity``), then the redundancy filter
``max_identity``: rows are visited query first, then in input order, and a row is kept when its
identity to every row kept before it is at most ``max_identity``; ``max_seqs`` then keeps the
first rows of that order. The query is always kept.

:func:`select_diverse` is the greedy selection of ESM's MSA Transformer examples
(``greedy_select``): start from the query, then repeatedly add the row whose mean Hamming
distance to the rows chosen so far is largest (``criterion="mean"``; ``"min"`` is the
max-min, farthest-point rule). Distances count the columns whose codes differ (a gap is a
state), ties go to the lowest index, and the result is in input order.
"""

from __future__ import annotations

import torch

from torchmsa.config import MemoryBudget
from torchmsa.errors import ArgumentError
from torchmsa.features.identity import PairIdentity, check_codes

__all__ = ["coverage", "filter_rows", "select_diverse"]

# rows resolved together by the greedy redundancy filter's rounds (the work of one round is
# quadratic in it, and a chain of similar rows can take as many rounds)
_ROUND_ROWS = 256


def _check_query(query: int, n: int) -> int:
    if isinstance(query, bool) or not isinstance(query, int) or not -n <= query < n:
        raise ArgumentError(
            f"Invalid value for `query` argument: {query!r}; use a row index in 0..{n - 1}"
        )
    return query % n


def _check_fraction(name: str, value) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise ArgumentError(
            f"Invalid value for `{name}` argument: {value!r}; use a fraction in 0..1 or None"
        )
    return float(value)


def coverage(codes: torch.Tensor, gap_code: int, query: int = 0) -> torch.Tensor:
    """``float64 [N]``: the fraction of the query's residues that face a residue of each row
    (0 for every row when the query has none)."""
    check_codes(codes, gap_code)
    query = _check_query(query, codes.shape[0])
    res = codes != gap_code
    q = res[query]
    both = (res & q[None, :]).sum(1).double()
    return both / max(int(q.sum()), 1)


def _greedy_block(sim: torch.Tensor, dropped: torch.Tensor) -> torch.Tensor:
    """Kept rows of one block: row i is kept when no earlier row of the block it is similar
    to (``sim [b, b]``) is kept. Each round decides every row whose earlier similar rows are
    all decided; ``dropped`` rows are decided already."""
    earlier = torch.tril(sim, diagonal=-1)
    undecided = ~dropped
    kept = torch.zeros_like(dropped)
    while bool(undecided.any()):
        open_or_kept = (undecided | kept)[None, :]
        blocked = (earlier & open_or_kept).any(1)
        has_kept = (earlier & kept[None, :]).any(1)
        newly_kept = undecided & ~blocked
        newly_dropped = undecided & has_kept
        kept |= newly_kept
        undecided &= ~(newly_kept | newly_dropped)
    return kept


def _redundancy(pairs: PairIdentity, order: torch.Tensor, max_identity: float) -> torch.Tensor:
    """The positions of ``order`` kept by the greedy ``max_identity`` filter."""
    codes = pairs.codes
    kept_rows = torch.zeros(0, dtype=torch.long, device=codes.device)
    keep = torch.zeros(order.numel(), dtype=torch.bool, device=codes.device)
    t = pairs.rows
    for s0 in range(0, order.numel(), t):
        rows = order[s0 : s0 + t]
        block = codes[rows]
        dropped = torch.zeros(rows.numel(), dtype=torch.bool, device=codes.device)
        for k0 in range(0, kept_rows.numel(), t):
            other = codes[kept_rows[k0 : k0 + t]]
            dropped |= (pairs.between(block, other) > max_identity).any(1)
        sim = pairs.between(block, block) > max_identity
        kept_here = torch.zeros_like(dropped)
        for r0 in range(0, rows.numel(), _ROUND_ROWS):
            r1 = min(rows.numel(), r0 + _ROUND_ROWS)
            pre = dropped[r0:r1] | (sim[r0:r1, :r0] & kept_here[None, :r0]).any(1)
            kept_here[r0:r1] = _greedy_block(sim[r0:r1, r0:r1], pre)
        keep[s0 : s0 + rows.numel()] = kept_here
        kept_rows = torch.cat([kept_rows, rows[kept_here]])
    return keep


def filter_rows(
    codes: torch.Tensor,
    gap_code: int,
    *,
    max_identity: float | None = None,
    min_coverage: float | None = None,
    min_query_identity: float | None = None,
    max_seqs: int | None = None,
    query: int = 0,
    definition: str = "aligned",
    budget: MemoryBudget | int | None = None,
    compute_dtype: torch.dtype | None = None,
) -> torch.Tensor:
    """The rows an hhfilter-like filter keeps (module docstring).

    Arguments:
        codes: ``[N, C]`` residue codes, ``gap_code`` for gaps.
        gap_code: the alphabet's gap code.
        max_identity: drop a row more identical than this to a row kept before it (hhfilter
            ``-id``, as a fraction).
        min_coverage: drop a row that covers less than this fraction of the query's residues
            (hhfilter ``-cov``).
        min_query_identity: drop a row less identical than this to the query (``-qid``).
        max_seqs: keep at most this many rows (query first, then input order).
        query: the query row.
        definition: the identity (:data:`~torchmsa.features.identity.DEFINITIONS`).
        budget, compute_dtype: as :func:`~torchmsa.features.weights.sequence_weights`.

    Returns:
        ``int64 [K]`` indices of the kept rows, ascending, on the codes' device.
    """
    check_codes(codes, gap_code)
    n = codes.shape[0]
    query = _check_query(query, n)
    max_identity = _check_fraction("max_identity", max_identity)
    min_coverage = _check_fraction("min_coverage", min_coverage)
    min_query_identity = _check_fraction("min_query_identity", min_query_identity)
    if max_seqs is not None and (
        isinstance(max_seqs, bool) or not isinstance(max_seqs, int) or max_seqs < 1
    ):
        raise ArgumentError(
            f"Invalid value for `max_seqs` argument: {max_seqs!r}; use a positive count or None"
        )
    device = codes.device
    ok = torch.ones(n, dtype=torch.bool, device=device)
    if min_coverage is not None:
        ok &= coverage(codes, gap_code, query) >= min_coverage
    pairs = None
    if min_query_identity is not None or max_identity is not None:
        pairs = PairIdentity(
            codes, gap_code, definition, budget=budget, compute_dtype=compute_dtype
        )
    if min_query_identity is not None:
        ident = torch.cat(
            [
                pairs.between(codes[query : query + 1], codes[j0 : j0 + pairs.rows])
                for j0 in range(0, n, pairs.rows)
            ],
            dim=1,
        )[0]
        ok &= ident >= min_query_identity
    ok[query] = True
    rest = torch.nonzero(ok).reshape(-1)
    rest = rest[rest != query]
    order = torch.cat([torch.tensor([query], device=device), rest])
    if max_identity is not None:
        order = order[_redundancy(pairs, order, max_identity)]
    if max_seqs is not None:
        order = order[:max_seqs]
    return torch.sort(order).values


def select_diverse(
    codes: torch.Tensor, n: int, *, criterion: str = "mean", query: int = 0
) -> torch.Tensor:
    """Greedy maximum-diversity selection of ``n`` rows (module docstring).

    Arguments:
        codes: ``[N, C]`` residue codes (any integer codes: a gap is one more state).
        n: how many rows to keep; every row when ``N <= n``.
        criterion: ``"mean"`` (ESM's ``greedy_select``) or ``"min"`` (max-min distance).
        query: the first row chosen.

    Returns:
        ``int64 [min(n, N)]`` indices, ascending, on the codes' device.
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ArgumentError(f"Invalid value for `n` argument: {n!r}; use a positive count")
    if criterion not in ("mean", "min"):
        raise ArgumentError(
            f"Invalid value for `criterion` argument: {criterion!r}; use 'mean' or 'min'"
        )
    total = codes.shape[0]
    query = _check_query(query, total)
    device = codes.device
    if total <= n:
        return torch.arange(total, device=device)
    chosen = torch.zeros(total, dtype=torch.bool, device=device)
    picks = [torch.tensor(query, device=device)]
    chosen[query] = True
    score = None
    for _ in range(n - 1):
        dist = (codes != codes[picks[-1]][None, :]).sum(1)  # [N] int64
        if score is None:
            score = dist
        elif criterion == "mean":
            score = score + dist
        else:
            score = torch.minimum(score, dist)
        pick = torch.argmax(torch.where(chosen, -1, score))
        chosen[pick] = True
        picks.append(pick)
    return torch.sort(torch.stack(picks)).values
