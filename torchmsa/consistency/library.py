"""Accurate mode's stage 1: all-pairs alignments of the sequences, and the library of aligned
residue pairs with integer weights built on them (:func:`local_library`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from torchmsa.config import ConsistencyConfig, ExecutionPolicy, MemoryBudget
from torchmsa.constants import LOCAL, OP_LEFT, OP_MATCH, OP_UP, SEMIGLOBAL
from torchmsa.errors import ResourceError
from torchmsa.ops.pairwise import pairwise_align_codes, pairwise_score_codes
from torchmsa.stages import stage

__all__ = [
    "Library",
    "LocalScoring",
    "entry_values",
    "entries_per_residue",
    "library_bytes",
    "local_library",
    "window_scores",
]

# Peak bytes per library entry over accurate mode's stages: the library's five int64 columns,
# the progressive levels' sorted copy with its forest nodes (:class:`Consistency`), and the
# refinement's per-edge tiles. Measured on the CPU as the peak RSS growth over the entries
# (near-identical sequences, where every residue pair is an entry): 266-298 bytes for
# 150 x 100, 300 x 100 and 100 x 400 residues.
ENTRY_BYTES = 320


def entries_per_residue(config: ConsistencyConfig) -> int:
    """At most how many entries a residue has in one pair under ``config.entries``: one from
    a global alignment; from posteriors ``P >= (floor - 1/2) / weight_max``, which sum to at
    most 1, at most ``2 weight_max / (2 floor - 1)``; both sources, the two."""
    posterior = 2 * config.weight_max // (2 * max(1, config.posterior_floor) - 1)
    return {"global": 1, "posterior": posterior, "both": posterior + 1}[config.entries]


def library_bytes(lengths, per_residue: int = 1) -> int:
    """Bytes accurate mode may need for the library of sequences of ``lengths`` (``[N]``):
    :data:`ENTRY_BYTES` per possible entry, at most ``per_residue * min(len_x, len_y)``
    entries per pair (an upper bound, reached by near-identical sequences;
    :func:`entries_per_residue`)."""
    lens = np.sort(np.asarray(torch.as_tensor(lengths).cpu(), dtype=np.int64))
    n = lens.shape[0]
    # pair (x, y) with len_x <= len_y adds len_x: the k-th shortest is the shorter of n-1-k pairs
    entries = int((lens * (n - 1 - np.arange(n))).sum()) if n else 0
    return per_residue * entries * ENTRY_BYTES + 8 * n * n


@dataclass(frozen=True)
class LocalScoring:
    """Scoring of stage 1's local alignments, with the Karlin-Altschul parameters of their
    scores (``lam``, ``k``) and the E-value (``evalue``) from which two pieces are related."""

    matrix: torch.Tensor
    gap_open: int
    gap_extend: int
    gap_code: int
    lam: float
    k: float
    evalue: float


@dataclass
class Library:
    """Library entries (flat, int64) and the local-alignment distances.

    Attributes:
        x, i, y, j: entry e pairs residue ``i[e]`` of sequence ``x[e]`` with residue ``j[e]`` of
            ``y[e]`` (``x < y``).
        w: ``int64 [E]`` weights in ``1 .. ConsistencyConfig.weight_max``.
        dist: ``float64 [N, N]`` distances ``1 - score / min(self scores)``, clipped to [0, 1].
        spans: ``int64 [P, 6]``: each aligned pair's local alignment, ``x, y, i_lo, i_hi, j_lo,
            j_hi`` (its first and last aligned residues), entries of weight 0 included;
            ``None``: taken from the entries.
    """

    x: torch.Tensor
    i: torch.Tensor
    y: torch.Tensor
    j: torch.Tensor
    w: torch.Tensor
    dist: np.ndarray
    spans: np.ndarray | None = None

    def __len__(self) -> int:
        return int(self.x.numel())

    def trimmed(self, head: torch.Tensor, kept: torch.Tensor) -> Library:
        """The entries within each sequence's kept span ``head .. head + kept``, renumbered from
        the span's start (``int64 [N]`` each, on the library's device); distances unchanged."""
        i, j = self.i - head[self.x], self.j - head[self.y]
        inside = (i >= 0) & (i < kept[self.x]) & (j >= 0) & (j < kept[self.y])
        return Library(
            self.x[inside], i[inside], self.y[inside], j[inside], self.w[inside], self.dist
        )


def entry_values(entries, weights: torch.Tensor) -> torch.Tensor:
    """``w w_x w_y``: each entry's weight times its two sequences' weights, for a
    :class:`Library` or a :class:`Consistency` (``weights``: ``int64 [N]`` on their device)."""
    return entries.w * weights[entries.x] * weights[entries.y]


def _entries(ops, info, codes_a, codes_b):
    """Aligned residue pairs of a batch of local alignments: (pair, i, j, same) tensors."""
    n_ops = info[:, 1].long()
    k = torch.arange(ops.shape[1], device=ops.device)
    valid = k[None, :] < n_ops[:, None]
    i = info[:, 2:3].long() + torch.cumsum((ops != OP_LEFT) & valid, 1) - 1
    j = info[:, 3:4].long() + torch.cumsum((ops != OP_UP) & valid, 1) - 1
    match = valid & (ops == OP_MATCH)
    pair = torch.nonzero(match)[:, 0]
    ii, jj = i[match], j[match]
    same = codes_a[pair, ii] == codes_b[pair, jj]
    return pair, ii, jj, same


def window_scores(pair, i, j, score, half: int) -> torch.Tensor:
    """Per aligned residue pair (in alignment order), the summed substitution score of the
    pairs within ``half`` steps of it inside its gapless block (int64)."""
    n = pair.numel()
    dev = pair.device
    if n == 0:
        return torch.zeros(0, dtype=torch.int64, device=dev)
    idx = torch.arange(n, device=dev)
    new = torch.ones(n, dtype=torch.bool, device=dev)
    new[1:] = (pair[1:] != pair[:-1]) | (i[1:] != i[:-1] + 1) | (j[1:] != j[:-1] + 1)
    start = torch.cummax(torch.where(new, idx, 0), 0).values
    last = torch.ones(n, dtype=torch.bool, device=dev)
    last[:-1] = new[1:]
    end = n - 1 - torch.cummax(torch.where(last, n - 1 - idx, 0).flip(0), 0).values.flip(0)
    cs = torch.zeros(n + 1, dtype=torch.int64, device=dev)
    cs[1:] = torch.cumsum(score.long(), 0)
    lo = torch.maximum(idx - half, start)
    hi = torch.minimum(idx + half, end) + 1
    return cs[hi] - cs[lo]


def _entry_weights(pair, i, j, same, codes_a, codes_b, n_pairs, matrix, config) -> torch.Tensor:
    """``int64 [E]``: each aligned residue pair's library weight (see :func:`local_library`)."""
    top = config.weight_max
    num, den = config.window_ratio
    matched = torch.zeros(n_pairs, dtype=torch.int64, device=pair.device)
    matched.index_add_(0, pair, torch.ones_like(pair))
    ident = torch.zeros_like(matched)
    ident.index_add_(0, pair, same.long())
    # the pair's identity over its aligned residues, in 1/weight_max steps
    w_pair = (ident * top + matched // 2) // matched.clamp_min(1)
    score = matrix[codes_a[pair, i].long(), codes_b[pair, j].long()]
    window = window_scores(pair, i, j, score, config.entry_window)
    near = (window * num).div(den, rounding_mode="floor")
    return (w_pair[pair] + near - config.entry_floor).clamp(0, top)


def _posterior(codes, lengths, bx, by, mat, config):
    """The pairs' entries from the pair HMM's posterior match probabilities
    (:mod:`torchmsa.consistency.posterior`), on ``codes``' device: with free end gaps for
    every pair (``posterior_free_ends``) or for those whose shorter sequence is below
    ``posterior_free_ratio`` of the longer (a fragment), the global model for the rest."""
    from torchmsa.consistency.posterior import blosum_odds, posterior_entries

    odds = blosum_odds(mat.cpu().numpy())
    d, e = config.posterior_gaps
    la, lb = lengths[bx].double(), lengths[by].double()
    free = torch.minimum(la, lb) < config.posterior_free_ratio * torch.maximum(la, lb)
    free = free | config.posterior_free_ends
    parts = []
    for model in (False, True):
        sel = torch.nonzero(free == model)[:, 0]
        if sel.numel():
            pair, i, j, w = posterior_entries(
                codes,
                lengths,
                bx[sel],
                by[sel],
                odds,
                gap_open=d,
                gap_extend=e,
                weight_max=config.weight_max,
                free_ends=model,
            )
            parts.append((sel.to(pair.device)[pair], i, j, w))
    if len(parts) == 1:
        return parts[0]
    pair, i, j, w = (torch.cat(t) for t in zip(*parts))
    order = torch.argsort(pair, stable=True)  # each pair's entries stay in (i, j) order
    return pair[order], i[order], j[order], w[order]


def _pair_entries(
    codes, lengths, bx, by, ca, cb, la, lb, mat, gap_open, gap_extend, backend, wide, config, dist
):
    """(pair, i, j, w) of a batch of pairs, by ``config.entries``: the end-gap-free global
    alignments' weighted residue pairs, the pair HMM's posteriors of at least
    ``posterior_floor``, or ``"both"``: each residue pair's mean of the two weights (0 where
    one source lacks it). With ``posterior_similarity``, a posterior weight is scaled by the
    pair's similarity ``1 - dist`` (``float64 [P]``, in ``1 / weight_max`` steps)."""
    device = codes.device
    out = []
    if config.entries in ("global", "both"):
        info, ops = pairwise_align_codes(
            ca, la, cb, lb, mat, gap_open, gap_extend, SEMIGLOBAL, backend=backend, wide=wide
        )
        pair, i, j, same = _entries(ops.to(device), info.to(device), ca, cb)
        w = _entry_weights(pair, i, j, same, ca, cb, bx.numel(), mat, config)
        out.append((pair, i, j, w))
    if config.entries in ("posterior", "both"):
        pair, i, j, w = _posterior(codes, lengths, bx, by, mat, config)
        keep = w >= config.posterior_floor
        pair, i, j, w = pair[keep], i[keep], j[keep], w[keep]
        if config.posterior_similarity:
            top = config.weight_max
            sim = torch.round((1.0 - dist) * top).long()
            w = (w * sim[pair] + top // 2) // top
        out.append((pair, i, j, w))
    if len(out) == 1:
        return out[0]
    pair, i, j, w = (torch.cat(t) for t in zip(*out))
    span = codes.shape[1]
    key = (pair * span + i) * span + j
    uniq, inv = torch.unique(key, return_inverse=True)  # sorted: by pair, then i, then j
    total = torch.zeros(uniq.numel(), dtype=torch.int64, device=device)
    total.index_add_(0, inv, w.long())
    return uniq // (span * span), (uniq // span) % span, uniq % span, (total + 1) // 2


def local_library(
    codes: torch.Tensor,
    lengths: torch.Tensor,
    matrix: torch.Tensor,
    gap_open: int,
    gap_extend: int,
    backend: str = "auto",
    *,
    config: ConsistencyConfig | None = None,
    policy: ExecutionPolicy | None = None,
    budget: MemoryBudget | None = None,
) -> Library:
    """Stage 1: all-pairs alignments of ``codes`` (``uint8 [N, L]``) into a :class:`Library`.

    Every pair is aligned twice with the same scoring. Its local alignment (affine
    Smith-Waterman) gives the distance ``1 - score / min(self scores)`` and the span where the
    two sequences' homology is plain (``Library.spans``, read by :func:`terminal_trims`). Its
    end-gap-free global alignment gives the entries: every aligned residue pair, weighted by
    the pair's identity over its aligned residues (``0 .. weight_max``) plus ``window_ratio``
    of the substitution scores summed over the residue pair and its ``entry_window``
    neighbours on each side inside its gapless block, less ``entry_floor``, clamped to
    ``0 .. weight_max`` (fields of ``config``); entries of weight 0 are left out. The window
    score is what tells a right residue pair from a wrong one within an alignment (README,
    Consistency), and it lets the global alignment's stretches that are not homologous weigh
    nothing.

    Arguments:
        codes, lengths: the sequences (a SequenceBatch's tensors).
        matrix: ``int32 [A, A]`` substitution scores of the pairwise alignments.
        gap_open, gap_extend: their affine gap costs.
        backend: DP backend.
        config: the entries' weights (:class:`~torchmsa.config.ConsistencyConfig`).
        policy: ``local_batch_cells`` caps pairs per call times their ops width.
        budget: the memory the library may take (:func:`library_bytes`; ``None``: the
            default :class:`~torchmsa.config.MemoryBudget`).

    Raises:
        ResourceError: the library may not fit ``budget`` on ``codes``' device.
    """
    budget = MemoryBudget() if budget is None else budget
    config = config or ConsistencyConfig()
    need = library_bytes(lengths, entries_per_residue(config))
    avail = budget.limit(codes.device)
    if need > avail:
        raise ResourceError(
            f"accurate mode's library of {codes.shape[0]} sequences on {codes.device}",
            need,
            avail,
            f"{budget.source(codes.device)}; or use mode='default'",
        )
    with stage("local_library"):
        return _local_library(
            codes,
            lengths,
            matrix,
            gap_open,
            gap_extend,
            backend,
            config or ConsistencyConfig(),
            policy or ExecutionPolicy(),
        )


def _local_library(codes, lengths, matrix, gap_open, gap_extend, backend, config, policy):
    device = codes.device
    n = codes.shape[0]
    mat = matrix.to(device=device, dtype=torch.int32)
    self_score = (
        pairwise_score_codes(
            codes, lengths, codes, lengths, mat, gap_open, gap_extend, LOCAL, backend=backend
        )[:, 0]
        .to(device)
        .long()
    )
    xs, ys = torch.triu_indices(n, n, 1, device=device)
    parts = {k: [] for k in "xiyjw"}
    spans = []
    dist = torch.zeros(n, n, dtype=torch.float64, device=device)
    step = max(1, policy.local_batch_cells // max(1, 2 * codes.shape[1]))
    wide = policy.linear_pair_cells  # long pairs: traced back in linear space on the CPU
    for lo in range(0, xs.numel(), step):
        bx, by = xs[lo : lo + step], ys[lo : lo + step]
        ca, cb = codes[bx], codes[by]
        la, lb = lengths[bx], lengths[by]
        info, ops = pairwise_align_codes(
            ca, la, cb, lb, mat, gap_open, gap_extend, LOCAL, backend=backend, wide=wide
        )
        info, ops = info.to(device), ops.to(device)
        score = info[:, 0].long()
        denom = torch.minimum(self_score[bx], self_score[by]).clamp_min(1)
        d = (1.0 - score.double() / denom.double()).clamp(0.0, 1.0)
        dist[bx, by] = d
        dist[by, bx] = d
        pair, i, j, _ = _entries(ops, info, ca, cb)
        if pair.numel():  # first and last aligned pair of each local alignment
            first = torch.ones_like(pair, dtype=torch.bool)
            first[1:] = pair[1:] != pair[:-1]
            last = torch.ones_like(first)
            last[:-1] = first[1:]
            p0 = pair[first]
            spans.append(torch.stack([bx[p0], by[p0], i[first], i[last], j[first], j[last]], 1))
        pair, i, j, w = _pair_entries(
            codes,
            lengths,
            bx,
            by,
            ca,
            cb,
            la,
            lb,
            mat,
            gap_open,
            gap_extend,
            backend,
            wide,
            config,
            d,
        )
        keep = w > 0
        parts["x"].append(bx[pair][keep])
        parts["y"].append(by[pair][keep])
        parts["i"].append(i[keep])
        parts["j"].append(j[keep])
        parts["w"].append(w[keep])
    cat = {
        k: torch.cat(v) if v else torch.zeros(0, dtype=torch.int64, device=device)
        for k, v in parts.items()
    }
    span = torch.cat(spans).cpu().numpy() if spans else np.zeros((0, 6), np.int64)
    return Library(
        cat["x"], cat["i"], cat["y"], cat["j"], cat["w"], dist.cpu().numpy(), span.astype(np.int64)
    )
