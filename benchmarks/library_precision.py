"""How often accurate mode's library entries are right, by the reference alignments.

    python -m benchmarks.library_precision [--dataset balibase3] [--cases BB] [--limit N]
        [--out DIR]

For every selected case, builds the pairwise alignments of stage 1 (BLOSUM62, gap open 11,
extend 1, on the CPU) and calls an aligned residue pair right when the reference alignment puts
its two residues in one column. Two libraries are compared:

* ``local-identity``: every residue pair of each pair's local alignment, weighted by the pair's
  identity over its aligned residues (accurate mode's library before the window weights);
* ``global-window``: :func:`torchmsa.consistency.local_library`'s entries, from end-gap-free
  global alignments, weighted by identity plus the window score less a floor.

For each it reports the entries, the fraction right, and the weight-weighted fraction right
(the share of the library's weight on right pairs, what the consistency scores add up). A
second table breaks the residue pairs of the global alignments down by their pair's identity
weight and their window score (the substitution scores within
:data:`~torchmsa.consistency.ENTRY_WINDOW` pairs of them, inside their gapless block): the
evidence for the rule.

Writes ``library_precision-<dataset>.csv`` and ``.md`` (and ``-grid.csv``) into ``--out``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import torch
from Bio import SeqIO

from benchmarks.accuracy import load_cases, select_cases
from benchmarks.common import DATA_DIR, RESULTS_DIR, run_metadata, write_results
from torchmsa.consistency import (
    ENTRY_WINDOW,
    WEIGHT_MAX,
    _entries,
    _window_scores,
    local_library,
)
from torchmsa.cpu.dp import LOCAL, SEMIGLOBAL
from torchmsa.ops.pairwise import pairwise_align_codes
from torchmsa.scoring import get_scoring
from torchmsa.sequences import SequenceBatch

IDENT_EDGES = (0, 8, 16, 24, 32, 40, 48, 65)  # identity weight buckets (1/64 units)
WINDOW_EDGES = (-1000, 0, 10, 20, 30, 40, 1000)  # window-score buckets


def _columns(ref_rows: dict[str, str], names: list[str]) -> np.ndarray:
    """``int64 [N, L]``: the reference column of each input sequence's residues (-1 padded)."""
    cols = [[k for k, ch in enumerate(ref_rows[name]) if ch not in "-."] for name in names]
    out = np.full((len(cols), max(map(len, cols), default=0)), -1, dtype=np.int64)
    for r, c in enumerate(cols):
        out[r, : len(c)] = c
    return out


def _right(cols: np.ndarray, x, i, y, j) -> np.ndarray:
    return cols[x, i] == cols[y, j]


def _pairs(batch: SequenceBatch, mat: torch.Tensor, mode: int):
    """Aligned residue pairs of all pairs' alignments: x, i, y, j, identity weight, window."""
    n = len(batch)
    xs, ys = torch.triu_indices(n, n, 1)
    info, ops = pairwise_align_codes(
        batch.codes[xs],
        batch.lengths[xs],
        batch.codes[ys],
        batch.lengths[ys],
        mat,
        11,
        1,
        mode,
        backend="cpu",
    )
    ca, cb = batch.codes[xs], batch.codes[ys]
    pair, i, j, same = _entries(ops, info, ca, cb)
    matched = torch.bincount(pair, minlength=xs.numel())
    ident = torch.bincount(pair, weights=same.double(), minlength=xs.numel()).long()
    w = ((ident * WEIGHT_MAX + matched // 2) // matched.clamp_min(1))[pair]
    score = mat[ca[pair, i].long(), cb[pair, j].long()]
    win = _window_scores(pair, i, j, score, ENTRY_WINDOW)
    return xs[pair].numpy(), i.numpy(), ys[pair].numpy(), j.numpy(), w.numpy(), win.numpy()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dataset", default="balibase3")
    ap.add_argument("--cases", default="BB", help="comma-separated case or set tokens")
    ap.add_argument("--limit", type=int, default=None, help="evenly spaced cases")
    ap.add_argument("--out", type=Path, default=RESULTS_DIR)
    args = ap.parse_args(argv)
    torch.set_num_threads(1)

    data = DATA_DIR / args.dataset
    cases = select_cases(load_cases(data), args.cases.split(","), args.limit)
    totals = {k: np.zeros(4) for k in ("local-identity", "global-window")}  # n, right, w, w right
    grid = np.zeros((len(IDENT_EDGES) - 1, len(WINDOW_EDGES) - 1, 2))
    for case in cases:
        name = case["case"]
        batch = SequenceBatch.from_input(str(data / f"{name}.in.fasta"), "protein")
        ref = {r.id: str(r.seq) for r in SeqIO.parse(data / f"{name}.ref.fasta", "fasta")}
        cols = _columns(ref, batch.names)
        sc = get_scoring(batch.alphabet, "BLOSUM62", 11, 1)
        mat = torch.from_numpy(sc.matrix.copy()).int()

        x, i, y, j, w, _ = _pairs(batch, mat, LOCAL)
        ok = _right(cols, x, i, y, j)
        keep = w > 0
        totals["local-identity"] += [keep.sum(), ok[keep].sum(), w.sum(), w[ok].sum()]

        lib = local_library(batch.codes, batch.lengths, mat, 11, 1, backend="cpu")
        lx, li, ly, lj, lw = (t.numpy() for t in (lib.x, lib.i, lib.y, lib.j, lib.w))
        ok = _right(cols, lx, li, ly, lj)
        totals["global-window"] += [len(lx), ok.sum(), lw.sum(), lw[ok].sum()]

        x, i, y, j, w, win = _pairs(batch, mat, SEMIGLOBAL)
        ok = _right(cols, x, i, y, j)
        a = np.searchsorted(IDENT_EDGES, w, side="right") - 1
        b = np.searchsorted(WINDOW_EDGES, win, side="right") - 1
        np.add.at(grid, (a, b, 0), 1)
        np.add.at(grid, (a, b, 1), ok)
        print(f"{name:10s} {len(batch):4d} sequences", flush=True)

    meta = run_metadata("cpu")
    rows = [
        {
            "dataset": args.dataset,
            "cases": len(cases),
            "library": k,
            "entries": int(v[0]),
            "right": round(v[1] / max(1, v[0]), 4),
            "weighted_right": round(v[3] / max(1, v[2]), 4),
            "mean_weight": round(v[2] / max(1, v[0]), 2),
        }
        for k, v in totals.items()
    ]
    cmd = "python -m benchmarks.library_precision " + " ".join(
        f"--{k} {v}" for k, v in vars(args).items() if v is not None and k != "out"
    )
    stem = f"library_precision-{args.dataset}"
    grid_rows = []
    lines = [
        "",
        "Global alignments' residue pairs: fraction right (pairs) by identity weight "
        "(rows, 1/64) and window score (columns)",
        "",
    ]
    heads = [f"{WINDOW_EDGES[k]}..{WINDOW_EDGES[k + 1] - 1}" for k in range(len(WINDOW_EDGES) - 1)]
    lines.append("| identity | " + " | ".join(heads) + " |")
    lines.append("|---" * (len(heads) + 1) + "|")
    for r in range(len(IDENT_EDGES) - 1):
        cells = []
        for c in range(len(WINDOW_EDGES) - 1):
            n, k = grid[r, c]
            cells.append(f"{k / n:.2f} ({int(n)})" if n else "-")
            grid_rows.append(
                {
                    "identity_lo": IDENT_EDGES[r],
                    "window_lo": heads[c],
                    "pairs": int(n),
                    "right": round(k / n, 4) if n else "",
                }
            )
        lines.append(f"| {IDENT_EDGES[r]}..{IDENT_EDGES[r + 1] - 1} | " + " | ".join(cells) + " |")
    header = (
        f"Command: `{cmd}`. {len(cases)} cases of `{args.dataset}`. An entry is right when the "
        "reference puts its two residues in one column."
    )
    _, md = write_results(stem, rows, header, args.out, meta)
    with open(md, "a") as fh:
        fh.write("\n".join(lines) + "\n")
    write_results(stem + "-grid", grid_rows, "", args.out, meta, markdown=False)
    print(md.read_text())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
