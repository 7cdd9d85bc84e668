"""PartTree guide trees: valid, deterministic, clusters kept, equal to UPGMA when small."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

import torchmsa
from torchmsa.config import AlignConfig, ExecutionPolicy, TreeConfig
from torchmsa.errors import ArgumentError
from torchmsa.ops.kmer import kmer_distance_matrix
from torchmsa.parttree import merge_close, parttree, parttree_tree
from torchmsa.sequences import SequenceBatch
from torchmsa.tree import build_tree

AMINO = "ACDEFGHIKLMNPQRSTVWY"
DAYHOFF = {
    c: g for g, letters in enumerate(["AGPST", "C", "DENQ", "FWY", "HKR", "ILMV"]) for c in letters
}


def clusters(sizes: list[int], length: int, seed: int, rate: float = 0.08) -> list[str]:
    """Clusters around unrelated random ancestors; members differ by ``rate`` substitutions."""
    rng = np.random.default_rng(seed)
    out = []
    for size in sizes:
        anc = rng.choice(list(AMINO), length)
        for _ in range(size):
            s = anc.copy()
            sub = rng.random(length) < rate
            s[sub] = rng.choice(list(AMINO), int(sub.sum()))
            out.append("".join(s[: length - int(rng.integers(0, 10))]))
    return out


def clades(tree) -> set[frozenset]:
    return {frozenset(x.tolist()) for x in tree.leaves_under()}


def check_valid(tree, n: int) -> None:
    # Tree.__post_init__ checks the id contract; here the rest of what callers rely on
    assert tree.n_leaves == n and tree.children.shape == (n - 1, 2)
    assert sorted(tree.leaf_order().tolist()) == list(range(n))
    assert (tree.children < np.arange(n, 2 * n - 1)[:, None]).all()
    assert (tree.lengths >= 0).all() and tree.lengths[tree.root] == 0
    levels = tree.levels()
    assert sorted(np.concatenate(levels).tolist()) == list(range(n, 2 * n - 1))
    w = tree.weights()
    assert np.isfinite(w).all() and abs(w.mean() - 1) < 1e-9


def test_clusters_come_out_as_subtrees():
    sizes = [30, 25, 40, 20, 35]
    batch = SequenceBatch.from_input(clusters(sizes, 120, 0), "protein")
    tree = parttree(batch, n_ref=8, n_far=5, leaf_size=12, backend="cpu")
    check_valid(tree, sum(sizes))
    found = clades(tree)
    start = 0
    for size in sizes:
        assert frozenset(range(start, start + size)) in found, f"cluster at {start}"
        start += size
    assert len(tree.levels()) > 1


def test_deterministic_and_seeded():
    batch = SequenceBatch.from_input(clusters([40, 40, 40], 80, 1, rate=0.3), "protein")
    one = parttree(batch, n_ref=6, leaf_size=10, seed=3, backend="cpu")
    two = parttree(batch, n_ref=6, leaf_size=10, seed=3, backend="cpu")
    assert np.array_equal(one.children, two.children)
    assert np.array_equal(one.lengths, two.lengths)
    assert one.newick() == two.newick()


@pytest.mark.parametrize("method", ["upgma", "upgma_mafft", "single"])
def test_small_input_is_upgma_of_the_full_matrix(method):
    seqs = clusters([6, 9, 5], 60, 2, rate=0.25)
    batch = SequenceBatch.from_input(seqs, "protein")
    tree = parttree(batch, leaf_size=len(seqs), method=method, distance="kmer", backend="cpu")
    full = build_tree(kmer_distance_matrix(seqs, device="cpu"), method, batch.names)
    assert np.array_equal(tree.children, full.children)
    np.testing.assert_allclose(tree.lengths, full.lengths, rtol=0, atol=1e-12)


def test_split_tree_keeps_the_obvious_clades_of_upgma():
    # 3 clusters (6-mer distances ~0.97 apart) of 2 sub-clusters of 15 (~0.8 apart, members
    # ~0.4): the clades of 15 and 30, which UPGMA finds, are PartTree clades too
    rng = np.random.default_rng(4)
    seqs = []
    for _ in range(3):
        anc = rng.choice(list(AMINO), 100)
        for _ in range(2):
            sub = anc.copy()
            hit = rng.random(100) < 0.1
            sub[hit] = rng.choice(list(AMINO), int(hit.sum()))
            seqs += clusters_from(sub, 15, rng)
    batch = SequenceBatch.from_input(seqs, "protein")
    part = parttree(batch, n_ref=6, n_far=3, leaf_size=12, backend="cpu")
    full = build_tree(kmer_distance_matrix(seqs, device="cpu"), "upgma_mafft", batch.names)
    obvious = {frozenset(range(s, s + w)) for w in (15, 30) for s in range(0, 90, w)}
    assert obvious <= clades(full)
    assert obvious <= clades(part)


def clusters_from(anc: np.ndarray, size: int, rng) -> list[str]:
    out = []
    for _ in range(size):
        s = anc.copy()
        hit = rng.random(len(anc)) < 0.03
        s[hit] = rng.choice(list(AMINO), int(hit.sum()))
        out.append("".join(s))
    return out


def test_close_references_merge():
    # refs 0-1 and 2-3 join low, 4 alone: two merged groups and one single
    children = np.array([[0, 1], [2, 3], [5, 6], [4, 7]])
    heights = np.array([0.05, 0.1, 0.3, 0.4])
    label, (top, top_h) = merge_close((children, heights), 0.5)
    assert label.tolist() == [0, 0, 1, 1, 2]
    assert top.tolist() == [[0, 1], [2, 3]] and top_h.tolist() == [0.3, 0.4]
    label, (top, _) = merge_close((children, np.zeros(4)), 0.5)
    assert label.tolist() == [0, 1, 2, 3, 4] and top.tolist() == children.tolist()


def brute_counts_fn(seqs: list[str], k: int = 6):
    def kmers(s: str) -> Counter:
        return Counter(
            s[p : p + k].translate(str.maketrans({c: str(g) for c, g in DAYHOFF.items()}))
            for p in range(len(s) - k + 1)
        )

    counted = [kmers(s) for s in seqs]

    def fn(a, b):
        return np.array([[sum((counted[i] & counted[j]).values()) for j in b] for i in a])

    return fn


def test_counts_function_source_equals_batch_source():
    seqs = clusters([12, 10, 14], 50, 5, rate=0.2)
    batch = SequenceBatch.from_input(seqs, "protein")
    from_batch = parttree(batch, n_ref=5, leaf_size=8, distance="kmer", backend="cpu")
    from_fn = parttree(brute_counts_fn(seqs), n=len(seqs), n_ref=5, leaf_size=8)
    assert np.array_equal(from_batch.children, from_fn.children)
    np.testing.assert_allclose(from_batch.lengths, from_fn.lengths, rtol=0, atol=1e-12)
    assert from_fn.names == [f"seq{i + 1}" for i in range(len(seqs))]


def test_duplicates_and_sequences_without_kmers():
    # 300 copies of one sequence must not split 300 / n_ref levels deep; short ones hang
    # from the root in their own clade
    seqs = ["MKVLAAGIVGLLLAQPAMAW"] * 300 + clusters([20], 40, 6) + ["MKV", "", "WW"]
    batch = SequenceBatch.from_input(seqs, "protein")
    tree = parttree(batch, n_ref=4, leaf_size=10, distance="kmer", backend="cpu")
    check_valid(tree, len(seqs))
    found = clades(tree)
    n = len(seqs)
    assert frozenset(range(300)) in found
    assert frozenset({n - 3, n - 2, n - 1}) in found
    assert len(tree.levels()) < 40
    under = tree.leaves_under()
    root_sides = [frozenset(under[v - n].tolist()) for v in tree.children[-1]]
    assert frozenset({n - 3, n - 2, n - 1}) in root_sides


def test_one_sequence_and_parttree_tree_names():
    one = parttree(SequenceBatch.from_input({"x": "MKVLAAGIVG"}, "protein"), backend="cpu")
    assert one.n_leaves == 1 and one.newick() == "x;"
    batch = SequenceBatch.from_input({f"s{i}": s for i, s in enumerate(clusters([5, 5], 30, 7))})
    tree = parttree_tree(batch, backend="cpu")
    assert tree.names == batch.names
    check_valid(tree, 10)


def test_defaults_come_from_the_tree_config():
    # align's PartTree: MAFFT's modified UPGMA, 50 references, leaves of 500
    config = TreeConfig()
    assert (config.parttree_linkage, config.parttree_n_ref, config.parttree_leaf_size) == (
        "upgma_mafft",
        50,
        500,
    )
    seqs = clusters([6, 9, 5], 60, 2, rate=0.25)
    batch = SequenceBatch.from_input(seqs, "protein")
    assert (
        parttree(batch, backend="cpu").newick()
        == parttree(batch, method="upgma_mafft", backend="cpu").newick()
    )
    assert (
        parttree(batch, backend="cpu").newick()
        != parttree(batch, method="upgma", backend="cpu").newick()
    )
    small = TreeConfig(parttree_n_ref=5, parttree_leaf_size=8, parttree_linkage="single")
    big = SequenceBatch.from_input(clusters([12, 10, 14], 50, 5, rate=0.2), "protein")
    want = parttree(big, n_ref=5, leaf_size=8, method="single", backend="cpu")
    assert parttree(big, config=small, backend="cpu").newick() == want.newick()
    assert parttree_tree(big, "cpu", config=small).newick() == want.newick()
    # the merge fraction is a tree setting: merging references up to 0.9 of the root's height
    # changes this tree
    apart = TreeConfig(parttree_n_ref=5, parttree_leaf_size=8, parttree_merge_fraction=0.9)
    assert (
        parttree(big, config=apart, backend="cpu").newick()
        != parttree(big, n_ref=5, leaf_size=8, backend="cpu").newick()
    )


def test_counting_policy_never_changes_the_tree():
    batch = SequenceBatch.from_input(clusters([30, 25, 40], 80, 9, rate=0.2), "protein")
    want = parttree(batch, n_ref=8, leaf_size=12, backend="cpu")
    for policy in (
        ExecutionPolicy(parttree_dense_pairs=1, parttree_pair_chunk=3),
        ExecutionPolicy(parttree_dense_pairs=1 << 40, parttree_pair_chunk=1),
    ):
        got = parttree(batch, n_ref=8, leaf_size=12, backend="cpu", policy=policy)
        assert np.array_equal(got.children, want.children)
        assert np.array_equal(got.lengths, want.lengths)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"n_ref": 1}, "`n_ref`"),
        ({"n_far": -1}, "`n_far`"),
        ({"leaf_size": 0}, "`leaf_size`"),
        ({"method": "nj"}, "`method`"),
        ({"names": ["a"]}, "`names`"),
    ],
)
def test_argument_errors(kwargs, match):
    batch = SequenceBatch.from_input(["MKVLAAGIVG", "MKVLAAGIVA"], "protein")
    with pytest.raises(ArgumentError, match=match):
        parttree(batch, backend="cpu", **kwargs)


def test_source_errors():
    with pytest.raises(ArgumentError, match="`source`"):
        parttree(["MKVLAAGIVG"])
    with pytest.raises(ArgumentError, match="self_counts"):
        parttree(lambda a, b: np.zeros((len(a), len(b))))
    with pytest.raises(ArgumentError, match="shape"):
        parttree(lambda a, b: np.zeros((1, 1)), n=3)


@pytest.mark.interpreter
def test_triton_backend_equals_cpu(device):
    seqs = clusters([5, 4, 5], 20, 8, rate=0.15)
    batch = SequenceBatch.from_input(seqs, "protein", device)
    got = parttree(batch, n_ref=3, leaf_size=4, distance="kmer", backend="triton")
    want = parttree(batch.to("cpu"), n_ref=3, leaf_size=4, distance="kmer", backend="cpu")
    assert np.array_equal(got.children, want.children)
    assert np.array_equal(got.lengths, want.lengths)


@pytest.mark.parametrize("method", ["upgma_mafft", "single"])
def test_lcs_parttree_of_a_small_input_is_the_linkage_of_full_lcs_distances(method):
    from torchmsa.ops.lcs import lcs_distances, lcs_lengths

    seqs = clusters([6, 7, 5], 40, 21)
    batch = SequenceBatch.from_input(seqs, "protein")
    tree = parttree(batch, leaf_size=len(seqs), method=method, distance="lcs", backend="cpu")
    dist = lcs_distances(lcs_lengths(batch.codes, batch.lengths, "cpu"), batch.lengths)
    full = build_tree(dist, method, batch.names)
    assert np.array_equal(tree.children, full.children)


def test_lcs_counts_are_the_lcs_lengths():
    from torchmsa.cpu.lcs import lcs_lengths
    from torchmsa.parttree.counts import LcsCounts

    seqs = clusters([8, 7], 70, 22) + ["M", "WWWW"]
    batch = SequenceBatch.from_input(seqs, "protein")
    full = lcs_lengths(batch.codes, batch.lengths).numpy()
    counts = LcsCounts(batch)
    a, b = np.array([3, 0, 16, 9]), np.array([15, 2, 16])
    got_ab, got_aa = counts.blocks([(a, b), (a, None)])
    assert np.array_equal(got_ab, full[np.ix_(a, b)])
    assert np.array_equal(got_aa, full[np.ix_(a, a)])
    assert np.array_equal(counts.self_counts, batch.lengths.numpy())
    # all pairs of a group, each counted once, over more rows than the square's row chunks
    everyone = np.random.default_rng(22).permutation(len(seqs))
    (got_all,) = counts.blocks([(everyone, None)])
    assert np.array_equal(got_all, full[np.ix_(everyone, everyone)])


def test_the_pipeline_parttree_distance_is_configurable():
    seqs = clusters([15, 15, 10], 50, 23)
    kmer = torchmsa.align(seqs, device="cpu", mode="fast", tree="parttree")
    config = AlignConfig(mode="fast", tree=TreeConfig(method="parttree", parttree_distance="lcs"))
    lcs = torchmsa.align(seqs, device="cpu", config=config)
    batch = SequenceBatch.from_input(seqs, "protein")
    assert lcs.tree.newick() == parttree(batch, distance="lcs", backend="cpu").newick()
    assert kmer.tree.newick() == parttree(batch, distance="kmer", backend="cpu").newick()
    assert lcs.tree.newick() != kmer.tree.newick()
    with pytest.raises(ArgumentError, match="distance"):
        parttree(batch, distance="edit")


@pytest.mark.parametrize("method", ["upgma", "upgma_mafft"])
def test_small_groups_in_one_compiled_call_equal_group_by_group(method):
    from torchmsa.cpu import tree as cpu_tree
    from torchmsa.parttree import leaf_trees
    from torchmsa.parttree.counts import BatchCounts

    seqs = clusters([9, 7, 12, 2], 60, 11, rate=0.25) + ["MK", "WWWWWWWWW"]  # no / few k-mers
    batch = SequenceBatch.from_input(seqs, "protein")
    counts = BatchCounts(batch, 6, "cpu", ExecutionPolicy(), None)
    rng = np.random.default_rng(3)
    members = [np.sort(rng.choice(len(seqs), size, replace=False)) for size in (2, 3, 9, 17, 30)]
    linkage = {"upgma": cpu_tree.UPGMA, "upgma_mafft": cpu_tree.MAFFT}[method]

    class GroupByGroup:  # the same counts, not a BatchCounts: the per-group path
        blocks, distances = counts.blocks, counts.distances

    fast = leaf_trees(counts, members, counts.self_counts, linkage)
    slow = leaf_trees(GroupByGroup(), members, counts.self_counts, linkage)
    for (c1, h1), (c2, h2) in zip(fast, slow, strict=True):
        assert np.array_equal(c1, c2) and np.array_equal(h1, h2)  # the same bits


def _assemble_oracle(names, groups, splits, small, empty):
    """The groups' subtrees joined in plain Python, node by node (what ``assemble_nodes``
    compiles): internal nodes in creation order, each raised to its children's heights."""
    from torchmsa.tree import Tree

    total = len(names)
    children, height = [], [0.0] * total

    def join(a, b, h):
        children.append((min(a, b), max(a, b)))
        height.append(max(h, height[a], height[b]))
        return len(height) - 1

    def place(leaves, joins):
        local = list(leaves)
        for (a, b), h in zip(joins[0].tolist(), joins[1].tolist()):
            local.append(join(local[a], local[b], h))
        return local[-1]

    def balanced(nodes, h):
        while len(nodes) > 1:
            pairs = [join(nodes[i], nodes[i + 1], h) for i in range(0, len(nodes) - 1, 2)]
            nodes = pairs + nodes[len(nodes) - len(nodes) % 2 :]
        return nodes[0]

    node = {}
    for g in range(len(groups) - 1, -1, -1):
        members = groups[g].tolist()
        if not members:
            continue
        if g in splits:
            node[g] = place([node[c] for c in splits[g][1]], splits[g][0])
        elif len(members) == 1:
            node[g] = members[0]
        elif small.get(g) is None:
            node[g] = balanced(members, 0.0)
        else:
            node[g] = place(members, small[g])
    roots = [node[0]] if 0 in node else []
    if len(empty):
        roots.append(balanced(empty.tolist(), 0.5))
    if len(roots) == 2:
        join(roots[0], roots[1], 0.5)
    kids = np.array(children, dtype=np.int64).reshape(-1, 2)
    parent = np.full(2 * total - 1, 2 * total - 2, np.int64)
    parent[kids.ravel()] = np.repeat(np.arange(total, 2 * total - 1), 2)
    return Tree(names, kids, np.array(height)[parent] - np.array(height))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_compiled_assembly_equals_the_python_oracle(monkeypatch, seed):
    import torchmsa.parttree as pt

    seen = []
    real = pt.assemble
    monkeypatch.setattr(pt, "assemble", lambda *a: seen.append(a) or real(*a))
    sizes = [int(x) for x in np.random.default_rng(seed).integers(1, 30, 12)]
    seqs = clusters(sizes, 70, seed, rate=0.15) + ["MK", "MKV", "AC"] + ["MKVLAAGHWTEQRS"] * 20
    batch = SequenceBatch.from_input(seqs, "protein")
    got = pt.parttree(batch, n_ref=4, leaf_size=6, backend="cpu")
    (args,) = seen
    want = _assemble_oracle(*args)
    assert np.array_equal(got.children, want.children)
    assert np.array_equal(got.lengths, want.lengths)  # the same bits
    assert len(args[4]) == 3 and any(v is None for v in args[3].values())  # empty, flat seen


def test_flat_pair_distances_equal_numpy_bit_for_bit():
    """Many 1-D pairs take the compiled pass (``cpu/kmer.py`` ``pair_distances_flat``): the
    same float64 values as the numpy rule, sides without k-mers included."""
    from torchmsa.parttree.counts import FLAT_PAIRS, pair_distances

    rng = np.random.default_rng(5)
    n = FLAT_PAIRS + 7
    sa, sb = rng.integers(0, 300, n), rng.integers(0, 300, n)
    counts = np.minimum(rng.integers(0, 300, n), np.minimum(sa, sb))
    got = pair_distances(counts, sa, sb)
    smaller = np.minimum(sa, sb)
    want = np.where(smaller > 0, 1.0 - counts / np.maximum(smaller, 1), 1.0)
    assert got.tobytes() == want.tobytes() and (smaller == 0).any()


@pytest.mark.parametrize("size", [2, 3])
@pytest.mark.parametrize("distance", ["kmer", "lcs"])
def test_a_tree_grown_over_ranks_is_the_tree_of_one_process(size, distance):
    from tests.thread_ranks import ThreadRanks

    batch = SequenceBatch.from_input(
        clusters([60, 5, 45, 30, 1, 50, 25], 90, 3, rate=0.15) + ["MK", "AC"], "protein"
    )
    args = {"n_ref": 6, "leaf_size": 8, "backend": "cpu", "distance": distance}
    want = parttree(batch, **args)
    got = ThreadRanks(size).run(lambda ranks: parttree(batch, ranks=ranks, **args))
    for tree in got:
        assert np.array_equal(tree.children, want.children)
        assert np.array_equal(tree.lengths, want.lengths)
