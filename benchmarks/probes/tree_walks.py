"""Decision 0061: a guide tree's node walks (sizes, levels, leaf spans, weights) as the Python
loops and compiled (``torchmsa/cpu/tree_walks.py``), on a random tree of ``--n`` leaves; the
median of ``--repeats`` timings of each, after one untimed call (compiling). Prints one line.

    python -m benchmarks.probes.tree_walks --n 100000
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np


def random_tree(n: int, seed: int = 1):
    """A random rooted binary tree: random pairs of roots joined in turn."""
    from torchmsa.tree import Tree

    rng = np.random.default_rng(seed)
    roots, children = list(range(n)), np.empty((n - 1, 2), np.int64)
    for k in range(n - 1):
        i, j = sorted(rng.choice(len(roots), 2, replace=False).tolist(), reverse=True)
        children[k] = (roots.pop(i), roots.pop(j))
        roots.append(n + k)
    return Tree([f"s{i}" for i in range(n)], children, rng.random(2 * n - 1))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)

    import torchmsa.tree as tree_mod

    base = random_tree(args.n)
    took = {}
    for label, limit in (("python", 1 << 62), ("compiled", 1)):
        tree_mod.COMPILED_WALK_LEAVES = limit
        times = []
        for _ in range(args.repeats + 1):
            t = tree_mod.Tree(base.names, base.children, base.lengths)
            t0 = time.perf_counter()
            t.sizes(), t.levels(), t.leaf_order(), t.weights()
            times.append(time.perf_counter() - t0)
        took[label] = statistics.median(times[1:])
    print(f"{args.n} leaves: python {took['python']:.4f} s, compiled {took['compiled']:.4f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
