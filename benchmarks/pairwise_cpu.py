"""CPU pairwise DP throughput: torchmsa's numba path vs Biopython vs plain Python.

1,000 local score-only pairs of 300-residue proteins (BLOSUM62, open 10, extend 1), the same
pairs for every provider; GCUPS = DP cells (n * m summed over pairs) per second / 1e9, median of
``--repeats`` runs. Plain Python (the test oracle's recurrence) runs on a few pairs only: it is
there to show what the numba dependency buys.

    python -m benchmarks.pairwise_cpu [--pairs 1000] [--length 300] [--repeats 3] [--out DIR]

Appends one row per provider to ``pairwise_cpu.csv`` in ``--out`` (``benchmarks/results``).
"""

from __future__ import annotations

import argparse
import statistics
import sys

import numba
import numpy as np
import torch
from Bio.Align import PairwiseAligner, substitution_matrices

from benchmarks.harness import Timer, append_rows, markdown_table, run_metadata
from torchmsa.alphabet import PROTEIN, encode
from torchmsa.constants import LOCAL
from torchmsa.ops.pairwise import pairwise_score_codes
from torchmsa.scoring import get_scoring

AMINO = "ARNDCQEGHILKMFPSTWYV"
# Background amino-acid frequencies (Robinson & Robinson 1991), in the order of AMINO.
FREQ = np.array(
    [
        7.8,
        5.1,
        4.5,
        5.4,
        1.9,
        4.3,
        6.3,
        7.4,
        2.2,
        5.2,
        9.0,
        5.7,
        2.2,
        3.9,
        5.2,
        7.1,
        5.8,
        1.3,
        3.2,
        6.4,
    ]
)


def make_pairs(n_pairs: int, length: int, seed: int = 0) -> list[tuple[str, str]]:
    """Related pairs: b is a copy of a with 30% substitutions and a few indels, cut to length."""
    rng = np.random.default_rng(seed)
    p = FREQ / FREQ.sum()
    pairs = []
    for _ in range(n_pairs):
        a = rng.choice(list(AMINO), size=length, p=p)
        b = a.copy()
        sub = rng.random(length) < 0.3
        b[sub] = rng.choice(list(AMINO), size=int(sub.sum()), p=p)
        b = list(b)
        for _ in range(4):
            k = int(rng.integers(0, len(b)))
            if rng.random() < 0.5:
                del b[k : k + int(rng.integers(1, 6))]
            else:
                b[k:k] = list(rng.choice(list(AMINO), size=int(rng.integers(1, 6)), p=p))
        b = (b + list(rng.choice(list(AMINO), size=length, p=p)))[:length]
        pairs.append(("".join(a), "".join(b)))
    return pairs


def python_local_score(a, b, mat, go, ge) -> int:
    """Plain-Python Gotoh local score (the reference recurrence, O(m) memory)."""
    m = len(b)
    h_row, f_row = [0] * (m + 1), [-(1 << 29)] * (m + 1)
    best = 0
    for x in a:
        row = mat[x]
        diag, h_left, e = 0, 0, -(1 << 29)
        for j in range(1, m + 1):
            e = max(e - ge, h_left - go)
            f = max(f_row[j] - ge, h_row[j] - go)
            h = max(diag + row[b[j - 1]], e, f, 0)
            best = max(best, h)
            diag, h_row[j], f_row[j], h_left = h_row[j], h, f, h
    return best


def _median_seconds(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        with Timer() as t:
            fn()
        times.append(t.seconds)
    return statistics.median(times)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=1000)
    ap.add_argument("--length", type=int, default=300)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--python-pairs", type=int, default=3)
    ap.add_argument("--out", default=None, help="results folder (default benchmarks/results)")
    args = ap.parse_args(argv)

    pairs = make_pairs(args.pairs, args.length)
    sc = get_scoring("protein", "BLOSUM62", 10, 1)
    enc = [(encode(a, PROTEIN)[0], encode(b, PROTEIN)[0]) for a, b in pairs]
    width = args.length
    ca = torch.from_numpy(np.stack([np.pad(x, (0, width - len(x))) for x, _ in enc]))
    cb = torch.from_numpy(np.stack([np.pad(y, (0, width - len(y))) for _, y in enc]))
    la = torch.tensor([len(x) for x, _ in enc], dtype=torch.int32)
    lb = torch.tensor([len(y) for _, y in enc], dtype=torch.int32)
    mat = torch.from_numpy(sc.matrix.copy())
    cells = float(sum(len(x) * len(y) for x, y in enc))

    def run_torchmsa():
        return pairwise_score_codes(ca, la, cb, lb, mat, 10, 1, LOCAL, backend="cpu")[:, 0]

    ours = run_torchmsa()  # compiles (or loads the numba cache) outside the timing
    threads = numba.get_num_threads()
    rows = []
    t_all = _median_seconds(run_torchmsa, args.repeats)
    rows.append(
        {
            "tool": f"torchmsa numba ({threads} threads)",
            "threads": threads,
            "pairs": args.pairs,
            "seconds": t_all,
            "gcups": cells / t_all / 1e9,
        }
    )
    numba.set_num_threads(1)
    t_one = _median_seconds(run_torchmsa, args.repeats)
    numba.set_num_threads(threads)
    rows.append(
        {
            "tool": "torchmsa numba (1 thread)",
            "threads": 1,
            "pairs": args.pairs,
            "seconds": t_one,
            "gcups": cells / t_one / 1e9,
        }
    )

    aligner = PairwiseAligner(
        mode="local",
        substitution_matrix=substitution_matrices.load("BLOSUM62"),
        open_gap_score=-10,
        extend_gap_score=-1,
    )
    bio_scores = [aligner.score(a, b) for a, b in pairs]
    t_bio = _median_seconds(lambda: [aligner.score(a, b) for a, b in pairs], args.repeats)
    rows.append(
        {
            "tool": "Biopython PairwiseAligner.score",
            "pairs": args.pairs,
            "seconds": t_bio,
            "gcups": cells / t_bio / 1e9,
        }
    )
    if [int(s) for s in bio_scores] != ours.tolist():
        print("error: torchmsa and Biopython scores differ", file=sys.stderr)
        return 1

    k = min(args.python_pairs, len(enc))
    py_mat = sc.matrix.tolist()
    py_cells = float(sum(len(x) * len(y) for x, y in enc[:k]))
    py_in = [(x.tolist(), y.tolist()) for x, y in enc[:k]]
    t_py = _median_seconds(lambda: [python_local_score(x, y, py_mat, 10, 1) for x, y in py_in], 1)
    if [python_local_score(x, y, py_mat, 10, 1) for x, y in py_in] != ours[:k].tolist():
        print("error: plain-Python scores differ", file=sys.stderr)
        return 1
    rows.append(
        {
            "tool": "plain Python (same recurrence)",
            "pairs": k,
            "seconds": t_py,
            "gcups": py_cells / t_py / 1e9,
        }
    )

    for r in rows:
        r["speedup_vs_biopython"] = r["gcups"] / rows[2]["gcups"]
    for r in rows:
        r.update(length=args.length, repeats=args.repeats)
    path = append_rows("pairwise_cpu", rows, run_metadata("cpu"), args.out)
    print(markdown_table(rows, ["tool", "pairs", "seconds", "gcups", "speedup_vs_biopython"]))
    print(f"appended {len(rows)} rows to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
