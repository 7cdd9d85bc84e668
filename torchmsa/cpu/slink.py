"""Single linkage from distances streamed one row at a time (numba): Sibson's SLINK.

SLINK (Sibson 1973) adds the points one by one; adding point i reads only its distances to
the points before it and updates the pointer representation ``(pi, lam)`` of the hierarchy so
far: ``lam[j]`` is where point j stops being the last point of its cluster, ``pi[j]`` that
last point above it. Memory is ``O(n)`` beside the row being read, so a guide tree over
``n`` sequences never holds the ``n x n`` matrix (issue #35), and the rows can be computed in
blocks as they are needed (:func:`torchmsa.ops.lcs.lcs_single_linkage`).

The values compared here are not bare distances but the keys ``(d(a, b), a, b)`` (``a < b``,
original leaf ids), the strict order in which :mod:`torchmsa.cpu.tree` takes the edges of
the minimum spanning tree. Every ``lam`` is then the key of one edge, the lightest between
two clusters, so the ``n - 1`` final ``lam`` are the spanning tree's edges and
:func:`~torchmsa.cpu.tree.spanning_joins` turns them into the very joins that Prim's and
Borůvka's algorithms give on the full matrix, whatever order the points are added in.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from torchmsa.constants import LCS_TIE

__all__ = ["SlinkState", "lcs_key_rows"]


@njit(cache=True, inline="always")
def _less(w1, a1, b1, w2, a2, b2):
    """Key ``(w1, a1, b1)`` strictly before ``(w2, a2, b2)``."""
    return w1 < w2 or (w1 == w2 and (a1 < a2 or (a1 == a2 and b1 < b2)))


@njit(cache=True)
def _add_rows(w_rows, r0, ids, pi, lw, la, lb, mw, ma, mb):
    """SLINK steps for points ``r0 .. r0 + len(w_rows) - 1``: row t holds point
    ``i = r0 + t``'s distances to points ``0 .. i - 1`` (in the order points are added);
    ``ids`` maps that order to leaf ids, which the keys use."""
    for t in range(w_rows.shape[0]):
        i = r0 + t
        pi[i] = i
        lw[i] = np.inf
        la[i] = -1
        lb[i] = -1
        u = ids[i]
        for j in range(i):
            v = ids[j]
            mw[j] = w_rows[t, j]
            ma[j] = min(u, v)
            mb[j] = max(u, v)
        for j in range(i):
            p = pi[j]
            if not _less(lw[j], la[j], lb[j], mw[j], ma[j], mb[j]):  # lam[j] >= M[j]
                if _less(lw[j], la[j], lb[j], mw[p], ma[p], mb[p]):
                    mw[p], ma[p], mb[p] = lw[j], la[j], lb[j]
                lw[j], la[j], lb[j] = mw[j], ma[j], mb[j]
                pi[j] = i
            elif _less(mw[j], ma[j], mb[j], mw[p], ma[p], mb[p]):
                mw[p], ma[p], mb[p] = mw[j], ma[j], mb[j]
        for j in range(i):
            p = pi[j]
            if not _less(lw[j], la[j], lb[j], lw[p], la[p], lb[p]):  # lam[j] >= lam[pi[j]]
                pi[j] = i


@njit(cache=True)
def lcs_key_rows(lcs_rows, lens, r0, out):
    """The LCS distance of :func:`torchmsa.ops.lcs.lcs_distances` (FAMSA's ``indel / (indel +
    LCS)``, ties broken by ``LCS_TIE x sqrt(indel) / LCS``) of row blocks, in the same float64
    operations (so the same values): ``lcs_rows[t, j]`` is the LCS of points ``r0 + t`` and
    ``j < r0 + t``, ``lens`` the lengths in the order points are added."""
    for t in range(lcs_rows.shape[0]):
        i = r0 + t
        li = np.float64(lens[i])
        for j in range(i):
            c = np.float64(lcs_rows[t, j])
            union = (li + np.float64(lens[j])) - c
            indel = union - c
            out[t, j] = indel / max(union, 1.0) + LCS_TIE * (np.sqrt(indel) / max(c, 1.0))


class SlinkState:
    """The pointer representation of single linkage over ``n`` points, grown by
    :meth:`add_rows`; :meth:`edges` gives the spanning tree once every point is in."""

    def __init__(self, ids: np.ndarray):
        self.ids = np.ascontiguousarray(ids, dtype=np.int64)
        n = len(self.ids)
        self.n, self.added = n, 0
        self.pi = np.zeros(n, np.int64)
        self.lw = np.zeros(n, np.float64)
        self.la = np.zeros(n, np.int64)
        self.lb = np.zeros(n, np.int64)
        self.mw = np.zeros(n, np.float64)
        self.ma = np.zeros(n, np.int64)
        self.mb = np.zeros(n, np.int64)

    def add_rows(self, w_rows: np.ndarray) -> None:
        """Adds the next ``len(w_rows)`` points; row t holds the distances of point
        ``added + t`` to every point before it (columns past it are not read)."""
        w_rows = np.ascontiguousarray(w_rows, dtype=np.float64)
        if self.added + w_rows.shape[0] > self.n:
            raise ValueError(f"{self.added + w_rows.shape[0]} rows for {self.n} points")
        mw, ma, mb = self.mw, self.ma, self.mb
        _add_rows(w_rows, self.added, self.ids, self.pi, self.lw, self.la, self.lb, mw, ma, mb)
        self.added += w_rows.shape[0]

    def edges(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(lo, hi, w)``: the ``n - 1`` spanning-tree edges (leaf ids ``lo < hi``)."""
        if self.added != self.n:
            raise ValueError(f"{self.added} of {self.n} points added")
        k = max(self.n - 1, 0)  # the last point added is the one whose lam stays infinite
        return self.la[:k].copy(), self.lb[:k].copy(), self.lw[:k].copy()
