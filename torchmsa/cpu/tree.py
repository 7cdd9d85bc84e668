"""Guide-tree clustering on the CPU (numba): agglomerative linkages and neighbour joining.

Both work on slots ``0 .. n-1``, slot i holding leaf i at the start. Each step joins the pair of
active slots ``i < j`` with the smallest criterion, the smallest ``(i, j)`` in lexicographic
order among equal values; the new cluster takes slot i and slot j is retired. The joined node
of step s gets id ``n + s``; its children are the two clusters' node ids, the lower id first.

Linkage (criterion: the distance; height of a join = distance / 2). With ``lo <= hi`` the
distances of the two joined clusters to a third one, the new distance is
``lo + w * (hi - lo)``:

* ``UPGMA`` (average linkage): ``w`` = size of the cluster at ``hi`` / size of both;
* ``MAFFT``: ``w = sueff / 2`` with ``sueff = 0.1``, i.e. ``(1 - sueff) * min + sueff *
  mean``, MAFFT's modified UPGMA (https://mafft.cbrc.jp/alignment/software/algorithms/upg.html);

Written as ``lo + w * (hi - lo)`` the new distance is never below ``lo`` in floating point, so
heights never decrease and branch lengths are never negative. Every row keeps its minimum and
the slot of its first occurrence; a join changes only the rows whose minimum sat in one of the
two joined slots, so the usual step costs O(n) and the whole run O(n^2) (memory: one n x n
float64 copy). For large n the time goes into writing the joined slot's column (one cache miss
per active row and join), not into comparisons.

Single linkage (:func:`single_linkage`) joins clusters in the order of the edges of the
minimum spanning tree of the complete graph on the leaves, leaf pairs ``a < b`` ordered by
``(d(a, b), a, b)``. That order is strict, so the spanning tree is unique, and any algorithm
finds the same one: Prim's here (O(n^2), one row read per added leaf, nothing written to the
matrix), Borůvka's on a GPU (``triton_kernels/linkage.py``). The joins are its edges in that
order, each joining the clusters that hold the edge's two leaves, at height ``d / 2``. Without
equal distances this is the slot rule above with ``w = 0`` (the minimum); with them it may pair
tied clusters differently (the slot rule compares clusters' smallest leaves, this one the
edge's leaves). A GPU builds it in a few parallel passes over the matrix, where the slot rule
is n - 1 steps, each waiting on the last.

Neighbour joining (Saitou & Nei 1987): criterion ``Q(i, j) = (m - 2) * d(i, j) - r(i) - r(j)``
with ``m`` active slots and ``r`` the row sums over active slots; branch lengths
``d(i, j) / 2 + (r(i) - r(j)) / (2 (m - 2))`` and ``d(i, j)`` minus that, each raised to 0 when
negative; new distances ``(d(i, k) + d(j, k) - d(i, j)) / 2``. Row sums are updated in place,
``r(k) = r(k) - d(i, k) - d(j, k) + d(new, k)``, and the joined slot's row sum is summed afresh in
slot order. The last two clusters hang from the root at half their distance each. O(n^3) time;
the matrix is compacted (in slot order) whenever half of its slots are retired.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = [
    "UPGMA",
    "MAFFT",
    "SINGLE",
    "SUEFF",
    "check_distances",
    "linkage",
    "group_linkages",
    "assemble_nodes",
    "single_linkage",
    "spanning_joins",
    "merge_components",
    "neighbor_joining",
]

UPGMA, MAFFT, SINGLE = 0, 1, 2
SUEFF = 0.1


@njit(cache=True)
def check_distances(d):
    """An off-diagonal problem as ``(kind, i, j)``: 1 not finite, 2 negative, 3 asymmetric;
    ``(0, -1, -1)`` when there is none."""
    n = d.shape[0]
    tile = 64  # pairs tile by tile, so that d[j, i] is read along cached rows
    for i0 in range(0, n, tile):
        for j0 in range(i0, n, tile):
            for i in range(i0, min(i0 + tile, n)):
                for j in range(max(j0, i + 1), min(j0 + tile, n)):
                    x, y = d[i, j], d[j, i]
                    if not (x >= 0 and y >= 0 and x == y and x < np.inf):
                        for a, b in ((i, j), (j, i)):
                            if not np.isfinite(d[a, b]):
                                return 1, a, b
                            if d[a, b] < 0:
                                return 2, a, b
                        return 3, i, j
    return 0, -1, -1


@njit(cache=True, inline="always")
def _row_min(row, active):
    best = np.inf
    arg = -1
    for c in range(row.shape[0]):
        if active[c] and row[c] < best:
            best = row[c]
            arg = c
    return best, arg


@njit(cache=True)
def _linkage(d, method, children, heights):
    """Agglomerate ``d`` (an n x n copy with +inf on the diagonal; overwritten).

    Only the rows and columns of active slots are kept up to date; scans skip retired slots.
    """
    n = d.shape[0]
    size = np.ones(n, np.int64)
    node = np.arange(n)
    active = np.ones(n, np.bool_)
    row_min = np.empty(n)
    row_arg = np.empty(n, np.int64)
    for k in range(n):
        row_min[k], row_arg[k] = _row_min(d[k], active)
    for step in range(n - 1):
        best = np.inf
        i = -1
        for k in range(n):
            if active[k] and row_min[k] < best:
                best = row_min[k]
                i = k
        j = row_arg[i]  # > i: a smaller j would hold the same minimum in an earlier row
        a, b = node[i], node[j]
        children[step, 0] = min(a, b)
        children[step, 1] = max(a, b)
        heights[step] = best / 2
        si, sj = size[i], size[j]
        active[j] = False
        di, dj = d[i], d[j]
        # one pass over the other rows: new distance, its mirror, and row k's cached minimum
        # (only columns i and j of row k changed, and column j is now retired)
        for k in range(n):
            if not active[k] or k == i:
                continue
            x, y = di[k], dj[k]
            if x <= y:
                lo, hi, w_hi = x, y, sj
            else:
                lo, hi, w_hi = y, x, si
            if method == UPGMA:
                v = lo + (w_hi / (si + sj)) * (hi - lo)
            else:
                v = lo + (SUEFF / 2) * (hi - lo)
            di[k] = v
            d[k, i] = v
            arg = row_arg[k]
            if arg == i or arg == j:
                # no slot below i held the old minimum, so i is its first slot if v keeps it
                if v <= row_min[k]:
                    row_min[k] = v
                    row_arg[k] = i
                else:
                    row_min[k], row_arg[k] = _row_min(d[k], active)
            elif v < row_min[k] or (v == row_min[k] and i < arg):
                row_min[k] = v
                row_arg[k] = i
        size[i] = si + sj
        node[i] = n + step
        row_min[i], row_arg[i] = _row_min(di, active)


@njit(cache=True)
def group_linkages(dist, pair_off, sizes, method, children, heights, join_off):
    """:func:`linkage` of many groups at once (PartTree's small groups).

    Group ``k`` has ``sizes[k]`` members and the distances ``dist[pair_off[k]:]`` of its pairs
    ``i < j`` in row-major order; its ``m - 1`` joins go to ``children[join_off[k]:]`` and
    ``heights[join_off[k]:]``. ``method``: UPGMA or MAFFT.
    """
    for k in range(sizes.shape[0]):
        m = sizes[k]
        if m < 2:
            continue
        d = np.empty((m, m))
        p = pair_off[k]
        for i in range(m):
            d[i, i] = np.inf
            for j in range(i + 1, m):
                d[i, j] = dist[p]
                d[j, i] = dist[p]
                p += 1
        o = join_off[k]
        _linkage(d, method, children[o : o + m - 1], heights[o : o + m - 1])


@njit(cache=True)
def _join(a, b, h, children, height, nxt, n):
    """Internal node ``nxt`` over ``a`` and ``b`` at height ``h`` (raised to theirs)."""
    children[nxt - n, 0] = min(a, b)
    children[nxt - n, 1] = max(a, b)
    height[nxt] = max(h, height[a], height[b])
    return nxt + 1


@njit(cache=True)
def _balanced(nodes, h, children, height, nxt, n):
    """Pairs neighbours level by level (an odd last one waits); returns ``(root, nxt)``."""
    nodes = nodes.copy()
    m = nodes.shape[0]
    while m > 1:
        half = m // 2
        for i in range(half):
            a, b = nodes[2 * i], nodes[2 * i + 1]
            nodes[i] = nxt
            nxt = _join(a, b, h, children, height, nxt, n)
        if m % 2:
            nodes[half] = nodes[m - 1]
        m = half + m % 2
    return nodes[0], nxt


@njit(cache=True)
def assemble_nodes(kind, members, moff, jch, jh, joff, cids, coff, empty, n):
    """PartTree's groups built bottom-up into one tree's internal nodes.

    Groups go from the last to the first (children groups have larger ids). ``kind[g]``: 0
    empty, 1 split (a reference tree, joins ``jch/jh[joff[g]:joff[g+1]]`` over the nodes of
    its child groups ``cids[coff[g]:coff[g+1]]``), 2 one member, 3 flat (its members paired
    level by level at height 0), 4 a small group's linkage (joins over its members
    ``members[moff[g]:moff[g+1]]``). Joins ``(a, b)`` name local leaves, then earlier joins, as
    :func:`linkage` returns them. The sequences in ``empty`` hang in a flat subtree at 0.5
    beside group 0, joined at 0.5. A node's height is its join's, raised to its children's.

    Returns:
        ``(children int64 [n - 1, 2], height float64 [2n - 1])``, nodes in creation order.
    """
    children = np.zeros((max(n - 1, 0), 2), np.int64)
    height = np.zeros(max(2 * n - 1, 1))
    node = np.full(kind.shape[0], -1, np.int64)
    nxt = n
    for g in range(kind.shape[0] - 1, -1, -1):
        k = kind[g]
        if k == 0:
            continue
        mem = members[moff[g] : moff[g + 1]]
        if k == 2:
            node[g] = mem[0]
            continue
        if k == 3:
            node[g], nxt = _balanced(mem, 0.0, children, height, nxt, n)
            continue
        lo, hi = joff[g], joff[g + 1]
        leaves = node[cids[coff[g] : coff[g + 1]]] if k == 1 else mem
        local = np.empty(leaves.shape[0] + hi - lo, np.int64)
        local[: leaves.shape[0]] = leaves
        at = leaves.shape[0]
        for t in range(lo, hi):
            local[at] = nxt
            nxt = _join(local[jch[t, 0]], local[jch[t, 1]], jh[t], children, height, nxt, n)
            at += 1
        node[g] = local[at - 1]
    roots = np.empty(2, np.int64)
    r = 0
    if kind.shape[0] and kind[0] != 0:
        roots[r] = node[0]
        r += 1
    if empty.shape[0]:
        roots[r], nxt = _balanced(empty, 0.5, children, height, nxt, n)
        r += 1
    if r == 2:
        nxt = _join(roots[0], roots[1], 0.5, children, height, nxt, n)
    return children, height[:nxt]


def linkage(
    dist: np.ndarray, method: int, overwrite: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """Agglomerative clustering of a validated distance matrix.

    Arguments:
        dist: ``float64 [n, n]`` symmetric, finite, non-negative (the diagonal is ignored).
        method: :data:`UPGMA`, :data:`MAFFT` or :data:`SINGLE` (:func:`single_linkage`).
        overwrite: work in ``dist`` itself when it is C-contiguous float64 (no n x n copy).

    Returns:
        ``(children int64 [n-1, 2], heights float64 [n-1])`` of the joined nodes in join order.
    """
    if method == SINGLE:
        return single_linkage(dist)
    n = dist.shape[0]
    d = np.array(dist, dtype=np.float64, order="C", copy=not overwrite)
    np.fill_diagonal(d, np.inf)
    children = np.empty((max(n - 1, 0), 2), np.int64)
    heights = np.empty(max(n - 1, 0), np.float64)
    if n > 1:
        _linkage(d, method, children, heights)
    return children, heights


@njit(cache=True, inline="always")
def _pair_before(a, b, c, e):
    """Leaf pair ``{a, b}`` before ``{c, e}`` in the order ``(min, max)``."""
    x, y = min(a, b), min(c, e)
    return x < y or (x == y and max(a, b) < max(c, e))


@njit(cache=True)
def _prim(d, lo, hi, w):
    """The minimum spanning tree's edges (``lo < hi``, weight ``w``), in the order Prim's
    algorithm adds them from leaf 0. ``d`` is only read, the diagonal never."""
    n = d.shape[0]
    rest = np.arange(1, n)  # leaves outside the tree, in any order (the order is strict)
    best = d[0, 1:].copy()  # each one's lightest edge into the tree ...
    src = np.zeros(n - 1, np.int64)  # ... and that edge's leaf in the tree
    m = n - 1
    for e in range(n - 1):
        k = 0
        for t in range(1, m):
            if best[t] < best[k] or (
                best[t] == best[k] and _pair_before(src[t], rest[t], src[k], rest[k])
            ):
                k = t
        v = rest[k]
        lo[e], hi[e], w[e] = min(src[k], v), max(src[k], v), best[k]
        m -= 1
        rest[k], best[k], src[k] = rest[m], best[m], src[m]
        row = d[v]
        for t in range(m):
            u = rest[t]
            x = row[u]
            if x < best[t] or (x == best[t] and _pair_before(v, u, src[t], u)):
                best[t] = x
                src[t] = v


@njit(cache=True, inline="always")
def _find(parent, a):
    root = a
    while parent[root] != root:
        root = parent[root]
    while parent[a] != root:  # path compression
        parent[a], a = root, parent[a]
    return root


@njit(cache=True)
def _joins(lo, hi, w, order, children, heights):
    n = children.shape[0] + 1
    parent = np.arange(n)
    node = np.arange(n)  # the node id of the cluster whose root is this leaf
    for step in range(n - 1):
        e = order[step]
        a, b = _find(parent, lo[e]), _find(parent, hi[e])
        x, y = node[a], node[b]
        children[step, 0] = min(x, y)
        children[step, 1] = max(x, y)
        heights[step] = w[e] / 2
        root = min(a, b)
        parent[max(a, b)] = root
        node[root] = n + step


def spanning_joins(lo: np.ndarray, hi: np.ndarray, w: np.ndarray):
    """Single linkage's joins from the ``n - 1`` edges of its minimum spanning tree.

    The edges are taken in the order ``(w, lo, hi)``; each joins the two clusters holding its
    leaves (node ids ``n + step``, the lower id first) at height ``w / 2``.

    Returns:
        ``(children int64 [n-1, 2], heights float64 [n-1])`` as :func:`linkage`.
    """
    lo, hi = np.asarray(lo, np.int64), np.asarray(hi, np.int64)
    w = np.asarray(w, np.float64)
    children = np.empty((lo.shape[0], 2), np.int64)
    heights = np.empty(lo.shape[0], np.float64)
    if lo.shape[0]:
        _joins(lo, hi, w, np.lexsort((hi, lo, w)), children, heights)
    return children, heights


def single_linkage(dist: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Single linkage of a validated distance matrix through its minimum spanning tree
    (module docstring); ``dist`` is only read."""
    d = np.ascontiguousarray(dist, dtype=np.float64)
    n = d.shape[0]
    lo = np.empty(max(n - 1, 0), np.int64)
    hi = np.empty_like(lo)
    w = np.empty(max(n - 1, 0), np.float64)
    if n > 1:
        _prim(d, lo, hi, w)
    return spanning_joins(lo, hi, w)


@njit(cache=True)
def merge_components(parent, lo, hi):
    """Union the leaves of each edge ``(lo[e], hi[e])`` in the union-find ``parent`` (each
    root the smallest leaf of its set) and return every leaf's root (``int32 [n]``)."""
    for e in range(lo.shape[0]):
        a, b = _find(parent, lo[e]), _find(parent, hi[e])
        parent[max(a, b)] = min(a, b)
    out = np.empty(parent.shape[0], np.int32)
    for v in range(parent.shape[0]):
        out[v] = _find(parent, v)
    return out


@njit(cache=True)
def _compact(d, active, r, node):
    keep = np.flatnonzero(active)
    m = keep.shape[0]
    out = np.empty((m, m))
    for a in range(m):
        for b in range(m):
            out[a, b] = d[keep[a], keep[b]]
    return out, np.ones(m, np.bool_), r[keep].copy(), node[keep].copy()


@njit(cache=True)
def _nj(d, children, lengths):
    n = d.shape[0]
    node = np.arange(n)
    active = np.ones(n, np.bool_)
    r = np.zeros(n)
    for i in range(n):
        for k in range(n):
            if k != i:
                r[i] += d[i, k]
    for step in range(n - 2):
        m = n - step
        if d.shape[0] >= 64 and 2 * m <= d.shape[0]:
            # keeping slot order keeps the tie-breaking order
            d, active, r, node = _compact(d, active, r, node)
        best = np.inf
        i = j = -1
        scale = float(m - 2)
        for a in range(d.shape[0]):
            if not active[a]:
                continue
            ra = r[a]
            row = d[a]
            for b in range(a + 1, d.shape[0]):
                # a retired slot b has r[b] = -inf, so q = +inf: no test of active[b] needed
                q = scale * row[b] - ra - r[b]
                if q < best:
                    best = q
                    i, j = a, b
        dij = d[i, j]
        li = dij / 2 + (r[i] - r[j]) / (2 * (m - 2))
        lj = dij - li
        lengths[node[i]] = max(li, 0.0)
        lengths[node[j]] = max(lj, 0.0)
        children[step, 0] = min(node[i], node[j])
        children[step, 1] = max(node[i], node[j])
        ri = 0.0
        for k in range(d.shape[0]):
            if not active[k] or k == i or k == j:
                continue
            v = (d[i, k] + d[j, k] - dij) / 2
            r[k] = r[k] - d[k, i] - d[k, j] + v
            d[i, k] = v
            d[k, i] = v
            ri += v
        r[i] = ri
        r[j] = -np.inf
        active[j] = False
        node[i] = n + step
    keep = np.flatnonzero(active)
    i, j = keep[0], keep[1]
    half = max(d[i, j], 0.0) / 2
    lengths[node[i]] = half
    lengths[node[j]] = half
    children[n - 2, 0] = min(node[i], node[j])
    children[n - 2, 1] = max(node[i], node[j])


def neighbor_joining(dist: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Neighbour joining of a validated distance matrix (see the module docstring).

    Arguments:
        dist: ``float64 [n, n]`` symmetric, finite, non-negative (the diagonal is ignored).

    Returns:
        ``(children int64 [n-1, 2], lengths float64 [2n-1])``: the joined nodes in join order
        and each node's branch length (the root's is 0).
    """
    n = dist.shape[0]
    d = np.array(dist, dtype=np.float64, order="C", copy=True)
    np.fill_diagonal(d, 0.0)
    children = np.empty((max(n - 1, 0), 2), np.int64)
    lengths = np.zeros(max(2 * n - 1, 1), np.float64)
    if n > 1:
        _nj(d, children, lengths)
    return children, lengths
