"""Seed 004's Table 7 workload: U users, each submitting ``n`` proteins of about ``length``
residues, their sets at similarity ``s`` to each other.

    python -m benchmarks.tools.gmsa_workload --users 4 [--n 300] [--length 498]
        [--similarity 0.9] [--seed 0] -o DIR

GMSA (Bai et al.) defines a workload's similarity as the share of identical sequences among
the users' sets. One family is made: a random ancestor of ``length`` residues (background
amino-acid frequencies) evolved into clades (about 15% substitutions and a few short indels
per clade), and each sequence evolved from its clade's root (about 10% more substitutions,
an indel now and then). A shared pool of ``n`` sequences is drawn once; each user's set is
``round(s * n)`` sequences of the pool (a random subset, so two users share most but not all
of them) and ``n - round(s * n)`` sequences of the family made for that user alone, in a
shuffled order. Deterministic for a seed.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

AMINO = "ARNDCQEGHILKMFPSTWYV"
# background amino-acid frequencies (UniProt), in AMINO's order
FREQ = np.array(
    [8.25, 5.53, 4.06, 5.45, 1.37, 3.93, 6.75, 7.07, 2.27, 5.96,
     9.66, 5.84, 2.42, 3.86, 4.70, 6.56, 5.34, 1.08, 2.92, 6.87]
)  # fmt: skip
CLADES = 12


def _mutate(rng: np.random.Generator, seq: np.ndarray, sub: float, indel: float) -> np.ndarray:
    """``seq`` with a share ``sub`` of its residues substituted and about ``indel`` indels per
    residue (each 1-4 residues long, insertions and deletions alike)."""
    p = FREQ / FREQ.sum()
    out = seq.copy()
    hit = rng.random(out.shape[0]) < sub
    out[hit] = rng.choice(20, size=int(hit.sum()), p=p)
    for _ in range(rng.poisson(indel * out.shape[0])):
        at = int(rng.integers(0, out.shape[0]))
        size = int(rng.integers(1, 5))
        if rng.random() < 0.5:
            out = np.concatenate([out[:at], rng.choice(20, size=size, p=p), out[at:]])
        elif out.shape[0] > size + 10:
            out = np.delete(out, np.arange(at, min(at + size, out.shape[0])))
    return out


class Family:
    """One protein family: its clade roots, and as many members as asked for."""

    def __init__(self, length: int, seed: int):
        self.rng = np.random.default_rng(seed)
        p = FREQ / FREQ.sum()
        ancestor = self.rng.choice(20, size=length, p=p).astype(np.uint8)
        self.roots = [_mutate(self.rng, ancestor, 0.15, 0.004) for _ in range(CLADES)]

    def member(self) -> str:
        root = self.roots[int(self.rng.integers(0, CLADES))]
        seq = _mutate(self.rng, root, 0.10, 0.002)
        return "".join(AMINO[c] for c in seq)


def workload(
    users: int, n: int = 300, length: int = 498, similarity: float = 0.9, seed: int = 0
) -> list[dict[str, str]]:
    """The users' sets, each a dict of name to sequence (names unique across the workload:
    ``pool<i>`` for the shared sequences, ``u<user>_<i>`` for a user's own)."""
    fam = Family(length, seed)
    pool = {f"pool{i:04d}": fam.member() for i in range(n)}
    shared = int(round(similarity * n))
    names = list(pool)
    out = []
    for u in range(users):
        rng = np.random.default_rng([seed, u])
        picked = [names[i] for i in sorted(rng.choice(n, size=shared, replace=False))]
        own = {f"u{u:02d}_{i:03d}": fam.member() for i in range(n - shared)}
        items = [(k, pool[k]) for k in picked] + list(own.items())
        order = rng.permutation(len(items))
        out.append(dict(items[i] for i in order))
    return out


def fasta(seqs: dict[str, str]) -> str:
    """A set as FASTA text, 60 residues a line."""
    lines = []
    for name, seq in seqs.items():
        lines.append(f">{name}")
        lines.extend(seq[i : i + 60] for i in range(0, len(seq), 60))
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--users", type=int, required=True)
    p.add_argument("--n", type=int, default=300)
    p.add_argument("--length", type=int, default=498)
    p.add_argument("--similarity", type=float, default=0.9)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("-o", "--out", required=True, help="folder for user<k>.fasta")
    args = p.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    sets = workload(args.users, args.n, args.length, args.similarity, args.seed)
    for u, seqs in enumerate(sets):
        (out / f"user{u:02d}.fasta").write_text(fasta(seqs))
    print(f"{len(sets)} sets of {args.n} sequences in {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
