"""Guide trees against plain-Python O(n^3) references, hand-computed examples and Biopython."""

from __future__ import annotations

from io import StringIO

import numpy as np
import pytest
import torch
from Bio import Phylo
from Bio.Phylo.TreeConstruction import DistanceMatrix, DistanceTreeConstructor

from torchmsa.errors import ArgumentError
from torchmsa.tree import METHODS, Tree, build_tree, from_newick, tree_from_tensor

LINKAGES = ("upgma", "upgma_mafft", "single")


def same_update(method):
    """The new-distance rule of torchmsa/cpu/tree.py, with the same float operations."""

    def update(x, y, si, sj):
        lo, hi, w_hi = (x, y, sj) if x <= y else (y, x, si)
        if method == "upgma":
            return lo + (w_hi / (si + sj)) * (hi - lo)
        if method == "upgma_mafft":
            return lo + 0.05 * (hi - lo)
        return lo

    return update


def textbook_update(method):
    """The rules as the literature writes them (UPGMA: size-weighted mean; MAFFT:
    0.9 * min + 0.1 * mean, https://mafft.cbrc.jp/alignment/software/algorithms/upg.html)."""

    def update(x, y, si, sj):
        if method == "upgma":
            return (si * x + sj * y) / (si + sj)
        if method == "upgma_mafft":
            return 0.9 * min(x, y) + 0.1 * (x + y) / 2
        return min(x, y)

    return update


def _branch_lengths(children, heights, n):
    """Each node's branch length: its parent's height minus its own (leaves at 0)."""
    height = [0.0] * n + heights
    lengths = [0.0] * (2 * n - 1)
    for k, (a, b) in enumerate(children):
        lengths[a] = height[n + k] - height[a]
        lengths[b] = height[n + k] - height[b]
    return lengths


def ref_linkage(d, update):
    """Naive agglomeration: scan all active pairs, join the first minimum into the lower slot."""
    n = len(d)
    dd = [[float(x) for x in row] for row in d]
    active, size, node = [True] * n, [1] * n, list(range(n))
    children, heights = [], []
    for step in range(n - 1):
        best = None
        for i in range(n):
            for j in range(i + 1, n):
                if active[i] and active[j] and (best is None or dd[i][j] < best[0]):
                    best = (dd[i][j], i, j)
        dij, i, j = best
        children.append(sorted((node[i], node[j])))
        heights.append(dij / 2)
        for k in range(n):
            if active[k] and k != i and k != j:
                dd[i][k] = dd[k][i] = update(dd[i][k], dd[j][k], size[i], size[j])
        active[j] = False
        size[i] += size[j]
        node[i] = n + step
    return children, _branch_lengths(children, heights, n)


def ref_single(d):
    """Naive single linkage: Kruskal over all pairs i < j sorted by (d(i, j), i, j)."""
    n = len(d)
    pairs = sorted((float(d[i][j]), i, j) for i in range(n) for j in range(i + 1, n))
    root, node = list(range(n)), list(range(n))

    def find(a):
        while root[a] != a:
            a = root[a]
        return a

    children, heights = [], []
    for dij, i, j in pairs:
        a, b = find(i), find(j)
        if a == b:
            continue
        children.append(sorted((node[a], node[b])))
        heights.append(dij / 2)
        root[max(a, b)] = min(a, b)
        node[min(a, b)] = n + len(children) - 1
    return children, _branch_lengths(children, heights, n)


def ref_nj(d):
    """Naive neighbour joining with the conventions of torchmsa/cpu/tree.py."""
    n = len(d)
    dd = [[float(x) for x in row] for row in d]
    active, node = [True] * n, list(range(n))
    children, lengths = [], [0.0] * (2 * n - 1)
    r = []
    for i in range(n):
        s = 0.0
        for k in range(n):
            if k != i:
                s += dd[i][k]
        r.append(s)
    for step in range(n - 2):
        m = n - step
        best = None
        for i in range(n):
            for j in range(i + 1, n):
                if active[i] and active[j]:
                    q = (m - 2) * dd[i][j] - r[i] - r[j]
                    if best is None or q < best[0]:
                        best = (q, i, j)
        _, i, j = best
        dij = dd[i][j]
        li = dij / 2 + (r[i] - r[j]) / (2 * (m - 2))
        lengths[node[i]], lengths[node[j]] = max(li, 0.0), max(dij - li, 0.0)
        children.append(sorted((node[i], node[j])))
        ri = 0.0
        for k in range(n):
            if active[k] and k != i and k != j:
                v = (dd[i][k] + dd[j][k] - dij) / 2
                r[k] = r[k] - dd[k][i] - dd[k][j] + v
                dd[i][k] = dd[k][i] = v
                ri += v
        r[i] = ri
        active[j] = False
        node[i] = n + step
    if n >= 2:
        i, j = [k for k in range(n) if active[k]]
        lengths[node[i]] = lengths[node[j]] = max(dd[i][j], 0.0) / 2
        children.append(sorted((node[i], node[j])))
    return children, lengths


def random_dist(rng, n, integer=False):
    x = rng.integers(0, 4, (n, n)).astype(float) if integer else rng.random((n, n))
    d = x + x.T
    np.fill_diagonal(d, rng.random(n))  # the diagonal must be ignored
    return d


def clades(tree: Tree) -> dict[frozenset, float]:
    """Leaf set of every node mapped to its branch length (the root's is 0)."""
    out = {frozenset([i]): tree.lengths[i] for i in range(tree.n_leaves)}
    for k, leaves in enumerate(tree.leaves_under()):
        out[frozenset(leaves.tolist())] = tree.lengths[tree.n_leaves + k]
    return out


def splits(leaf_sets, n) -> set[frozenset]:
    """Non-trivial unrooted splits, each written as the side without leaf 0."""
    out = set()
    for s in leaf_sets:
        side = frozenset(range(n)) - s if 0 in s else frozenset(s)
        if 1 < len(side) < n - 1:
            out.add(side)
    return out


def leaves_of(tree: Tree, v: int) -> list[int]:
    """Leaves under node v by recursion: the left subtree's, then the right's."""
    if v < tree.n_leaves:
        return [v]
    a, b = tree.children[v - tree.n_leaves].tolist()
    return leaves_of(tree, a) + leaves_of(tree, b)


def bio_tree(d, method):
    n = len(d)
    names = [str(i) for i in range(n)]
    dm = DistanceMatrix(names, [[float(d[i][j]) for j in range(i + 1)] for i in range(n)])
    return getattr(DistanceTreeConstructor(), method)(dm)


def bio_leaf_sets(tree):
    return [frozenset(int(t.name) for t in c.get_terminals()) for c in tree.find_clades()]


@pytest.mark.parametrize("method", LINKAGES)
@pytest.mark.parametrize("integer", [False, True], ids=["float", "ties"])
def test_linkage_matches_reference(method, integer):
    rng = np.random.default_rng(11 + integer)
    for n in list(range(1, 9)) + [17, 33, 40]:
        for _ in range(3):
            d = random_dist(rng, n, integer)
            tree = build_tree(d, method)
            if method == "single":
                children, lengths = ref_single(d)
            else:
                children, lengths = ref_linkage(d, same_update(method))
            assert tree.children.tolist() == children, (method, n)
            np.testing.assert_allclose(tree.lengths, lengths, rtol=1e-12, atol=0)
            assert (tree.lengths >= 0).all()


def test_single_linkage_breaks_ties_by_leaf_pair():
    # d(0, 3) = 1, then d(0, 2) = d(1, 3) = 2: leaf pair (0, 2) comes first, so {0, 3} takes
    # leaf 2 before leaf 1 (the slot rule would take cluster 1 first, its smallest leaf)
    d = np.full((4, 4), 3.0)
    for i, j, x in ((0, 3, 1.0), (0, 2, 2.0), (1, 3, 2.0)):
        d[i, j] = d[j, i] = x
    tree = build_tree(d, "single")
    assert tree.children.tolist() == [[0, 3], [2, 4], [1, 5]]
    assert tree.lengths.tolist() == [0.5, 1.0, 1.0, 0.5, 0.5, 0.0, 0.0]
    slot_rule, _ = ref_linkage(d, same_update("single"))
    assert slot_rule == [[0, 3], [1, 4], [2, 5]]


@pytest.mark.parametrize("method", LINKAGES)
def test_linkage_matches_textbook_rule(method):
    rng = np.random.default_rng(5)
    for n in (3, 9, 30):
        d = random_dist(rng, n)
        tree = build_tree(d, method)
        children, lengths = ref_linkage(d, textbook_update(method))
        assert tree.children.tolist() == children
        np.testing.assert_allclose(tree.lengths, lengths, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("integer", [False, True], ids=["float", "ties"])
def test_nj_matches_reference(integer):
    rng = np.random.default_rng(3 + integer)
    for n in list(range(1, 9)) + [20, 40, 90]:
        d = random_dist(rng, n, integer)
        tree = build_tree(d, "nj")
        children, lengths = ref_nj(d)
        assert tree.children.tolist() == children, n
        np.testing.assert_allclose(tree.lengths, lengths, rtol=1e-12, atol=1e-12)


def test_upgma_hand_computed():
    # Wikipedia's UPGMA example (5S rRNA of a Bacillus subtilis, b B. stearothermophilus,
    # c Lactobacillus viridescens, d Acholeplasma modicum, e Micrococcus luteus): (a, b) join
    # at 17 -> height 8.5; d(ab, e) = (23 + 21) / 2 = 22 -> 11; d(abe, c) = (2 * 25.5 + 39) / 3
    # = 30, d(abe, d) = (2 * 32.5 + 43) / 3 = 36; (c, d) at 28 -> 14; root at (30 + 36) / 2 =
    # 33 -> 16.5.
    d = np.array(
        [
            [0, 17, 21, 31, 23],
            [17, 0, 30, 34, 21],
            [21, 30, 0, 28, 39],
            [31, 34, 28, 0, 43],
            [23, 21, 39, 43, 0],
        ],
        float,
    )
    got = clades(build_tree(d, "upgma"))
    ab, abe, cd = frozenset({0, 1}), frozenset({0, 1, 4}), frozenset({2, 3})
    want = {ab: 11 - 8.5, abe: 16.5 - 11, cd: 16.5 - 14, frozenset(range(5)): 0.0}
    want.update({frozenset([0]): 8.5, frozenset([1]): 8.5, frozenset([4]): 11.0})
    want.update({frozenset([2]): 14.0, frozenset([3]): 14.0})
    assert got == want


def test_mafft_linkage_hand_computed():
    # (a, b) join at 1 (height 0.5); d(ab, c) = 0.9 * 2 + 0.1 * (2 + 10) / 2 = 2.4 and
    # d(ab, d) = 8, so c joins at 2.4 (height 1.2) before (c, d) at 5; then
    # d(abc, d) = 0.9 * 5 + 0.1 * (8 + 5) / 2 = 5.15 (height 2.575). Average linkage gives
    # d(ab, c) = 6 instead and joins (c, d) first.
    d = np.array([[0, 1, 2, 8], [1, 0, 10, 8], [2, 10, 0, 5], [8, 8, 5, 0]], float)
    got = clades(build_tree(d, "upgma_mafft"))
    assert got[frozenset({0, 1})] == pytest.approx(1.2 - 0.5)
    assert got[frozenset({0, 1, 2})] == pytest.approx(2.575 - 1.2)
    assert got[frozenset([3])] == pytest.approx(2.575)
    assert frozenset({2, 3}) in clades(build_tree(d, "upgma"))


def test_nj_hand_computed():
    # Wikipedia's neighbour-joining example: a:2, b:3, c:4, d:2, u-v:3, v-w:2, e-w:1 (the
    # root halves e-w); the second join ties (u, c) with (d, e) and takes (u, c).
    d = np.array(
        [
            [0, 5, 9, 9, 8],
            [5, 0, 10, 10, 9],
            [9, 10, 0, 8, 7],
            [9, 10, 8, 0, 3],
            [8, 9, 7, 3, 0],
        ],
        float,
    )
    got = clades(build_tree(d, "nj"))
    want = {frozenset([i]): x for i, x in enumerate([2.0, 3.0, 4.0, 2.0, 0.5])}
    want.update({frozenset({0, 1}): 3.0, frozenset({0, 1, 2}): 2.0})
    want.update({frozenset({0, 1, 2, 3}): 0.5, frozenset(range(5)): 0.0})
    assert got == want


@pytest.mark.parametrize("method", METHODS)
def test_all_ties_give_a_caterpillar(method):
    # every distance 1: slot 0 keeps winning the smallest pair, leaves join in index order
    n = 6
    d = np.ones((n, n)) - np.eye(n)
    tree = build_tree(d, method)
    assert tree.children.tolist() == [[0, 1]] + [[k + 1, n + k - 1] for k in range(1, n - 1)]


def ultrametric(rng, n):
    """Distances 2 * height of the lowest common ancestor in a random clock tree."""
    groups = [[i] for i in range(n)]
    d = np.zeros((n, n))
    height = 0.0
    sets = []
    while len(groups) > 1:
        a, b = sorted(rng.choice(len(groups), 2, replace=False))
        height += rng.random() + 0.01
        for x in groups[a]:
            for y in groups[b]:
                d[x, y] = d[y, x] = 2 * height
        groups[a] = groups[a] + groups.pop(b)
        sets.append(frozenset(groups[a]))
    return d, sets


@pytest.mark.parametrize("method", LINKAGES)
def test_linkage_topology_matches_biopython_on_clock_trees(method):
    # Biopython's "upgma" averages the two joined clusters without their sizes, so the two
    # agree in general only where every linkage recovers the true tree: ultrametric input.
    rng = np.random.default_rng(7)
    for n in (3, 8, 25):
        d, true_sets = ultrametric(rng, n)
        ours = set(clades(build_tree(d, method)))
        theirs = set(bio_leaf_sets(bio_tree(d, "upgma")))
        assert ours == theirs
        assert set(true_sets) <= ours


def test_nj_topology_matches_biopython():
    rng = np.random.default_rng(9)
    for n in (4, 7, 15, 30):
        d = random_dist(rng, n)
        np.fill_diagonal(d, 0)
        ours = splits(clades(build_tree(d, "nj")), n)
        theirs = splits(bio_leaf_sets(bio_tree(d, "nj")), n)
        assert ours == theirs


def test_small_trees():
    one = build_tree(np.zeros((1, 1)), "nj", names=["only"])
    assert one.children.shape == (0, 2) and one.lengths.tolist() == [0.0]
    assert one.root == 0 and one.levels() == [] and one.weights().tolist() == [1.0]
    assert one.newick() == "only;" and from_newick("only;", ["only"]).n_leaves == 1
    for method in METHODS:
        two = build_tree(np.array([[0, 3.0], [3.0, 0]]), method)
        assert two.children.tolist() == [[0, 1]] and two.root == 2
        assert two.lengths.tolist() == [1.5, 1.5, 0.0]


def test_levels_and_leaves_under():
    rng = np.random.default_rng(2)
    for method in METHODS:
        for n in (2, 5, 23, 60):
            tree = build_tree(random_dist(rng, n, integer=n > 20), method)
            levels = tree.levels()
            group = dict.fromkeys(range(n), 0)
            for g, ids in enumerate(levels, start=1):
                assert ids.tolist() == sorted(ids.tolist())
                for v in ids.tolist():
                    a, b = tree.children[v - n]
                    assert a in group and b in group  # children come earlier
                    assert max(group[a], group[b]) == g - 1
                    group[v] = g
            assert sorted(group) == list(range(2 * n - 1))
            under = [u.tolist() for u in tree.leaves_under()]
            assert under == [leaves_of(tree, v) for v in range(n, 2 * n - 1)]
            assert tree.leaf_order().tolist() == leaves_of(tree, tree.root)


@pytest.mark.parametrize(
    "text, want",
    [
        ("((A:1,B:1):2,C:3);", [6 / 7, 6 / 7, 9 / 7]),
        # A: 1/3 + 2/2 + 1, B: 1/3 + 2/2 + 3, C: 1/3 + 1, D: 4; mean 3
        ("(((A:1,B:3):2,C:1):1,D:4);", [7 / 9, 13 / 9, 4 / 9, 4 / 3]),
        ("((A:0,B:0):0,C:0);", [1.0, 1.0, 1.0]),
        ("(A:0,(B:0,C:0):0);", [1.0, 1.0, 1.0]),
    ],
)
def test_weights_hand_computed(text, want):
    names = ["A", "B", "C", "D"][: len(want)]
    np.testing.assert_allclose(from_newick(text, names).weights(), want, rtol=1e-12)


def test_newick_round_trip_and_biopython_reads_it():
    rng = np.random.default_rng(4)
    odd = ["a b", "x(y)", "o'neil", "semi;colon", "c,d", "k:v", "[br]", "", "tab\there", "αβ"]
    for method in METHODS:
        for n in (1, 2, 3, 10, 40):
            names = [odd[i] if i < len(odd) else f"seq_{i}" for i in range(n)]
            tree = build_tree(random_dist(rng, n), method, names=names)
            text = tree.newick()
            back = from_newick(text, names)
            assert back.newick() == text
            assert clades(back) == clades(tree)
            bio = Phylo.read(StringIO(text), "newick")
            assert sorted(t.name or "" for t in bio.get_terminals()) == sorted(names)
            assert bio.total_branch_length() == pytest.approx(tree.lengths.sum())


def test_from_newick_reads_comments_labels_and_whitespace():
    tree = from_newick(" ( A [c] :1 , ( B:2,C ) inner:0.5 ) root:9 ;\n", ["C", "B", "A"])
    assert clades(tree) == {
        frozenset([2]): 1.0,
        frozenset([1]): 2.0,
        frozenset([0]): 0.0,
        frozenset({0, 1}): 0.5,
        frozenset({0, 1, 2}): 0.0,
    }


@pytest.mark.parametrize(
    "text, names, match",
    [
        ("(A,B,C);", "ABC", "3 children"),
        ("((A,B),D);", "ABC", "'D' is not one of"),
        ("(A,B);", "ABC", "every name"),
        ("(A,A);", "AB", "occurs twice"),
        ("(A,B", "AB", "unbalanced"),
        ("(A,'B);", "AB", "unterminated"),
        ("(A,B);x", "AB", "after the closing"),
        ("(A,B:x);", "AB", "not a number"),
        ("(A,,B);", "AB", "empty subtree"),
        ("(A,B);", "AA", "more than once"),
    ],
)
def test_from_newick_errors(text, names, match):
    with pytest.raises(ArgumentError, match=match):
        from_newick(text, list(names))


@pytest.mark.parametrize(
    "dist, kwargs, match",
    [
        (np.zeros((2, 3)), {}, "square"),
        (np.array([[0, np.nan], [np.nan, 0]]), {}, "not finite"),
        (np.array([[0, -1.0], [-1.0, 0]]), {}, "negative"),
        (np.array([[0, 1.0], [2.0, 0]]), {}, "symmetri"),
        (np.zeros((2, 2)), {"method": "wpgma"}, "method"),
        (np.zeros((2, 2)), {"names": ["a"]}, "names"),
    ],
)
def test_build_tree_errors(dist, kwargs, match):
    with pytest.raises(ArgumentError, match=match):
        build_tree(dist, **kwargs)


@pytest.mark.parametrize("method", METHODS)
def test_tree_from_tensor_equals_build_tree_and_keeps_its_input(method):
    rng = np.random.default_rng(17)
    for n, integer in ((1, False), (2, True), (9, True), (30, False)):
        d = random_dist(rng, n, integer)
        want = build_tree(d, method)
        for t in (torch.from_numpy(d.copy()), torch.from_numpy(d.astype(np.float32))):
            before = t.clone()
            got = tree_from_tensor(t, method)
            assert got.children.tolist() == want.children.tolist(), (method, n)
            if t.dtype == torch.float64:
                assert np.array_equal(got.lengths, want.lengths)
            assert torch.equal(t, before)  # the clustering works in its own copy


def tie_heavy(rng, n, values):
    """Distances drawn from a few values (many equal pairs: the tie rule decides the tree)."""
    x = rng.integers(0, values, (n, n)).astype(float) / 3
    d = np.minimum(x, x.T)
    np.fill_diagonal(d, rng.random(n))  # the diagonal must be ignored
    return d


@pytest.mark.interpreter
def test_triton_single_linkage_equals_host(device):
    from torchmsa.cpu import tree as cpu_tree
    from torchmsa.ops.linkage import single_linkage

    rng = np.random.default_rng(5)
    for n, values in ((1, 2), (2, 2), (3, 1), (17, 3), (20, 2), (33, 5), (40, 1000)):
        d = tie_heavy(rng, n, values)
        want = cpu_tree.single_linkage(d)
        t = torch.from_numpy(d).to(device)
        before = t.clone()
        rounds = []
        children, heights = single_linkage(t, "triton", rounds=rounds)
        assert (n > 1) <= rounds[0] <= np.ceil(np.log2(n)), (n, rounds)  # Borůvka's bound
        assert np.array_equal(children, want[0]), (n, values)
        assert np.array_equal(heights, want[1]), (n, values)
        assert torch.equal(t, before)  # only read


@pytest.mark.gpu
def test_gpu_single_linkage_tree_equals_build_tree_at_size():
    rng = np.random.default_rng(6)
    for n, values in ((3000, 40), (2500, 10**9)):
        d = tie_heavy(rng, n, values)
        want = build_tree(d, "single")
        names = [f"s{i}" for i in range(n)]
        got = tree_from_tensor(torch.from_numpy(d).cuda(), "single", names)
        assert np.array_equal(got.children, want.children), n
        assert np.array_equal(got.lengths, want.lengths), n
        assert got.names == names
    with pytest.raises(ArgumentError, match="names"):
        tree_from_tensor(torch.from_numpy(d).cuda(), "single", names[:-1])


@pytest.mark.parametrize(
    "dist, match",
    [
        (np.zeros((2, 3)), "square"),
        (np.array([[0, np.nan], [np.nan, 0]]), "not finite"),
        (np.array([[0, np.inf], [np.inf, 0]]), "not finite"),
        (np.array([[0, -1.0], [-1.0, 0]]), "negative"),
        (np.array([[0, 1.0, 1.0], [1.0, 0, 2.0], [1.0, 3.0, 0]]), r"dist\[1, 2\] = 2.0"),
    ],
)
def test_tree_from_tensor_errors_are_build_trees(dist, match):
    with pytest.raises(ArgumentError, match=match):
        tree_from_tensor(torch.from_numpy(dist), "upgma")


def test_device_check_reads_every_block():
    # the GPU's blockwise check (run here on CPU tensors): any bad off-diagonal entry, in
    # any block, fails it; the diagonal is ignored
    from torchmsa.tree import valid_distances

    d = random_dist(np.random.default_rng(2), 9)
    for block in (1, 27, 81):  # 1, 3 and 9 rows per block
        assert valid_distances(torch.from_numpy(d), block)
        for i, j, value in ((3, 3, np.nan), (8, 1, -0.5), (8, 7, np.inf), (0, 8, 5.0)):
            bad = d.copy()
            bad[i, j] = value
            if i != j and value < 0:
                bad[j, i] = value
            assert valid_distances(torch.from_numpy(bad), block) == (i == j), (block, i, j, value)


def test_tree_validates_its_arrays():
    with pytest.raises(ArgumentError, match="larger id"):
        Tree(["a", "b", "c"], np.array([[0, 4], [1, 2]]), np.zeros(5))
    with pytest.raises(ArgumentError, match="exactly one"):
        Tree(["a", "b", "c"], np.array([[0, 1], [1, 3]]), np.zeros(5))
    with pytest.raises(ArgumentError, match="lengths"):
        Tree(["a", "b"], np.array([[0, 1]]), np.zeros(2))


def _random_tree(n: int, seed: int) -> Tree:
    """A random rooted binary tree over ``n`` leaves: random pairs of roots joined in turn,
    random branch lengths (some 0)."""
    rng = np.random.default_rng(seed)
    roots, children = list(range(n)), []
    for k in range(n - 1):
        i, j = sorted(rng.choice(len(roots), 2, replace=False).tolist(), reverse=True)
        children.append((roots.pop(i), roots.pop(j)))
        roots.append(n + k)
    lengths = rng.random(2 * n - 1) * (rng.random(2 * n - 1) < 0.8)
    lengths[-1] = 0.0
    return Tree([f"s{i}" for i in range(n)], np.array(children), lengths)


@pytest.mark.parametrize("n,seed", [(2, 0), (3, 1), (300, 2), (5000, 3)])
def test_compiled_node_walks_equal_the_python_loops(monkeypatch, n, seed):
    """Large trees walk their nodes in numba (``cpu/tree_walks.py``): the same sizes, levels,
    leaf order and, bit for bit, weights as the Python loops."""
    import torchmsa.tree as tree_mod

    got = {}
    for limit in (1, 10**9):  # compiled, then Python
        monkeypatch.setattr(tree_mod, "COMPILED_WALK_LEAVES", limit)
        t = _random_tree(n, seed)
        got[limit] = (t.sizes(), t.levels(), t.leaf_order(), t.weights(), t.leaves_under())
    (s1, l1, o1, w1, u1), (s2, l2, o2, w2, u2) = got[1], got[10**9]
    assert np.array_equal(s1, s2) and np.array_equal(o1, o2)
    assert len(l1) == len(l2) and all(np.array_equal(a, b) for a, b in zip(l1, l2))
    assert w1.tobytes() == w2.tobytes()
    assert all(np.array_equal(a, b) for a, b in zip(u1, u2))
    assert s1[-1] == n and sorted(o1.tolist()) == list(range(n))
