"""Decision 0047's addendum and 0065: families aligned in fast mode under the LCS single-linkage
tree with its shipped distance (``indel / (indel + LCS)``, ties broken by ``sqrt(indel) /
LCS``, 0065), without that tie term (``plain``: the distance before 0065), with ``sqrt(indel)
/ LCS`` alone, with ``indel ** alpha / LCS`` (``pow<alpha>``, e.g. ``pow0.75``: between the
two orderings), and with tied joins resolved largest-cluster-first or smallest-first instead of
by leaf ids; SP/TC against each family's reference, and how many of the tree's joins share a
height. CPU, one process; prints one line per family and variant, writes no CSV.

    python -m benchmarks.probes.lcs_distance rhv PDZ exthomfam_small/FN1 [--variants shipped,plain]

``--variants none`` prints only each family's line (joins that share a height, and the share of
fragments: sequences shorter than 0.6 times the family's median length). A family is
``SET/NAME`` under the benchmark data (``homfam`` when no set is given); SP and
TC count the reference's ``core.txt`` columns where it has one.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
from numba import njit

from benchmarks.harness import DATA_DIR

_VARIANTS = ("shipped", "plain", "sqrt", "big", "small")


@njit(cache=False)
def _pow_key_rows_alpha(lcs_rows, lens, r0, out, alpha):
    """``indel ** alpha / LCS`` (LCS at least 1; ``sqrt`` for ``alpha = 0.5``): from FAMSA's
    ordering (``alpha = 0.5``) to the shipped one (``alpha = 1``, that of ``indel / LCS``)."""
    for t in range(lcs_rows.shape[0]):
        i = r0 + t
        for j in range(i):
            c = np.float64(lcs_rows[t, j])
            indel = np.float64(lens[i]) + np.float64(lens[j]) - 2.0 * c
            top = np.sqrt(indel) if alpha == 0.5 else indel**alpha
            out[t, j] = top / max(c, 1.0)


@njit(cache=False)
def _plain_key_rows(lcs_rows, lens, r0, out):
    """``indel / (indel + LCS)`` without the tie term of decision 0065: the kernel shipped
    before it, kept as it was so that ``lcs_keys`` can time what the term costs."""
    for t in range(lcs_rows.shape[0]):
        i = r0 + t
        li = np.float64(lens[i])
        for j in range(i):
            c = np.float64(lcs_rows[t, j])
            union = (li + np.float64(lens[j])) - c
            out[t, j] = (union - c) / max(union, 1.0)


def _key_rows(variant: str):
    """The ``lcs_key_rows`` of a variant: ``plain`` the shipped distance without its tie term
    (before decision 0065), ``sqrt`` FAMSA's measure, ``pow<alpha>``; ``None`` for the
    shipped keys (and the tie variants, which change the joins instead)."""
    if variant == "plain":
        return _plain_key_rows
    alpha = 0.5 if variant == "sqrt" else float(variant[3:]) if variant.startswith("pow") else None
    if alpha is None:
        return None
    return lambda rows, lens, r0, out: _pow_key_rows_alpha(rows, lens, r0, out, alpha)


def _tie_joins(rule: str, shipped):
    """``spanning_joins`` whose tied edges join the largest clusters first (``big``) or the
    smallest (``small``), in place of leaf-id order."""

    def joins(lo, hi, w):
        lo, hi, w = (np.asarray(x) for x in (lo, hi, w))
        m = len(lo)
        if m == 0:
            return shipped(lo, hi, w)
        n = m + 1
        parent, size, node = list(range(n)), [1] * n, list(range(n))

        def find(x):
            while parent[x] != x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            return x

        def key(e):
            a, b = size[find(lo[e])], size[find(hi[e])]
            return (max(a, b), min(a, b)) if rule == "big" else (-min(a, b), -max(a, b))

        order = np.lexsort((hi, lo, w)).tolist()
        children, heights, k = [], [], 0
        while k < m:
            j = k
            while j < m and w[order[j]] == w[order[k]]:
                j += 1
            group = order[k:j]
            while group:
                e = group.pop(max(range(len(group)), key=lambda t: (key(group[t]), -t)))
                ra, rb = find(lo[e]), find(hi[e])
                children.append(sorted((node[ra], node[rb])))
                heights.append(w[e] / 2)
                parent[rb] = ra
                size[ra] += size[rb]
                node[ra] = n + len(children) - 1
            k = j
        return np.array(children, np.int64), np.array(heights, np.float64)

    return joins


def _tied_joins(seqs: list[str]) -> tuple[int, int]:
    """``(joins sharing a height with another, joins)`` of the shipped LCS tree."""
    from torchmsa import encode_sequences
    from torchmsa.ops.lcs import lcs_single_linkage

    enc = encode_sequences(sorted(set(s.upper() for s in seqs)), seqtype="protein")
    _, heights = lcs_single_linkage(enc.codes, enc.lengths, "cpu")
    _, counts = np.unique(heights, return_counts=True)
    return int(counts[counts > 1].sum()), len(heights)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("families", nargs="+", help="families: NAME (HomFam) or SET/NAME")
    ap.add_argument("--variants", default=",".join(_VARIANTS))
    args = ap.parse_args(argv)

    import torchmsa
    import torchmsa.cpu.slink as slink
    import torchmsa.cpu.tree as cpu_tree
    from torchmsa.io import read_sequences
    from torchmsa.metrics import score_alignment

    shipped_keys, shipped_joins = slink.lcs_key_rows, cpu_tree.spanning_joins
    for fam in args.families:
        folder, _, fam = fam.rpartition("/")
        base = DATA_DIR / (folder or "homfam") / fam
        recs = read_sequences(f"{base}.in.fasta.gz")
        core = f"{base}.core.txt" if os.path.exists(f"{base}.core.txt") else None
        tied, joins = _tied_joins([r.seq for r in recs])
        lens = np.array([len(r.seq.replace("-", "").replace(".", "")) for r in recs])
        short = float(np.mean(lens < 0.6 * np.median(lens)))
        print(f"{fam}: {len(recs)} sequences, {tied} of {joins} joins share a height, "
              f"{short:.1%} shorter than 0.6 x the median length", flush=True)  # fmt: skip
        for v in [v for v in args.variants.split(",") if v != "none"]:
            slink.lcs_key_rows = _key_rows(v) or shipped_keys
            big = v in ("big", "small")
            cpu_tree.spanning_joins = _tie_joins(v, shipped_joins) if big else shipped_joins
            t0 = time.perf_counter()
            aln = torchmsa.align(recs, device="cpu", mode="fast")
            s = score_alignment(aln, f"{base}.ref.fasta", core)
            took = time.perf_counter() - t0
            print(f"  {v:8s} SP {s.sp:.4f} TC {s.tc:.4f} ({took:.1f} s)", flush=True)
        slink.lcs_key_rows, cpu_tree.spanning_joins = shipped_keys, shipped_joins
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
