"""Plain-Python reference DP for tiny inputs: full H/E/F matrices, the documented tie rule."""

from __future__ import annotations

NEG = float("-inf")


def dp_matrices(S, open_a, close_a, open_b, close_b, ext, mode):
    """Fill H, E, F (lists of lists) for score matrix ``S`` (n x m lists) and boundary costs."""
    n = len(S)
    m = len(S[0]) if n else len(open_b) - 1
    H = [[0] * (m + 1) for _ in range(n + 1)]
    E = [[NEG] * (m + 1) for _ in range(n + 1)]
    F = [[NEG] * (m + 1) for _ in range(n + 1)]
    for j in range(1, m + 1):
        if mode == "global":
            E[0][j] = -(open_a[0] + (j - 1) * ext)
            H[0][j] = E[0][j] - close_a[0]
    for i in range(1, n + 1):
        if mode == "global":
            F[i][0] = -(open_b[0] + (i - 1) * ext)
            H[i][0] = F[i][0] - close_b[0]
        for j in range(1, m + 1):
            E[i][j] = max(E[i][j - 1] - ext, H[i][j - 1] - open_a[i])
            F[i][j] = max(F[i - 1][j] - ext, H[i - 1][j] - open_b[j])
            h = max(H[i - 1][j - 1] + S[i - 1][j - 1], F[i][j] - close_b[j], E[i][j] - close_a[i])
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


def align(S, open_a, close_a, open_b, close_b, ext, mode):
    """``(score, ops, start, end)`` by the tie rule of ``torchmsa/cpu/dp.py``."""
    H, E, F = dp_matrices(S, open_a, close_a, open_b, close_b, ext, mode)
    n, m = len(H) - 1, len(H[0]) - 1
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
            state = "F" if H[i][j] == F[i][j] - close_b[j] else "E"
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
