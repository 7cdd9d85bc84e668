"""Plain-Python reference DP for tiny inputs: full H/E/F matrices, the documented tie rule."""

from __future__ import annotations

from torchmsa.constants import OP_MATCH, OP_UP

NEG = float("-inf")
ONE = 256  # residue factor of a column without gaps


def facing(cost, res):
    """A gap cost scaled by the residue fraction res / 256 of the column it faces, floored."""
    return cost * res // ONE


def dp_matrices(S, open_a, close_a, open_b, close_b, ext, mode, res_a=None, res_b=None):
    """Fill H, E, F (lists of lists) for score matrix ``S`` (n x m lists) and boundary costs.

    ``res_a[i]`` / ``res_b[j]`` (default 256) scale the costs of gaps facing row i / column j.
    """
    n = len(S)
    m = len(S[0]) if n else len(open_b) - 1
    ra = res_a if res_a is not None else [ONE] * (n + 1)
    rb = res_b if res_b is not None else [ONE] * (m + 1)
    H = [[0] * (m + 1) for _ in range(n + 1)]
    E = [[NEG] * (m + 1) for _ in range(n + 1)]
    F = [[NEG] * (m + 1) for _ in range(n + 1)]
    for j in range(1, m + 1):
        if mode == "global":
            E[0][j] = -(facing(open_a[0], rb[1]) + (j - 1) * ext)
            H[0][j] = E[0][j] - facing(close_a[0], rb[j])
    for i in range(1, n + 1):
        if mode == "global":
            F[i][0] = -(facing(open_b[0], ra[1]) + (i - 1) * ext)
            H[i][0] = F[i][0] - facing(close_b[0], ra[i])
        for j in range(1, m + 1):
            E[i][j] = max(E[i][j - 1] - ext, H[i][j - 1] - facing(open_a[i], rb[j]))
            F[i][j] = max(F[i - 1][j] - ext, H[i - 1][j] - facing(open_b[j], ra[i]))
            h = max(
                H[i - 1][j - 1] + S[i - 1][j - 1],
                F[i][j] - facing(close_b[j], ra[i]),
                E[i][j] - facing(close_a[i], rb[j]),
            )
            H[i][j] = max(h, 0) if mode == "local" else h
    return H, E, F


def end_cell(H, mode):
    n, m = len(H) - 1, len(H[0]) - 1
    if mode == "global":
        return n, m
    if mode == "local":
        cells = [(i, j) for i in range(n + 1) for j in range(m + 1)]
    else:
        cells = [(i, m) for i in range(n)] + [(n, j) for j in range(m + 1)]
    best = max(H[i][j] for i, j in cells)
    return next((i, j) for i, j in cells if H[i][j] == best)


def align(S, open_a, close_a, open_b, close_b, ext, mode, res_a=None, res_b=None):
    """``(score, ops, start, end)`` by the tie rule of ``torchmsa/cpu/dp.py``."""
    H, E, F = dp_matrices(S, open_a, close_a, open_b, close_b, ext, mode, res_a, res_b)
    n, m = len(H) - 1, len(H[0]) - 1
    ra = res_a if res_a is not None else [ONE] * (n + 1)
    ei, ej = end_cell(H, mode)
    score = H[ei][ej]
    rev = []
    if mode == "semiglobal":
        rev += [2] * (m - ej) + [1] * (n - ei)
    i, j, state = ei, ej, "H"
    while i > 0 and j > 0:
        if state == "H":
            if mode == "local" and H[i][j] <= 0:
                break
            if H[i][j] == H[i - 1][j - 1] + S[i - 1][j - 1]:
                rev.append(0)
                i, j = i - 1, j - 1
                continue
            state = "F" if H[i][j] == F[i][j] - facing(close_b[j], ra[i]) else "E"
        if state == "F":
            rev.append(1)
            state = "F" if F[i][j] == F[i - 1][j] - ext else "H"
            i -= 1
        else:
            rev.append(2)
            state = "E" if E[i][j] == E[i][j - 1] - ext else "H"
            j -= 1
    if mode != "local":
        rev += [2] * j + [1] * i
        i = j = 0
    return score, rev[::-1], (i, j), (ei, ej)


def pair_inputs(a, b, matrix, gap_open, gap_extend):
    """Score matrix and constant boundary costs of a sequence pair given as code lists."""
    S = [[int(matrix[x][y]) for y in b] for x in a]
    return (
        S,
        [gap_open] * (len(a) + 1),
        [0] * (len(a) + 1),
        [gap_open] * (len(b) + 1),
        [0] * (len(b) + 1),
        gap_extend,
    )


def rescore(row_a: str, row_b: str, score_fn, gap_open, gap_extend, mode) -> int:
    """Score gapped rows directly.

    In semiglobal mode a gap is free when it lies before the first or after the last residue of
    the row it is in (Biopython's end gaps).
    """

    def ends(row):
        idx = [k for k, ch in enumerate(row) if ch != "-"]
        return (idx[0], idx[-1]) if idx else (len(row), -1)

    (fa, la), (fb, lb) = ends(row_a), ends(row_b)
    total, prev = 0, None
    for k, (x, y) in enumerate(zip(row_a, row_b)):
        if x == "-" and y == "-":
            raise ValueError("a column of two gaps")
        kind = "a" if x == "-" else "b" if y == "-" else None
        first, last = (fa, la) if kind == "a" else (fb, lb)
        if kind is None:
            total += score_fn(x, y)
        elif mode == "semiglobal" and (k < first or k > last):
            pass
        else:
            total -= gap_extend if prev == kind else gap_open
        prev = kind
    return total


def ops_to_rows(ops, a: str, b: str, start_a: int = 0, start_b: int = 0) -> tuple[str, str]:
    """Gapped rows from traceback ops (0: pair, 1: a vs gap, 2: gap vs b)."""
    ra, rb = [], []
    i, j = start_a, start_b
    for op in ops:
        if op == OP_MATCH:
            ra.append(a[i])
            rb.append(b[j])
            i += 1
            j += 1
        elif op == OP_UP:
            ra.append(a[i])
            rb.append("-")
            i += 1
        else:
            ra.append("-")
            rb.append(b[j])
            j += 1
    return "".join(ra), "".join(rb)
