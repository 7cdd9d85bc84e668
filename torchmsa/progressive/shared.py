"""One progressive pass over several ranks (issue #42 item 2): the same columns as one
process.

A node's merge depends on its two children only (their profiles, boundary weights and
weights; the scoring), never on the batch it shares or the device, so disjoint subtrees can
be aligned anywhere. The tree is cut (:func:`cut`): its largest subtree is split at its root
until none holds more than ``N / (4 R)`` leaves (or there are ``64 R`` subtrees). The nodes
split form the *top*; the subtrees left are dealt to the ranks, largest first, each to the
least loaded. Then

1. every rank aligns its subtrees, level by level, as one process would (batched levels on
   its device, small ones on the host);
2. every rank sends rank 0 its subtrees' root profiles and boundary weights, and each of
   its residues' column in its subtree's root (``int32``, through the default group: NCCL
   between GPUs);
3. rank 0 takes those roots into its node pool, maps the residues, aligns the top and
   assembles every residue's column; it sends the columns and widths back to every rank.

What crosses: one integer per residue each way, and the subtrees' root profiles.
"""

from __future__ import annotations

import heapq
import time

import numpy as np
import torch

from torchmsa.distributed.partition import deal
from torchmsa.progressive.levels import assemble, jump
from torchmsa.progressive.nodes import ranges, upload

__all__ = ["Cut", "cut", "over_ranks"]

WORK_SHARE = 4  # subtrees of at most N / (WORK_SHARE * R) leaves ...
MAX_PIECES = 64  # ... unless that would make more than MAX_PIECES * R of them


class Cut:
    """Where the tree is cut for ``size`` ranks.

    Attributes:
        pieces: ``int64 [P]`` the subtrees' roots, in increasing order.
        rank_of: ``int64 [P]`` each subtree's rank.
        top: ``int64 [n + K]`` each node's subtree root (itself for a root), ``-1`` for the
            nodes of the top and the leaves it holds directly.
        owner: ``int64 [n + K]`` each node's rank, ``-1`` for the top.
    """

    def __init__(self, pieces, rank_of, top):
        self.pieces, self.rank_of, self.top = pieces, rank_of, top
        slot = np.full(len(top), -1, np.int64)
        slot[pieces] = rank_of
        self.owner = np.where(top >= 0, slot[np.maximum(top, 0)], -1)


def cut(forest, size: int) -> Cut:
    """The subtrees that ``size`` ranks align apart (see the module docstring)."""
    n, kids = forest.n_leaves, forest.children
    leaves = np.ones(n + len(kids), np.int64)
    for ids in forest.levels:
        ids = np.asarray(ids, np.int64)
        leaves[ids] = leaves[kids[ids - n, 0]] + leaves[kids[ids - n, 1]]
    cap = max(2, -(-n // (WORK_SHARE * size)))
    heap = [(-int(leaves[r]), int(r)) for r in forest.roots if r >= n]
    heapq.heapify(heap)
    while heap and -heap[0][0] > cap and len(heap) < MAX_PIECES * size:
        _, v = heapq.heappop(heap)
        for c in kids[v - n].tolist():
            if c >= n:
                heapq.heappush(heap, (-int(leaves[c]), c))
    pieces = np.array(sorted(v for _, v in heap), np.int64)
    rank_of = np.array(deal(leaves[pieces].tolist(), size), np.int64)
    top = np.full(n + len(kids), -1, np.int64)
    top[pieces] = pieces
    for ids in reversed(forest.levels):  # parents before their children
        ids = np.asarray(ids, np.int64)
        for j in (0, 1):
            child = kids[ids - n, j]
            top[child] = np.where(top[ids] >= 0, top[ids], top[child])
    return Cut(pieces, rank_of, top)


def over_ranks(work, table, ranks) -> list[int]:
    """Steps 1-3 of the module docstring for the level loop ``work``
    (:class:`~torchmsa.progressive.levels.Levels`); every rank's ``table.col`` ends as one
    process's, and every rank returns the widths."""
    st, forest, device = work.st, work.forest, work.device
    t0 = time.perf_counter()
    c = cut(forest, ranks.size)
    work.align(c.owner == ranks.rank)
    mine = c.pieces[c.rank_of == ranks.rank]
    t1 = time.perf_counter()
    # rank 0's own residues reach their columns with the rest, in its last assembly
    cols = torch.zeros(0, dtype=torch.int32, device=device)
    if not ranks.leader:
        cols = _columns(st, work.pieces, forest, device, _residues(st, c, ranks.rank, device))
    prof, both = _root_rows(st, mine, device)
    told = ranks.all_gather((mine, st.cols[mine], st.w[mine]))
    profs, boths, colss = (ranks.to_leader(t) for t in (prof, both, cols))
    t2 = time.perf_counter()
    widths = None
    if ranks.leader:
        for r in range(1, ranks.size):
            roots, root_cols, root_w = told[r]
            st.cols[roots], st.w[roots] = root_cols, root_w
            st.place(roots, root_cols)
            st.store(roots, root_cols, profs[r], boths[r], device)
            ids, home = _residues(st, c, r, device)
            work.pieces.setdefault(device, []).append((ids, home + colss[r].to(torch.int64)))
        work.align(c.owner == -1)
        widths = assemble(st, table, forest, work.pieces, device)
    t3 = time.perf_counter()
    table.col = ranks.from_leader(table.col)
    widths = ranks.all_gather(widths)[0]
    own = int((c.owner[: st.n_leaves] == ranks.rank).sum())
    merges = int((c.owner[st.n_leaves :] == ranks.rank).sum())
    top = int((c.owner[st.n_leaves :] == -1).sum())
    ranks.say(
        f"torchmsa: {ranks.tag}: progressive pass aligned {len(mine)} of {len(c.pieces)} "
        f"subtrees ({own} of {st.n_leaves} sequences, {merges} merges) in {t1 - t0:.2f} s, "
        f"sent them in {t2 - t1:.2f} s, "
        + (f"aligned the top's {top} merges in {t3 - t2:.2f} s, " if ranks.leader else "")
        + f"had every column in {time.perf_counter() - t3:.2f} s"
    )
    return widths


def _residues(st, c: Cut, rank: int, device):
    """``(residue ids, their subtree root's first element)``, ``int64`` on ``device``, of the
    residues of the leaves under ``rank``'s subtrees, in sequence order."""
    seqs = np.flatnonzero(c.owner[: st.n_leaves] == rank)
    lens = st.seq_off[seqs + 1] - st.seq_off[seqs]
    v = upload(device, start=st.seq_off[seqs], lens=lens, root=st.elem[c.top[seqs]])
    total = int(lens.sum())
    first = torch.repeat_interleave(v["start"], v["lens"], output_size=total)
    within = torch.arange(total, device=device) - torch.repeat_interleave(
        torch.cumsum(v["lens"], 0) - v["lens"], v["lens"], output_size=total
    )
    return first + within, torch.repeat_interleave(v["root"], v["lens"], output_size=total)


def _columns(st, pieces, forest, device, res) -> torch.Tensor:
    """``int32``: each residue of ``res`` (:func:`_residues`) at its column in its subtree's
    root, by pointer jumping over the element maps this rank made."""
    ids, root = res
    return (jump(st, forest, pieces, device)[ids] - root).to(torch.int32)


def _root_rows(st, roots: np.ndarray, device):
    """The profiles (``int32 [sum cols, A]``) and boundary weights (``int64``) of ``roots``,
    in order, from ``device``'s pool."""
    st.fetch(roots, device)
    pool = st.pools[st.pool(device)]
    idx = upload(
        device, r=ranges(st.row[roots], st.cols[roots]), b=ranges(st.bnd[roots], st.cols[roots] + 1)
    )
    return pool.prof[idx["r"]].contiguous(), pool.both[idx["b"]].contiguous()
