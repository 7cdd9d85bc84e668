"""Where torchmsa loses to FAMSA on a large family: its guide tree, or its profile alignment?

    python -m benchmarks.famsa_probe [--dataset balifam10000] [--cases PF00687,PF00037,PF00505]
        [--gap-open 20] [--threads 2] [--name famsa_probe] [--out DIR]

For each case of ``--dataset`` (a large-family set: balifam10000, homfam), on the CPU (needs
``pyfamsa``, FAMSA's Python binding, for the FAMSA rows; they are skipped without it):

* ``torchmsa``: default mode (single linkage on LCS distances, one progressive pass);
* ``torchmsa, FAMSA's tree``: the same pass under the guide tree FAMSA builds for the same
  sequences (``pyfamsa.Aligner.build_tree``, read with ``torchmsa.tree.from_newick`` in place
  of default mode's first tree);
* ``torchmsa, gap_open G``: default mode with a larger gap-opening cost (``--gap-open``);
* ``FAMSA``: pyfamsa's alignment with its defaults.

SP / TC on the reference rows and core columns (the large-family protocol). If torchmsa under
FAMSA's tree scores like torchmsa under its own, the tree is not what loses.
"""

from __future__ import annotations

import argparse
import sys
import time

from benchmarks.accuracy import case_files
from benchmarks.common import DATA_DIR, run_metadata, write_results
from torchmsa.io import read_sequences
from torchmsa.metrics import restrict_to_reference, score_alignment


def _score(dataset: str, case: str, names, rows):
    _, ref, core = case_files(DATA_DIR / dataset, case)
    test = restrict_to_reference(list(zip(names, rows)), ref)
    return score_alignment(test, ref, core)


def _famsa_tree_fn(threads: int):
    import pyfamsa

    from torchmsa.tree import from_newick

    def first_tree(batch, method, backend):
        seqs = [
            pyfamsa.Sequence(n.encode(), r.upper().encode())
            for n, r in zip(batch.names, batch.residues)
        ]
        tree = pyfamsa.Aligner(threads=threads, keep_duplicates=True).build_tree(seqs)
        return from_newick(tree.dumps().decode(), batch.names)

    return first_tree


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default="balifam10000")
    ap.add_argument("--cases", default="PF00687,PF00037,PF00505")
    ap.add_argument("--gap-open", type=float, default=20.0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--name", default="famsa_probe")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    import torch

    import torchmsa
    import torchmsa.pipeline as pipeline

    torch.set_num_threads(args.threads)
    try:
        import pyfamsa
    except ImportError:
        pyfamsa = None
    own_tree = pipeline._first_tree
    rows = []
    for case in args.cases.split(","):
        path = case_files(DATA_DIR / args.dataset, case)[0]
        runs = [
            ("torchmsa", {}, None),
            (f"torchmsa, gap_open {args.gap_open:g}", {"gap_open": args.gap_open}, None),
        ]
        if pyfamsa is not None:
            runs.insert(1, ("torchmsa, FAMSA's tree", {}, _famsa_tree_fn(args.threads)))
        for label, kwargs, tree_fn in runs:
            pipeline._first_tree = tree_fn or own_tree
            try:
                t = time.perf_counter()
                aln = torchmsa.align(str(path), device="cpu", mode="default", **kwargs)
                seconds = time.perf_counter() - t
            finally:
                pipeline._first_tree = own_tree
            s = _score(args.dataset, case, list(aln.names), list(aln.rows))
            rows.append({"case": case, "run": label, "sp": s.sp, "tc": s.tc, "seconds": seconds})
            print(rows[-1], flush=True)
        if pyfamsa is not None:
            recs = read_sequences(path)
            seqs = [pyfamsa.Sequence(r.name.encode(), r.seq.upper().encode()) for r in recs]
            t = time.perf_counter()
            out = pyfamsa.Aligner(threads=args.threads).align(seqs)
            seconds = time.perf_counter() - t
            s = _score(
                args.dataset, case, [x.id.decode() for x in out], [x.sequence.decode() for x in out]
            )
            rows.append({"case": case, "run": "FAMSA", "sp": s.sp, "tc": s.tc, "seconds": seconds})
            print(rows[-1], flush=True)
    header = (
        f"{args.dataset} cases on the CPU ({args.threads} threads). SP / TC on the reference rows "
        "and core columns; `torchmsa, FAMSA's tree`: default mode's pass under FAMSA's guide "
        "tree for the same sequences.\n"
    )
    write_results(args.name, rows, header, out_dir=args.out, metadata=run_metadata("cpu"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
