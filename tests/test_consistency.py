import numpy as np
import pytest
import torch

import torchmsa
from torchmsa.consistency import WEIGHT_MAX, Consistency, local_library
from torchmsa.progressive import Forest, ResidueTable
from torchmsa.scoring import get_scoring
from torchmsa.sequences import SequenceBatch
from torchmsa.tree import build_tree

AMINO = "ARNDCQEGHILKMFPSTWYV"


def _family(seed, n=6, length=30):
    rng = np.random.default_rng(seed)
    root = "".join(rng.choice(list(AMINO), length))
    out = []
    for _ in range(n):
        s = "".join(c if rng.random() > 0.25 else rng.choice(list(AMINO)) for c in root)
        k = int(rng.integers(0, length - 5))
        out.append(s[:k] + s[k + int(rng.integers(0, 4)) :])
    return out


def _library(seqs):
    batch = SequenceBatch.from_input(seqs, "protein")
    sc = get_scoring("protein", "BLOSUM62", 11, 1)
    mat = torch.from_numpy(sc.matrix.copy())
    return batch, local_library(batch.codes, batch.lengths, mat, 11, 1, backend="cpu")


def test_library_entries_are_the_local_alignments():
    seqs = _family(0)
    batch, lib = _library(seqs)
    n = len(seqs)
    for x in range(n):
        for y in range(x + 1, n):
            r = torchmsa.pairwise_align(
                seqs[x], seqs[y], mode="local", gap_open=11, gap_extend=1, device="cpu"
            )
            i, j, pairs, same = r.a_range[0], r.b_range[0], [], 0
            for a, b in zip(*r.aligned):
                if a != "-" and b != "-":
                    pairs.append((i, j))
                    same += a == b
                i += a != "-"
                j += b != "-"
            sel = (lib.x == x) & (lib.y == y)
            got = sorted(zip(lib.i[sel].tolist(), lib.j[sel].tolist()))
            w = round(same * WEIGHT_MAX / len(pairs)) if pairs else 0
            assert got == (sorted(pairs) if w > 0 else [])
            if w > 0:
                assert set(lib.w[sel].tolist()) == {
                    (same * WEIGHT_MAX + len(pairs) // 2) // len(pairs)
                }
            selfs = [
                torchmsa.pairwise_align(
                    s, s, mode="local", gap_open=11, gap_extend=1, traceback=False
                ).score
                for s in (seqs[x], seqs[y])
            ]
            want = min(1.0, max(0.0, 1 - r.score / max(1, min(selfs))))
            assert lib.dist[x, y] == pytest.approx(want) and lib.dist[y, x] == lib.dist[x, y]


def test_level_tiles_match_brute_force():
    seqs = _family(1, n=5)
    batch, lib = _library(seqs)
    tree = build_tree(lib.dist, "upgma", batch.names)
    forest = Forest.from_trees([tree], [len(seqs)])
    cons = Consistency([lib], [tree], [len(seqs)], forest, weight=7)
    table = ResidueTable.from_batch(batch.codes, batch.lengths)
    weights = torch.tensor([3, 5, 7, 11, 13])
    # Level 0: leaves are their own nodes, columns are residue positions.
    ids = forest.levels[0]
    kids = np.concatenate([forest.children[ids - 5][:, 0], forest.children[ids - 5][:, 1]])
    seq_kid = torch.full((5,), -1)
    seq_kid[torch.from_numpy(kids)] = torch.arange(len(kids))
    P = len(ids)
    n = batch.lengths[torch.from_numpy(kids[:P])].long()
    m = batch.lengths[torch.from_numpy(kids[P:])].long()
    s_off = torch.cumsum(n * m, 0) - n * m
    kid_w = weights[torch.from_numpy(kids)]
    got = cons.level_tiles(0, table, seq_kid, P, s_off, n, m, kid_w, weights)
    for p in range(P):
        a, b = int(kids[p]), int(kids[p + P])
        brute = np.zeros((int(n[p]), int(m[p])), np.int64)
        for e in range(len(lib)):
            x, y = int(lib.x[e]), int(lib.y[e])
            if {x, y} == {a, b}:
                ia, ib = (
                    (int(lib.i[e]), int(lib.j[e])) if x == a else (int(lib.j[e]), int(lib.i[e]))
                )
                brute[ia, ib] += int(lib.w[e]) * int(weights[a]) * int(weights[b])
        want = (brute * 7) // (int(weights[a]) * int(weights[b]))
        block = got[int(s_off[p]) : int(s_off[p]) + int(n[p] * m[p])].view(int(n[p]), int(m[p]))
        assert block.tolist() == want.tolist()


def test_accurate_mode_aligns_and_keeps_residues():
    seqs = _family(2, n=7, length=40)
    aln = torchmsa.align(seqs, device="cpu", mode="accurate")
    assert aln.metadata["mode"] == "accurate" and aln.metadata["library_entries"] > 0
    assert [r.replace("-", "") for r in aln.rows] == seqs
    again = torchmsa.align(seqs, device="cpu", mode="accurate")
    assert aln.rows == again.rows
