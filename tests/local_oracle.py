"""Plain-Python Waterman-Eggert, the oracle of best-K local alignment (decision 0038).

Independent of ``torchmsa.cpu``: full matrices as lists, recomputed from scratch for every hit,
the traceback read from the values (not from stored direction bits), and start columns kept by
the decision's rule only for the strip reference. Rows ``i = 1..n`` walk the query, columns
``j = 1..m`` the subject; a forbidden pair ``(i, j)`` has no diagonal move into it.
"""

from __future__ import annotations

NEG = -(1 << 29)
MATCH, UP, LEFT = 0, 1, 2


def fill(q, s, mat, go, ge, forbidden=frozenset(), col0=None, j_first=1):
    """The local affine DP of columns ``j_first .. j_first + len(s) - 1`` from the column before
    them (``col0 = (H, E, SH, SE)`` lists of length ``n + 1``; ``None``: the zero column).

    Returns ``{"H", "E", "F", "SH", "SE", "SF"}``, each ``[n + 1][len(s) + 1]`` (matrix column
    ``c`` is DP column ``j_first - 1 + c``; row 0 is ``H = 0``, ``E = F = NEG``, starts 0).
    """
    n, w = len(q), len(s)
    if col0 is None:
        col0 = ([0] * (n + 1), [NEG] * (n + 1), [0] * (n + 1), [0] * (n + 1))
    M = {key: [[0] * (w + 1) for _ in range(n + 1)] for key in ("H", "E", "F", "SH", "SE", "SF")}
    H, E, F, SH, SE, SF = (M[key] for key in ("H", "E", "F", "SH", "SE", "SF"))
    for i in range(n + 1):
        H[i][0], E[i][0], SH[i][0], SE[i][0] = (col0[t][i] for t in range(4))
        F[i][0] = NEG
    for c in range(w + 1):
        H[0][c], E[0][c], F[0][c], SH[0][c], SE[0][c], SF[0][c] = 0, NEG, NEG, 0, 0, 0
    for i in range(1, n + 1):
        for c in range(1, w + 1):
            j = j_first - 1 + c
            if E[i][c - 1] - ge >= H[i][c - 1] - go:
                E[i][c], SE[i][c] = E[i][c - 1] - ge, SE[i][c - 1]
            else:
                E[i][c], SE[i][c] = H[i][c - 1] - go, SH[i][c - 1]
            if F[i - 1][c] - ge >= H[i - 1][c] - go:
                F[i][c], SF[i][c] = F[i - 1][c] - ge, SF[i - 1][c]
            else:
                F[i][c], SF[i][c] = H[i - 1][c] - go, SH[i - 1][c]
            options = []  # (value, start) in tie order: diagonal, up, left
            if (i, j) not in forbidden:
                diag = H[i - 1][c - 1]
                options.append(
                    (diag + mat[q[i - 1]][s[c - 1]], j if diag == 0 else SH[i - 1][c - 1])
                )
            options += [(F[i][c], SF[i][c]), (E[i][c], SE[i][c])]
            h, start = options[0]
            for value, st in options[1:]:
                if value > h:
                    h, start = value, st
            if h <= 0:
                h, start = 0, 0
            H[i][c], SH[i][c] = h, start
    return M


def first_max(H, cols=None):
    """``(score, i, j)`` of the first maximum in row-major order over matrix columns ``cols``
    (default: all but column 0); ``(0, 0, 0)`` when all are 0."""
    cols = range(1, len(H[0])) if cols is None else cols
    best = (0, 0, 0)
    for i in range(1, len(H)):
        for c in cols:
            if H[i][c] > best[0]:
                best = (H[i][c], i, c)
    return best


def traceback(M, q, s, mat, go, ge, forbidden, i, j):
    """The tie-rule path ending at ``(i, j)`` in ``H``, read from the values:
    ``(ops, i0, j0)``, the alignment covering query ``i0 .. i - 1`` and subject ``j0 .. j - 1``
    (0-based)."""
    H, E, F = M["H"], M["E"], M["F"]
    ops, state = [], "H"
    while i > 0 and j > 0:
        if state == "H":
            if H[i][j] == 0:
                break
            if (i, j) not in forbidden and H[i][j] == H[i - 1][j - 1] + mat[q[i - 1]][s[j - 1]]:
                ops.append(MATCH)
                i, j = i - 1, j - 1
                continue
            state = "F" if H[i][j] == F[i][j] else "E"
        if state == "F":
            ops.append(UP)
            state = "F" if F[i - 1][j] - ge >= H[i - 1][j] - go else "H"
            i -= 1
        else:
            ops.append(LEFT)
            state = "E" if E[i][j - 1] - ge >= H[i][j - 1] - go else "H"
            j -= 1
    return ops[::-1], i, j


def waterman_eggert(q, s, mat, go, ge, k, min_score=1):
    """The ``k`` best local alignments with declumping by forbidden pairs.

    Returns ``[(score, i0, i_end, j0, j_end, ops)]``: query residues ``i0 .. i_end - 1`` and
    subject residues ``j0 .. j_end - 1`` (0-based) aligned by ``ops``.
    """
    forbidden, hits = set(), []
    while len(hits) < k:
        M = fill(q, s, mat, go, ge, forbidden)
        score, i, j = first_max(M["H"])
        if score < max(min_score, 1):
            break
        ops, i0, j0 = traceback(M, q, s, mat, go, ge, forbidden, i, j)
        hits.append((score, i0, i, j0, j, ops))
        a, b = i0, j0
        for op in ops:
            a, b = a + (op != LEFT), b + (op != UP)
            if op == MATCH:
                forbidden.add((a, b))
    return hits


def strip_reference(q, s, mat, go, ge, W, seg_lo, seg_hi, col_in, forbidden):
    """What ``strip_fill`` writes, segment by segment: ``[(ckpt rows, best rows)]``, each
    checkpoint ``[H, E, SH, SE]`` (lists of ``n + 1``) and each best ``[score, i, j, SH]``."""
    m, out = len(s), []
    for c in range(len(seg_lo)):
        lo, hi = seg_lo[c], seg_hi[c]
        col = [list(col_in[c][t]) for t in range(4)]
        col[0][0], col[1][0], col[2][0], col[3][0] = 0, NEG, 0, 0
        j_first = lo * W + 1
        j_last = min(hi * W, m)
        M = fill(q, s[j_first - 1 : j_last], mat, go, ge, forbidden, col, j_first)
        ckpts, bests = [], []
        for k in range(lo, hi):
            a, b = k * W + 1 - (j_first - 1), min((k + 1) * W, m) - (j_first - 1)
            ckpts.append(
                [[M[key][i][b] for i in range(len(q) + 1)] for key in ("H", "E", "SH", "SE")]
            )
            score, i, cc = first_max(M["H"], range(a, b + 1))
            start = M["SH"][i][cc] if score else 0
            bests.append([score, i, cc + j_first - 1 if score else 0, start])
        out.append((ckpts, bests))
    return out
