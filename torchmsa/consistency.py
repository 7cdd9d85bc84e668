"""Accurate mode's library: all-pairs alignments and the consistency scores built on them.

Stage 1 of L-INS-i (seed 000): every pair of sequences is aligned locally (affine Smith-Waterman,
batched on the device), whose scores give distances for the guide tree and whose spans mark
terminal extensions, and end-gap-free globally, whose aligned residues form library entries
``(x, i, y, j, w)`` with an integer weight from the pair's identity and the substitution scores
around each entry (:func:`local_library`).

When two groups A and B are aligned, the consistency tile is

    C[ca, cb] = sum over entries with x in A, y in B of  w * w_x * w_y

for the columns ``ca`` holding residue i of x and ``cb`` holding residue j of y, and the DP
scores ``S + floor(weight * C / (W_A W_B))``: integers, so exact and order-independent.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from torchmsa.cpu.dp import LOCAL, OP_LEFT, OP_MATCH, OP_UP, SEMIGLOBAL
from torchmsa.ops.pairwise import pairwise_align_codes, pairwise_score_codes
from torchmsa.sequences import segments

__all__ = [
    "Library",
    "LocalScoring",
    "Consistency",
    "local_library",
    "terminal_trims",
    "WEIGHT_MAX",
]

WEIGHT_MAX = 64
# an entry's weight: its pair's identity weight plus WINDOW_NUM / WINDOW_DEN of the substitution
# scores within ENTRY_WINDOW residue pairs of it, less ENTRY_FLOOR (local_library; README)
ENTRY_WINDOW = 4
WINDOW_NUM, WINDOW_DEN = 4, 5
ENTRY_FLOOR = 12
BATCH_CELLS = 1 << 22  # pairs per local-alignment call times their ops width


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
        w: ``int64 [E]`` weights in ``1 .. WEIGHT_MAX``.
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


def _window_scores(pair, i, j, score, half: int) -> torch.Tensor:
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


def _entry_weights(pair, i, j, same, codes_a, codes_b, n_pairs, matrix) -> torch.Tensor:
    """``int64 [E]``: each aligned residue pair's library weight (see :func:`local_library`)."""
    matched = torch.zeros(n_pairs, dtype=torch.int64, device=pair.device)
    matched.index_add_(0, pair, torch.ones_like(pair))
    ident = torch.zeros_like(matched)
    ident.index_add_(0, pair, same.long())
    # the pair's identity over its aligned residues, in 1/WEIGHT_MAX steps
    w_pair = (ident * WEIGHT_MAX + matched // 2) // matched.clamp_min(1)
    score = matrix[codes_a[pair, i].long(), codes_b[pair, j].long()]
    window = _window_scores(pair, i, j, score, ENTRY_WINDOW)
    near = (window * WINDOW_NUM).div(WINDOW_DEN, rounding_mode="floor")
    return (w_pair[pair] + near - ENTRY_FLOOR).clamp(0, WEIGHT_MAX)


def local_library(
    codes: torch.Tensor,
    lengths: torch.Tensor,
    matrix: torch.Tensor,
    gap_open: int,
    gap_extend: int,
    backend: str = "auto",
) -> Library:
    """Stage 1: all-pairs alignments of ``codes`` (``uint8 [N, L]``) into a :class:`Library`.

    Every pair is aligned twice with the same scoring. Its local alignment (affine
    Smith-Waterman) gives the distance ``1 - score / min(self scores)`` and the span where the
    two sequences' homology is plain (``Library.spans``, read by :func:`terminal_trims`). Its
    end-gap-free global alignment gives the entries: every aligned residue pair, weighted by
    the pair's identity over its aligned residues (``0 .. WEIGHT_MAX``) plus
    ``WINDOW_NUM / WINDOW_DEN`` of the substitution scores summed over the residue pair and its
    ``ENTRY_WINDOW`` neighbours on each side inside its gapless block, less ``ENTRY_FLOOR``,
    clamped to ``0 .. WEIGHT_MAX``; entries of weight 0 are left out. The window score is what
    tells a right residue pair from a wrong one within an alignment (README, Consistency), and
    it lets the global alignment's stretches that are not homologous weigh nothing.

    Arguments:
        codes, lengths: the sequences (a SequenceBatch's tensors).
        matrix: ``int32 [A, A]`` substitution scores of the pairwise alignments.
        gap_open, gap_extend: their affine gap costs.
        backend: DP backend.
    """
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
    step = max(1, BATCH_CELLS // max(1, 2 * codes.shape[1]))
    for lo in range(0, xs.numel(), step):
        bx, by = xs[lo : lo + step], ys[lo : lo + step]
        ca, cb = codes[bx], codes[by]
        la, lb = lengths[bx], lengths[by]
        info, ops = pairwise_align_codes(
            ca, la, cb, lb, mat, gap_open, gap_extend, LOCAL, backend=backend
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
        info, ops = pairwise_align_codes(
            ca, la, cb, lb, mat, gap_open, gap_extend, SEMIGLOBAL, backend=backend
        )
        pair, i, j, same = _entries(ops.to(device), info.to(device), ca, cb)
        w = _entry_weights(pair, i, j, same, ca, cb, bx.numel(), mat)
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


def _related(codes, local, pieces_a, pieces_b, backend) -> np.ndarray:
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
    step = max(1, BATCH_CELLS // max(1, 2 * width))
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
    lib: Library, codes: torch.Tensor, lengths: torch.Tensor, local, min_excess: int, backend="auto"
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
    """
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
        excess[k[_related(codes, local, pieces_a, pieces_b, backend)]] = 0
        med = _lower_medians(owner, np.concatenate([excess, -excess]), n)
        out.append(np.where(med >= min_excess, med, 0))
    head, tail = out
    whole = head + tail >= length  # nothing would be left: keep the sequence whole
    head[whole] = 0
    tail[whole] = 0
    return torch.from_numpy(head), torch.from_numpy(tail)


def _lca_matrix(tree) -> np.ndarray:
    """``int64 [n, n]``: the lowest common ancestor of every pair of leaves."""
    n = tree.n_leaves
    lca = np.full((n, n), -1, np.int64)
    under = tree.leaves_under()
    for k, (a, b) in enumerate(tree.children.tolist()):
        la = under[a - n] if a >= n else np.array([a])
        lb = under[b - n] if b >= n else np.array([b])
        lca[np.ix_(la, lb)] = n + k
        lca[np.ix_(lb, la)] = n + k
    return lca


class Consistency:
    """Consistency tiles for progressive levels (refinement builds its own, :mod:`torchmsa.refine`).

    Arguments:
        libs: one :class:`Library` per job (sequence ids local to the job).
        trees: the jobs' guide trees (``None`` for one-sequence jobs).
        sizes: the jobs' sequence counts.
        forest: the :class:`~torchmsa.progressive.Forest` of those trees.
        weight: DP units per unit of normalised consistency (an integer).
    """

    def __init__(self, libs, trees, sizes, forest, weight: int):
        device = libs[0].x.device
        self.weight = int(weight)
        level_of = np.full(forest.n_leaves + forest.children.shape[0], -1, np.int64)
        for g, ids in enumerate(forest.levels):
            level_of[np.asarray(ids)] = g
        cols = {k: [] for k in "xiyjwgn"}
        first, inner = 0, 0
        total = forest.n_leaves
        for lib, tree, n in zip(libs, trees, sizes):
            if tree is not None and len(lib):
                lca = _lca_matrix(tree)
                local = lca[lib.x.cpu().numpy(), lib.y.cpu().numpy()]  # ids n .. 2n-2
                node = total + inner + (local - n)
                cols["g"].append(torch.from_numpy(level_of[node]).to(device))
                cols["n"].append(torch.from_numpy(node).to(device))
                for key in "xy":
                    cols[key].append(getattr(lib, key) + first)
                for key in "ijw":
                    cols[key].append(getattr(lib, key))
            first += n
            inner += max(0, n - 1)
        cat = {
            k: torch.cat(v) if v else torch.zeros(0, dtype=torch.int64, device=device)
            for k, v in cols.items()
        }
        # by level, and within a level by node: each node's entries are contiguous
        n_nodes = forest.n_leaves + forest.children.shape[0]
        order = torch.argsort(cat["g"] * n_nodes + cat["n"], stable=True)
        for k in "xiyjw":
            setattr(self, k, cat[k][order])
        self.node = cat["n"][order]  # the forest node where each entry's sequences meet
        g = cat["g"][order]
        self.level_start = torch.searchsorted(
            g, torch.arange(len(forest.levels) + 1, device=device)
        ).tolist()

    def level_tiles(self, g, table, seq_kid, n_pairs, s_off, n, m, kid_w, weights):
        """``int32 [sum(n*m)]``: the consistency added to level ``g``'s packed scores."""
        lo, hi = self.level_start[g], self.level_start[g + 1]
        x, i, y, j, w = (t[lo:hi] for t in (self.x, self.i, self.y, self.j, self.w))
        col_x = table.col[table.seq_off[x] + i]
        col_y = table.col[table.seq_off[y] + j]
        kx, ky = seq_kid[x], seq_kid[y]
        a_is_x = kx < n_pairs
        p = torch.where(a_is_x, kx, ky)
        row = torch.where(a_is_x, col_x, col_y)
        col = torch.where(a_is_x, col_y, col_x)
        cells = n * m
        acc = torch.zeros(int(cells.sum()), dtype=torch.int64, device=s_off.device)
        acc.index_put_((s_off[p] + row * m[p] + col,), w * weights[x] * weights[y], accumulate=True)
        denom = torch.repeat_interleave(kid_w[:n_pairs] * kid_w[n_pairs:], cells)
        return torch.div(acc * self.weight, denom, rounding_mode="floor").to(torch.int32)
