"""Accurate mode's terminal extensions: the stretches at sequences' ends that their partners
lack, set aside before the progressive pass (:func:`terminal_trims`)."""

from __future__ import annotations

import numpy as np
import torch

from torchmsa.config import ExecutionPolicy
from torchmsa.consistency.library import Library
from torchmsa.constants import LOCAL
from torchmsa.ops.pairwise import pairwise_score_codes
from torchmsa.sequences import segments
from torchmsa.stages import stage

__all__ = ["terminal_trims"]


def _pair_spans(lib: Library, n: int):
    """Each library pair ``(x, y)`` and its entries' span: ``x, y, i_lo, i_hi, j_lo, j_hi``."""
    if lib.spans is not None:
        return list(lib.spans.T)
    x, i, y, j = (t.cpu().numpy() for t in (lib.x, lib.i, lib.y, lib.j))
    pair, inv = np.unique(x * n + y, return_inverse=True)
    out = [pair // n, pair % n]
    for v in (i, j):
        lo = np.full(len(pair), np.iinfo(np.int64).max)
        hi = np.full(len(pair), -1)
        np.minimum.at(lo, inv, v)
        np.maximum.at(hi, inv, v)
        out += [lo, hi]
    return out


def _lower_medians(owner: np.ndarray, value: np.ndarray, n: int) -> np.ndarray:
    """Per owner ``0 .. n-1``, the lower median of its values (0 where it has none)."""
    order = np.lexsort((value, owner))
    count = np.bincount(owner, minlength=n)
    first = np.concatenate([[0], np.cumsum(count)[:-1]])
    med = np.zeros(n, np.int64)
    has = count > 0
    med[has] = value[order][first[has] + (count[has] - 1) // 2]
    return med


def _related(codes, local, pieces_a, pieces_b, backend, batch_cells) -> np.ndarray:
    """Whether each pair of pieces ``(row, start, count)`` (int64 arrays) aligns locally with an
    E-value of at most ``local.evalue`` (Karlin-Altschul, ``local.lam`` and ``local.k``)."""
    dev = codes.device
    out = np.zeros(len(pieces_a[0]), bool)
    m = pieces_a[2].astype(np.float64)
    nb = pieces_b[2].astype(np.float64)
    need = np.log(local.k * np.maximum(m * nb, 1.0) / local.evalue) / local.lam
    todo = np.nonzero((m > 0) & (nb > 0))[0]
    mat = local.matrix.to(device=dev, dtype=torch.int32)
    width = int(max(m.max(), nb.max())) if len(m) else 0
    step = max(1, batch_cells // max(1, 2 * width))
    for lo in range(0, len(todo), step):
        sel = todo[lo : lo + step]
        a, b = (
            [torch.from_numpy(np.ascontiguousarray(t[sel])).to(dev) for t in p]
            for p in (pieces_a, pieces_b)
        )
        ca = segments(codes, a[0], a[1], a[2], local.gap_code)
        cb = segments(codes, b[0], b[1], b[2], local.gap_code)
        score = pairwise_score_codes(
            ca, a[2].int(), cb, b[2].int(), mat, local.gap_open, local.gap_extend, LOCAL, backend
        )[:, 0]
        out[sel] = score.cpu().numpy() >= need[sel]
    return out


def terminal_trims(
    lib: Library,
    codes: torch.Tensor,
    lengths: torch.Tensor,
    local,
    min_excess: int,
    backend="auto",
    *,
    policy: ExecutionPolicy | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Residues to set aside at each sequence's start and end (``int64 [N]`` each).

    For sequence x and a partner y, the start excess is how many more residues x has than y
    before their local alignment (the span of their library entries); the end excess likewise
    after it. A sequence whose median excess over its partners reaches ``min_excess`` carries a
    terminal extension that the others lack (a domain of its own): aligning it to them can only
    add false pairs, while matrix offsets reward it. The median keeps one homologous extension
    in a partner, or one short local alignment, from deciding.

    The best local alignment of a pair stops at a long insertion, so the homologous part beyond
    it would look like an extension too. A pair whose remainders before (after) the local
    alignment still align locally with an E-value of at most ``local.evalue`` shares them: its
    excess counts as 0.

    Arguments:
        lib: the library of ``codes`` (``uint8 [N, L]``) and ``lengths``.
        local: the local alignments' scoring, :class:`LocalScoring`.
        min_excess: the median excess (residues) from which a stretch is set aside.
        backend: DP backend of the remainders' local alignments.
        policy: ``local_batch_cells`` caps pairs per call times their ops width.
    """
    with stage("terminal_trims"):
        return _terminal_trims(
            lib, codes, lengths, local, min_excess, backend, policy or ExecutionPolicy()
        )


def _terminal_trims(lib, codes, lengths, local, min_excess, backend, policy):
    n = int(lengths.numel())
    zero = torch.zeros(n, dtype=torch.int64)
    x, y, ilo, ihi, jlo, jhi = _pair_spans(lib, n)
    if len(x) == 0:
        return zero, zero.clone()
    length = lengths.cpu().numpy().astype(np.int64)
    owner = np.concatenate([x, y])
    out = []
    for excess, before in (
        (ilo - jlo, True),
        ((length[x] - 1 - ihi) - (length[y] - 1 - jhi), False),
    ):
        med = _lower_medians(owner, np.concatenate([excess, -excess]), n)
        deciding = ((med[x] >= min_excess) & (excess >= min_excess)) | (
            (med[y] >= min_excess) & (-excess >= min_excess)
        )
        k = np.nonzero(deciding)[0]
        if before:
            pieces_a = (x[k], np.zeros_like(k), ilo[k])
            pieces_b = (y[k], np.zeros_like(k), jlo[k])
        else:
            pieces_a = (x[k], ihi[k] + 1, length[x[k]] - 1 - ihi[k])
            pieces_b = (y[k], jhi[k] + 1, length[y[k]] - 1 - jhi[k])
        excess = excess.copy()
        related = _related(codes, local, pieces_a, pieces_b, backend, policy.local_batch_cells)
        excess[k[related]] = 0
        med = _lower_medians(owner, np.concatenate([excess, -excess]), n)
        out.append(np.where(med >= min_excess, med, 0))
    head, tail = out
    whole = head + tail >= length  # nothing would be left: keep the sequence whole
    head[whole] = 0
    tail[whole] = 0
    return torch.from_numpy(head), torch.from_numpy(tail)
