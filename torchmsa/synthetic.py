"""Small synthetic protein or nucleotide families for the code that must run the pipeline on
something before real work arrives: the server's cost model and ``torchmsa.warmup``."""

from __future__ import annotations

import numpy as np

__all__ = ["AMINO", "family"]

AMINO = "ARNDCQEGHILKMFPSTWYV"


def family(
    n: int, length: int, seed: int, *, letters: str = AMINO, indels: bool = False
) -> list[str]:
    """``n`` sequences evolved from one random ancestor of ``length`` residues: 20% of the
    positions substituted; ``indels``: then one stretch of up to 5 residues deleted."""
    rng = np.random.default_rng(seed)
    alphabet = np.frombuffer(letters.encode("ascii"), np.uint8)
    size = len(alphabet)
    anc = rng.integers(0, size, length)
    out = []
    for _ in range(n):
        s = anc.copy()
        hit = rng.random(length) < 0.2
        s[hit] = rng.integers(0, size, int(hit.sum()))
        if indels:
            cut = rng.integers(0, length - 10)
            s = np.concatenate([s[:cut], s[cut + rng.integers(0, 6) :]])
        out.append(alphabet[s].tobytes().decode())
    return out
