"""Does the guide tree limit large-family accuracy? One progressive pass under two trees.

    python -m benchmarks.tree_source [--cases balifam10000:PF13393] [--sizes 2000,5000]
        [--threads 2] [--name tree_source] [--out DIR]

For each case and size, a deterministic subsample (the reference rows plus a seeded draw of
the others) is aligned by torchmsa ``fast`` mode (6-mer distances, MAFFT-style UPGMA, one
progressive pass) and by MAFFT ``--auto``. Then the same single progressive pass runs under a
tree built the same way from MAFFT's alignment (p-distances, MAFFT-style UPGMA). If that pass
scores close to MAFFT, the progressive alignment is sound and the 6-mer tree is what costs
accuracy. Scores: SP / TC on the reference rows and core columns (the large-family protocol).
"""

from __future__ import annotations

import argparse
import random
import subprocess
import tempfile
import time
from pathlib import Path

import torch

from benchmarks.common import DATA_DIR, run_metadata, write_results
from torchmsa.io import read_alignment, read_sequences
from torchmsa.metrics import restrict_to_reference, score_alignment


def subsample(dataset: str, case: str, size: int, seed: int = 0) -> list[tuple[str, str]]:
    """The reference rows plus ``size - refs`` others drawn with ``seed``, in input order."""
    base = DATA_DIR / dataset
    records = read_sequences(base / f"{case}.in.fasta.gz")
    refs = {r.name for r in read_alignment(base / f"{case}.ref.fasta")}
    others = [i for i, r in enumerate(records) if r.name not in refs]
    keep = {i for i, r in enumerate(records) if r.name in refs}
    keep |= set(random.Random(seed).sample(others, max(0, size - len(keep))))
    return [(records[i].name, records[i].seq) for i in sorted(keep)]


def _score(dataset: str, case: str, rows: list[tuple[str, str]]):
    base = DATA_DIR / dataset
    ref = base / f"{case}.ref.fasta"
    return score_alignment(restrict_to_reference(rows, ref), ref, base / f"{case}.core.txt")


def _pass_with_tree(seqs, mafft_rows=None):
    """torchmsa's one progressive pass: 6-mer tree, or the tree of MAFFT's p-distances."""
    import torchmsa
    from torchmsa import pipeline
    from torchmsa.alignment import Alignment
    from torchmsa.sequences import SequenceBatch
    from torchmsa.tree import tree_from_tensor

    if mafft_rows is None:
        aln = torchmsa.align(dict(seqs), device="cpu", mode="fast")
        return list(zip(aln.names, aln.rows))
    batch = SequenceBatch.from_input(dict(seqs), "auto", torch.device("cpu"))
    dist = pipeline._alignment_distances(_codes_of(mafft_rows, batch), batch.alphabet.gap_code)
    tree = tree_from_tensor(dist, "upgma_mafft", batch.names)
    scoring = pipeline.profile_scoring(batch.alphabet)
    ((codes, _),) = pipeline._progressive_jobs([batch], [tree], scoring, "cpu", None)
    aln = Alignment(batch.names, batch.descriptions, batch.residues, codes, batch.alphabet)
    return list(zip(aln.names, aln.rows))


def _codes_of(rows: list[tuple[str, str]], batch) -> torch.Tensor:
    """MAFFT's alignment as codes of ``batch`` (its residues at MAFFT's columns)."""
    by_name = dict(rows)
    width = len(rows[0][1])
    out = torch.full((len(batch), width), batch.alphabet.gap_code, dtype=torch.uint8)
    for k, name in enumerate(batch.names):
        cols = torch.tensor([c != "-" for c in by_name[name]])
        out[k, cols] = batch.codes[k, : int(batch.lengths[k])].cpu()
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default="balifam10000:PF13393")
    ap.add_argument("--sizes", default="2000,5000")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--name", default="tree_source")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    rows = []
    for spec in args.cases.split(","):
        dataset, case = spec.split(":")
        for size in map(int, args.sizes.split(",")):
            seqs = subsample(dataset, case, size)
            with tempfile.TemporaryDirectory() as tmp:
                path = Path(tmp) / "in.fasta"
                path.write_text("".join(f">{n}\n{s}\n" for n, s in seqs))
                t = time.perf_counter()
                out = subprocess.run(
                    ["mafft", "--auto", "--thread", str(args.threads), str(path)],
                    capture_output=True,
                    text=True,
                    check=True,
                ).stdout
                mafft_s = time.perf_counter() - t
                out_path = Path(tmp) / "out.fasta"
                out_path.write_text(out)
                mafft = [(r.name, r.seq) for r in read_alignment(out_path)]
            runs = [
                ("mafft --auto", mafft, mafft_s),
                ("torchmsa fast (6-mer tree)", *_timed(_pass_with_tree, seqs)),
                (
                    "torchmsa pass, tree from MAFFT's alignment",
                    *_timed(_pass_with_tree, seqs, mafft),
                ),
            ]
            for label, aligned, seconds in runs:
                s = _score(dataset, case, aligned)
                rows.append(
                    {"dataset": dataset, "case": case, "n": size, "run": label}
                    | {"sp": round(s.sp, 4), "tc": round(s.tc, 4), "width": len(aligned[0][1])}
                    | {"seconds": round(seconds, 1)}
                )
                print(rows[-1], flush=True)
    header = (
        "One progressive pass of torchmsa under its 6-mer guide tree and under a tree from "
        "MAFFT `--auto`'s alignment of the same subsample (see the module docstring); "
        f"CPU, MAFFT with {args.threads} threads.\n"
    )
    write_results(args.name, rows, header, args.out, run_metadata("cpu"))
    return 0


def _timed(fn, *args):
    t = time.perf_counter()
    out = fn(*args)
    return out, time.perf_counter() - t


if __name__ == "__main__":
    raise SystemExit(main())
