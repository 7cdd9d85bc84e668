"""One alignment shared by several ranks (decision 0068): the cut of the guide tree, the
progressive pass and the whole call equal one process's, for any number of ranks. Ranks are
threads here (``tests/thread_ranks.py``); the whole call under torchrun is in
``test_distributed.py``."""

from __future__ import annotations

import numpy as np
import pytest

import torchmsa
from tests.test_parttree import clusters
from tests.thread_ranks import ThreadRanks
from torchmsa.config import ExecutionPolicy
from torchmsa.pipeline.groups import progressive_jobs
from torchmsa.pipeline.scoring import profile_scoring
from torchmsa.progressive import Forest
from torchmsa.progressive.shared import cut
from torchmsa.sequences import SequenceBatch
from torchmsa.synthetic import family


def _family(n: int, seed: int) -> list[str]:
    return clusters([n // 3, n // 4, n - n // 3 - n // 4], 60, seed, rate=0.2) + family(
        5, 40, seed, indels=True
    )


def _tree(batch):
    return torchmsa.build_tree(batch.residues, method="upgma", device="cpu")


@pytest.mark.parametrize("size", [1, 2, 3, 5])
def test_the_cut_deals_disjoint_subtrees_under_a_top_of_their_ancestors(size):
    batch = SequenceBatch.from_input(_family(120, 1), "protein")
    tree = _tree(batch)
    forest = Forest.from_trees([tree], [len(batch)])
    c = cut(forest, size)
    n = forest.n_leaves
    under = tree.leaves_under()
    # every leaf under one subtree or held by the top directly; subtrees disjoint
    covered = np.concatenate([under[p - n] for p in c.pieces]) if len(c.pieces) else []
    assert len(covered) == len(set(covered.tolist() if len(covered) else []))
    held = set(range(n)) - set(np.asarray(covered).tolist())
    assert all(c.top[leaf] == -1 for leaf in held)
    assert all((c.top[under[p - n]] == p).all() for p in c.pieces)
    # the top's nodes are exactly the ancestors of the subtrees' roots
    parent = np.full(2 * n - 1, -1)
    parent[forest.children.ravel()] = np.repeat(np.arange(n, 2 * n - 1), 2)
    above = set()
    for p in c.pieces:
        v = parent[p]
        while v >= 0:
            above.add(int(v))
            v = parent[v]
    assert set(np.flatnonzero(c.owner[n:] == -1) + n) == above
    assert set(c.rank_of.tolist()) <= set(range(size))
    if size > 1:  # the largest subtree holds at most a quarter of a rank's share
        assert max(len(under[p - n]) for p in c.pieces) <= -(-n // (4 * size))


@pytest.mark.parametrize("size", [2, 3])
@pytest.mark.parametrize("host", [True, False])
def test_a_progressive_pass_over_ranks_gives_every_rank_one_processs_columns(size, host):
    batch = SequenceBatch.from_input(_family(150, 2), "protein")
    tree = _tree(batch)
    scoring = profile_scoring(batch.alphabet)
    # every level on the host (numba node by node), or every level batched
    cells = 1 << 40 if host else 0
    policy = ExecutionPolicy(cpu_level_cells=cells, cpu_pair_cells=cells)

    def one(ranks=None):
        return progressive_jobs([batch], [tree], scoring, "cpu", None, policy=policy, ranks=ranks)

    (want, want_w), *_ = one()
    for (codes, weights), *_ in ThreadRanks(size).run(one):
        assert codes.shape == want.shape
        assert (codes == want).all()
        assert (weights == want_w).all()
