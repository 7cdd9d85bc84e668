"""Which stages a job goes through: its mode (``auto``'s rules), its first guide tree, and
whether default mode aligns it a second time."""

from __future__ import annotations

from torchmsa.config import AutoConfig, TreeConfig

__all__ = ["resolve_mode", "first_tree_method", "linkage", "second_pass"]


def resolve_mode(mode: str, n: int, longest: int, *, config: AutoConfig | None = None) -> str:
    """The mode a job of ``n`` sequences, the longest ``longest`` residues, runs in:
    ``mode`` itself unless it is ``"auto"``, which picks accurate up to
    ``config.accurate_max_n`` sequences of at most ``config.accurate_max_len`` residues, else
    default up to ``config.default_max_n`` sequences, else fast."""
    if mode != "auto":
        return mode
    config = AutoConfig() if config is None else config
    if n <= config.accurate_max_n and longest <= config.accurate_max_len:
        return "accurate"
    return "default" if n <= config.default_max_n else "fast"


def linkage(tree: str) -> str:
    """The linkage of trees built from alignment or library distances."""
    return "upgma_mafft" if tree in ("auto", "parttree", "lcs") else tree


def first_tree_method(n: int, mode: str, *, config: TreeConfig | None = None) -> str:
    """The first guide tree of a job of ``n`` sequences in ``mode`` (fast or default):
    ``config.method``, where ``"auto"`` is PartTree above ``config.parttree_min_n``
    sequences, single linkage on LCS distances (``"lcs"``, streamed: no N x N matrix) above
    ``config.lcs_min_n``, else :func:`linkage`'s (decision 0042: the LCS tree wins in fast
    mode too, on sets it was not chosen on)."""
    config = TreeConfig() if config is None else config
    tree = config.method
    if tree == "parttree" or (tree == "auto" and n > config.parttree_min_n):
        return "parttree"
    if tree == "lcs" or (tree == "auto" and n > config.lcs_min_n):
        return "lcs"
    return linkage(tree)


def second_pass(mode: str, method: str) -> bool:
    """Default mode re-trees from its first alignment, except after an LCS tree or PartTree
    (chosen where the second tree's N x N matrix would be too large)."""
    return mode == "default" and method not in ("lcs", "parttree")
