"""Newick text: quoting names for :meth:`torchmsa.tree.Tree.newick`, and reading a rooted
binary tree back (:func:`from_newick`)."""

from __future__ import annotations

import re

import numpy as np

from torchmsa.errors import ArgumentError

__all__ = ["quote", "parse_newick"]

_SPECIAL = re.compile(r"[\s()\[\]':;,]")


def quote(name: str) -> str:
    """``name`` as a Newick label: single-quoted (quotes doubled) where it is empty or holds
    whitespace or any of ``()[]':;,``."""
    if name and not _SPECIAL.search(name):
        return name
    return "'" + name.replace("'", "''") + "'"


_TOKEN = re.compile(r"\s+|\[[^\]]*\]|'(?:[^']|'')*'|[(),:;]|[^\s()\[\]':;,]+")


def _newick_error(text: str, pos: int, what: str) -> ArgumentError:
    return ArgumentError(
        f"cannot read Newick at character {pos + 1} ({text[pos : pos + 20]!r}): {what}"
    )


def parse_newick(text: str, names: list[str]):
    """Read a rooted binary Newick tree (as :meth:`~torchmsa.tree.Tree.newick` writes it).

    Leaves are matched to ``names`` by label, so leaf i of the result is ``names[i]``; quoted
    labels, ``[...]`` comments, internal node labels (ignored) and missing lengths (0) are
    accepted. The root's length is ignored.

    Arguments:
        text: the Newick string.
        names: the sequence names, each once.

    Returns:
        ``(children, lengths)``: the arrays :class:`~torchmsa.tree.Tree` is made of
        (:func:`torchmsa.tree.from_newick` makes the tree).

    Raises:
        ArgumentError: the text is not Newick, a node does not have exactly two children, a
            label is not in ``names`` (or repeats), a name is missing from the tree, or
            ``names`` repeats a name.
    """
    names = [str(x) for x in names]
    index = {name: i for i, name in enumerate(names)}
    if len(index) != len(names):
        dup = next(x for i, x in enumerate(names) if index[x] != i)
        raise ArgumentError(
            f"`names` holds {dup!r} more than once; leaves are matched by name, so names must "
            f"be unique to read a tree"
        )
    n = len(names)
    children = np.zeros((max(n - 1, 0), 2), np.int64)
    lengths = np.zeros(max(2 * n - 1, 1))
    frames: list[list[int]] = [[]]
    last = -1  # the node just completed, -1 at the start of a subtree
    seen = np.zeros(n, np.bool_)
    closed = 0
    ended = False
    pos = end = 0
    for m in _TOKEN.finditer(text):
        if m.start() != end:
            break
        tok, pos, end = m.group(), m.start(), m.end()
        if tok.isspace() or tok.startswith("["):
            continue
        if ended:
            raise _newick_error(text, pos, "text after the closing ';'")
        if tok == "(":
            if last != -1:
                raise _newick_error(text, pos, "'(' after a complete subtree; a ',' is missing")
            frames.append([])
        elif tok == ",":
            if last == -1 or len(frames) == 1:
                raise _newick_error(text, pos, "an empty subtree or a ',' outside parentheses")
            last = -1
        elif tok == ")":
            if last == -1 or len(frames) == 1:
                raise _newick_error(text, pos, "an empty subtree or an unmatched ')'")
            frame = frames.pop()
            if len(frame) != 2 or closed >= n - 1:
                raise _newick_error(
                    text, pos, f"a node with {len(frame)} children; only binary trees are read"
                )
            children[closed] = frame
            last = n + closed
            closed += 1
            frames[-1].append(last)
        elif tok == ":":
            if last == -1:
                raise _newick_error(text, pos, "a branch length without a node")
            last = -2 - last  # the next token is this node's length
        elif tok == ";":
            ended = True
        elif last < -1:
            try:
                lengths[-2 - last] = float(tok)
            except ValueError:
                raise _newick_error(text, pos, f"branch length {tok!r} is not a number") from None
            last = -2 - last
        elif last >= n:
            continue  # an internal node's label
        elif last != -1:
            raise _newick_error(text, pos, "two labels in a row")
        else:
            label = tok[1:-1].replace("''", "'") if tok.startswith("'") else tok
            if label not in index:
                raise _newick_error(text, pos, f"leaf {label!r} is not one of `names`")
            leaf = index[label]
            if seen[leaf]:
                raise _newick_error(text, pos, f"leaf {label!r} occurs twice")
            seen[leaf] = True
            last = leaf
            frames[-1].append(leaf)
    if end != len(text):
        raise _newick_error(text, end, "an unterminated quote or comment, or a stray ']'")
    if len(frames) != 1 or len(frames[0]) != 1 or last < 0:
        raise _newick_error(text, pos, "unbalanced parentheses or more than one tree")
    if closed != n - 1:
        raise ArgumentError(
            f"the Newick tree has {closed + 1} leaves but `names` holds {n}; every name must "
            f"label exactly one leaf"
        )
    lengths[frames[0][0]] = 0.0
    return children, lengths
