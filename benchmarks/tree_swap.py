"""Guide tree or progressive pass? Each case aligned twice by torchmsa's one progressive pass
(fast mode, the tree given): under torchmsa's single-linkage LCS tree and under FAMSA's guide
tree (pyfamsa ``Aligner.build_tree``, its default single linkage, duplicates kept), scored
against the reference. Where FAMSA beats torchmsa on a family, this tells whether the tree
carries the difference (issue #37).

    python -m benchmarks.tree_swap homfam/rhv homfam/LIM exthomfam_small/tln [--threads 2]
        [--device cpu] [--data DIR] [--out DIR]

Appends one row per case and tree to ``tree_swap.csv`` (``tree``: ``torchmsa-lcs`` or
``famsa``; ``sp``, ``tc``; ``tree_s``: the tree's build time, ``align_s``: the pass's).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from benchmarks.harness import DATA_DIR, RESULTS_DIR, Timer, append_rows, run_metadata, score


def famsa_tree(records, threads: int) -> str:
    """FAMSA's guide tree of ``records`` as Newick text."""
    import pyfamsa

    seqs = [pyfamsa.Sequence(r.name.encode(), r.seq.upper().encode()) for r in records]
    text = pyfamsa.Aligner(threads=threads, keep_duplicates=True).build_tree(seqs).dumps()
    return text.decode() if isinstance(text, bytes) else text


def case_rows(spec: str, args) -> list[dict]:
    """The two rows of one ``dataset/case``."""
    import torchmsa
    from torchmsa.io import read_sequences

    dataset, case = spec.split("/")
    folder = args.data / dataset
    records = read_sequences(folder / f"{case}.in.fasta.gz")
    core = folder / f"{case}.core.txt"
    rows = []
    builders = {
        "torchmsa-lcs": lambda: torchmsa.build_tree(records, method="lcs", device=args.device),
        "famsa": lambda: famsa_tree(records, args.threads),
    }
    for name, build in builders.items():
        with Timer() as made:
            tree = build()
        with Timer() as t:
            aln = torchmsa.align(records, tree=tree, mode="fast", device=args.device)
        sp, tc = score(aln.names, list(aln.rows), folder / f"{case}.ref.fasta",
                       core if core.is_file() else None)  # fmt: skip
        rows.append({"scope": "case", "dataset": dataset, "case": case, "tree": name,
                     "n_seqs": len(records), "sp": sp, "tc": tc,
                     "tree_s": round(made.seconds, 2), "align_s": round(t.seconds, 2)})  # fmt: skip
        print(f"{spec} {name}: SP {sp:.3f} TC {tc:.3f}", flush=True)
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cases", nargs="+", help="dataset/case names, e.g. homfam/rhv")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--data", type=Path, default=DATA_DIR)
    ap.add_argument("--out", type=Path, default=RESULTS_DIR)
    args = ap.parse_args(argv)
    from benchmarks.harness import set_threads

    set_threads(args.threads)
    meta = run_metadata(args.device, None if argv is None else [__file__, *argv])
    rows = []
    for spec in args.cases:
        try:
            rows += case_rows(spec, args)
        except (ValueError, RuntimeError) as exc:  # FAMSA refuses some inputs ('U')
            print(f"{spec}: {type(exc).__name__}: {exc}", file=sys.stderr)
    path = append_rows("tree_swap", rows, meta, args.out)
    print(f"appended {len(rows)} rows to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
