"""Whether the ranks of one shared alignment hold the same input (decision 0068).

Ranks that share one alignment exchange partial results that only fit together when every
rank encoded the same sequences under the same configuration. Under ``torchrun`` a program may
as well give each rank data of its own (a data-parallel feature pipeline), so before sharing,
the ranks compare a fingerprint of what they hold; where it differs, each aligns its own.
"""

from __future__ import annotations

import torch

__all__ = ["fingerprint", "held_alike"]

ROWS = 1 << 16  # rows of codes summed at a time


def fingerprint(batches, config: str) -> tuple:
    """``(config, then per job: N, residues, a checksum of the lengths, of the codes)``: the
    checksums weight each length by its row and each code by its place, so a different order
    or a changed residue shows (not a cryptographic hash: it guards against mistakes)."""
    out: list = [config]
    for b in batches:
        codes, lengths = b.codes, b.lengths.to(torch.int64)
        n, width = codes.shape
        dev = codes.device
        rows = torch.arange(n, device=dev, dtype=torch.int64) % 65521 + 1
        cols = torch.arange(width, device=dev, dtype=torch.int64) % 251 + 1
        total = torch.zeros((), dtype=torch.int64, device=dev)
        for at in range(0, n, ROWS):
            part = codes[at : at + ROWS].to(torch.int64) * cols
            total += (part.sum(1) * rows[at : at + ROWS]).sum()
        sums = torch.stack([lengths.sum(), (lengths * rows).sum(), total]).tolist()
        out.append((n, *sums))
    return tuple(out)


def held_alike(ranks, batches, config: str) -> bool:
    """Whether every rank of ``ranks`` holds what this one does (one meeting)."""
    mine = fingerprint(batches, config)
    return all(theirs == mine for theirs in ranks.all_gather(mine))
