"""What a family costs: the estimate that orders the families and cuts them into chunks.

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
The model only orders the families and sizes the chunks that the ranks claim
(:func:`torchmsa.distributed.claims.guided`); the results never depend on it, and its errors
no longer decide how long the slowest rank runs (decision 0063: shares fixed by it in
advance, LPT, left 4 ranks 1.22 times apart). Within one shared job, where every rank must
know every share without a meeting, the parts are dealt by :func:`deal`.
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["cost_rule", "deal", "family_cost", "text_shape"]


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


def deal(costs: list[int], size: int) -> list[int]:
    """Each item's rank: costliest first (ties by index), to the least loaded rank (ties to
    the lowest): the LPT deal of one shared job's groups and subtrees (decision 0068), where
    every rank must compute the same shares without a meeting.

    >>> deal([5, 3, 3, 1], 2)
    [0, 1, 1, 0]
    """
    load = [0] * size
    out = [0] * len(costs)
    for i in sorted(range(len(costs)), key=lambda i: (-costs[i], i)):
        r = min(range(size), key=lambda k: (load[k], k))
        out[i] = r
        load[r] += costs[i]
    return out
