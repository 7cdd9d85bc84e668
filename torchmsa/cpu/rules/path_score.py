"""The score of a given path (twin of :func:`torchmsa.ops.rules.path_score.path_scores`),
by the DP's global-mode rules (:mod:`torchmsa.cpu.dp`)."""

from __future__ import annotations

from numba import njit

from torchmsa.constants import OP_LEFT, OP_MATCH, OP_UP
from torchmsa.cpu.rules.facing import facing

__all__ = ["path_score", "path_gaps"]


@njit(cache=True, nogil=True)
def path_score(S, open_a, close_a, open_b, close_b, res_a, res_b, ext, ops, n_ops):
    """Global-mode score of the path ``ops[:n_ops]`` through ``S`` (as the DP would score it):
    the scores of the cells it pairs plus :func:`path_gaps`."""
    score = 0
    i = 0
    j = 0
    for k in range(n_ops):
        op = ops[k]
        if op == OP_MATCH:
            score += S[i, j]
        i += op != OP_LEFT
        j += op != OP_UP
    return score + path_gaps(open_a, close_a, open_b, close_b, res_a, res_b, ext, ops, n_ops)


@njit(cache=True, nogil=True, inline="always")
def path_gaps(open_a, close_a, open_b, close_b, res_a, res_b, ext, ops, n_ops):
    """The gap costs of the path ``ops[:n_ops]`` (negative), by the DP's global-mode rules.

    A run of gaps at one boundary pays its opening cost at the first column it faces and its
    closing cost at the last (each scaled by that column's residue factor). Between two of its
    columns it pays ``ext``, or closing and reopening there when that is cheaper (the DP takes
    the better), except in a leading run along row 0 or column 0, whose cost the DP's boundary
    fixes at ``open + close + (k - 1) * ext``.
    """
    score = 0
    i = 0
    j = 0
    k = 0
    while k < n_ops:
        op = ops[k]
        if op == OP_MATCH:
            i += 1
            j += 1
            k += 1
            continue
        lead = k == 0
        run = 0
        while k < n_ops and ops[k] == op:
            run += 1
            k += 1
        if op == OP_UP:
            o, c, res, first = open_b[j], close_b[j], res_a, i + 1
            i += run
        else:
            o, c, res, first = open_a[i], close_a[i], res_b, j + 1
            j += run
        score -= facing(o, res[first]) + facing(c, res[first + run - 1])
        for x in range(first, first + run - 1):
            step = ext
            if not lead:
                step = min(ext, facing(c, res[x]) + facing(o, res[x + 1]))
            score -= step
    return score
