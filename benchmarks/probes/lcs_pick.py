"""Decision 0065: can a reference-free objective choose, per family, between the LCS tree's
two distances (the shipped ``indel / (indel + LCS)`` and FAMSA's ``sqrt(indel) / LCS``)?

Each family is aligned in fast mode under both (as ``benchmarks.probes.lcs_distance`` does);
the line gives the change, second distance minus shipped, of TC and SP against the
reference, and of four objectives of the alignment itself, each per ``N^2``:

* ``res``: the substitution scores of every pair of residues sharing a column;
* ``lin``: ``res`` less ``gap_extend`` for every residue facing a gap in a column;
* ``cols``: minus the number of columns;
* ``aff``: ``lin`` less ``gap_open - gap_extend`` for every gap opening in a row, counted
  against each of the other ``N - 1`` rows (halved).

An objective would do if its sign followed TC's. CPU, one process; prints, writes no CSV.

    python -m benchmarks.probes.lcs_pick DEATH phoslip rhv PDZ exthomfam_small/kazal
"""

from __future__ import annotations

import argparse
import os

import numpy as np

from benchmarks.harness import DATA_DIR
from benchmarks.probes.lcs_distance import _key_rows


def objectives(aln, matrix: np.ndarray, gap_open: int, gap_extend: int) -> dict[str, float]:
    """The four objectives of the module docstring for one alignment."""
    codes = aln.codes.cpu().numpy().astype(np.int64)
    n, width = codes.shape
    size, gap = aln.alphabet.size, aln.alphabet.gap_code
    counts = np.zeros((width, size + 1), np.int64)
    cols = np.broadcast_to(np.arange(width), codes.shape)
    np.add.at(counts, (cols.ravel(), codes.ravel()), 1)
    res = counts[:, :size].astype(np.float64)
    s = matrix[:size, :size].astype(np.float64)
    pairs = 0.5 * (np.einsum("ca,ab,cb->", res, s, res) - (res * np.diag(s)).sum())
    facing = (counts[:, size].astype(np.float64) * res.sum(1)).sum()
    is_gap = codes == gap
    opens = float((is_gap[:, 1:] & ~is_gap[:, :-1]).sum() + is_gap[:, 0].sum())
    lin = pairs - gap_extend * facing
    aff = lin - (gap_open - gap_extend) * opens * (n - 1) / 2
    return {"res": pairs / n**2, "lin": lin / n**2, "cols": -width, "aff": aff / n**2}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("families", nargs="+", help="families: NAME (HomFam) or SET/NAME")
    args = ap.parse_args(argv)

    import torchmsa
    import torchmsa.cpu.slink as slink
    from torchmsa.io import read_sequences
    from torchmsa.metrics import score_alignment
    from torchmsa.scoring import get_scoring

    scoring = get_scoring("protein")
    matrix = np.asarray(scoring.matrix)
    shipped = slink.lcs_key_rows
    for fam in args.families:
        folder, _, name = fam.rpartition("/")
        base = DATA_DIR / (folder or "homfam") / name
        recs = read_sequences(f"{base}.in.fasta.gz")
        core = f"{base}.core.txt" if os.path.exists(f"{base}.core.txt") else None
        out = {}
        try:
            for variant, keys in (("shipped", shipped), ("sqrt", _key_rows("sqrt"))):
                slink.lcs_key_rows = keys
                aln = torchmsa.align(recs, device="cpu", mode="fast")
                s = score_alignment(aln, f"{base}.ref.fasta", core)
                gaps = int(scoring.gap_open), int(scoring.gap_extend)
                out[variant] = (s.sp, s.tc, objectives(aln, matrix, *gaps))
        finally:
            slink.lcs_key_rows = shipped
        (sp0, tc0, o0), (sp1, tc1, o1) = out["shipped"], out["sqrt"]
        line = f"{fam:28s} dTC {100 * (tc1 - tc0):+6.1f} dSP {100 * (sp1 - sp0):+6.1f}"
        print(line + "".join(f" | {k} {o1[k] - o0[k]:+.4g}" for k in o0), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
