"""What a family costs, and which rank aligns it.

The cost model (:func:`family_cost`) is in units of ``N x L^1.5`` (``N`` sequences, ``L`` the
longest), by the passes the pipeline makes:

=============================================  =============================================
the family                                     cost
=============================================  =============================================
accurate mode (all pairs aligned twice)        ``0.4 x N^2 x L^1.5``
default mode, two passes and refinement        ``3 x N x L^1.5 + 0.2 x N^2``
default mode above ``lcs_min_n`` (one pass     ``N x L^1.5 + 1.5 x N^2``
after an LCS tree), fast mode with LCS
fast mode (6-mer tree; PartTree: no N^2)       ``N x L^1.5 + 0.2 x N^2``
=============================================  =============================================

plus ``N x L`` for reading and encoding. The exponents and weights were fitted to single
alignments on a CPU and checked against an H100's (decision record 0039): within a factor of
about 1.5 on the CPU and 2 on the GPU for 50 to 2,000 sequences of 100 to 500 residues, where
``N x L^2`` for every mode (the worker's placement rule) is off by 3 to 5 times between modes.
The model only has to order families and balance sums; the results never depend on it.

:func:`partition` is LPT (longest processing time first, Graham 1969): families by falling
cost, ties by input index, each to the rank with the least cost so far, ties by rank index.
Every rank that computes it from the same costs gets the same shares. The largest share
exceeds the mean ``sum / ranks`` by less than the largest single family, and is at most 4/3
of the best partition's largest share (Graham's bound).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Sequence

from torchmsa.errors import ArgumentError

__all__ = ["cost_rule", "family_cost", "partition", "text_shape"]


def family_cost(n: int, longest: int, mode: str, tree: str = "upgma_mafft") -> float:
    """The estimated work of one family of ``n`` sequences, the longest ``longest`` residues,
    aligned in ``mode`` (``"fast"``, ``"default"`` or ``"accurate"``) after a first guide tree
    made by ``tree`` (:func:`torchmsa.pipeline.modes.first_tree_method`'s answer). See the
    module docstring.

    >>> family_cost(300, 100, "default") == 3 * 300 * 100**1.5 + 0.2 * 300**2 + 300 * 100
    True
    >>> family_cost(150, 250, "accurate") > family_cost(2000, 250, "default", "lcs")
    True
    """
    n, longest = max(0, int(n)), max(0, int(longest))
    body = n * float(longest) ** 1.5
    if mode == "accurate":
        work = 0.4 * n * body
    else:
        passes = 3.0 if mode == "default" and tree not in ("lcs", "parttree") else 1.0
        pairs = {"lcs": 1.5, "parttree": 0.0}.get(tree, 0.2)
        work = passes * body + pairs * n * n
    return work + float(n * longest)


def cost_rule(config) -> Callable[[int, int], float]:
    """``(n, longest) -> cost`` under an :class:`~torchmsa.config.AlignConfig` (``None``: the
    defaults): the mode and first guide tree each family gets, as the pipeline decides them.

    >>> cost_rule(None)(150, 250) == family_cost(150, 250, "accurate")
    True
    """
    from torchmsa.config import AlignConfig
    from torchmsa.pipeline.modes import first_tree_method, resolve_mode

    config = AlignConfig() if config is None else config

    def cost(n: int, longest: int) -> float:
        mode = resolve_mode(config.mode, n, longest, config=config.auto)
        tree = "" if mode == "accurate" else first_tree_method(n, mode, config=config.tree)
        return family_cost(n, longest, mode, tree)

    return cost


def partition(costs: Sequence[float], ranks: int) -> list[list[int]]:
    """Each rank's share of the items (indices into ``costs``, in input order), by LPT.

    >>> partition([5, 1, 4, 2, 3], 2)
    [[0, 1, 3], [2, 4]]
    """
    if isinstance(ranks, bool) or not isinstance(ranks, int) or ranks < 1:
        raise ArgumentError(f"Invalid value for `ranks` argument: {ranks!r}; give 1 or more")
    costs = [float(c) for c in costs]
    bad = next((i for i, c in enumerate(costs) if not (math.isfinite(c) and c >= 0)), None)
    if bad is not None:
        raise ArgumentError(
            f"Invalid value for `costs` argument: item {bad} costs {costs[bad]!r}; every cost "
            f"must be a finite number, 0 or more"
        )
    shares: list[list[int]] = [[] for _ in range(ranks)]
    loads = [(0.0, r) for r in range(ranks)]  # a heap of (load, rank): least load, then rank
    for i in sorted(range(len(costs)), key=lambda i: (-costs[i], i)):
        load, r = heapq.heappop(loads)
        shares[r].append(i)
        heapq.heappush(loads, (load + costs[i], r))
    return [sorted(s) for s in shares]


def text_shape(text: str) -> tuple[int, int]:
    """``(sequences, longest)`` of an input file's text, for the cost model only: FASTA (and
    A2M / A3M) is counted without parsing (gap characters count as residues); other formats
    are read. An unreadable text gives ``(0, 0)``; aligning it reports why.

    >>> text_shape(">a\\nMKV\\nLA\\n>b desc\\nMK\\n")
    (2, 5)
    """
    body = text.lstrip("\ufeff \t\r\n")
    if body.startswith(">"):
        n, longest = 0, 0
        for record in body[1:].split("\n>"):
            _, _, seq = record.partition("\n")
            size = len(seq) - seq.count("\n") - seq.count("\r") - seq.count(" ")
            n, longest = n + 1, max(longest, size)
        return n, longest
    import io

    from torchmsa.io import read_sequences

    try:
        records = read_sequences(io.StringIO(text))
    except Exception:  # noqa: BLE001 - the owner rank reports the error when it aligns
        return 0, 0
    return len(records), max((len(r.seq) for r in records), default=0)
