"""Modes to stages: ``torchmsa.align``.

=========== ==========================================================================
mode        stages
=========== ==========================================================================
fast        6-mer distances -> guide tree -> one progressive pass
default     fast, then distances from that alignment -> new tree -> second pass
            (MAFFT FFT-NS-2 style)
auto        ``default`` up to 20,000 sequences, ``fast`` above (recorded in metadata)
=========== ==========================================================================
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import torch

from torchmsa.alignment import Alignment
from torchmsa.errors import ArgumentError, ScoringError
from torchmsa.ops.backend import resolve_backend, resolve_device
from torchmsa.progressive import ProfileScoring, ResidueTable, progressive_align, quantize_weights
from torchmsa.scoring import gap_cost, load_matrix
from torchmsa.sequences import SequenceBatch

__all__ = ["align", "MODES", "TREES", "MSA_DEFAULTS", "SCORE_SCALE", "profile_scoring"]

MODES = ("auto", "fast", "default")
TREES = ("auto", "upgma", "upgma_mafft", "nj", "single")
SCORE_SCALE = 256
# matrix, gap_open, gap_extend, matrix offset, terminal gap-opening factor (num, den)
MSA_DEFAULTS = {
    "protein": ("BLOSUM62", 11, 0, 2.0, (1, 2)),
    "dna": ("NUC.4.4", 11, 0, 2.0, (1, 2)),
    "rna": ("NUC.4.4", 11, 0, 2.0, (1, 2)),
}
AUTO_DEFAULT_MAX_N = 20_000
RETREE_BLOCK = 1 << 24
REFINE_ROUNDS = {"default": 2}
REFINE_MAX_N = 500
MAX_MATRIX_UNITS = 1 << 13  # keeps P_a M P_bᵀ below 2^51 (see progressive.column_scores)


def profile_scoring(alphabet, matrix=None, gap_open=None, gap_extend=None) -> ProfileScoring:
    """The integer profile scoring for ``alphabet``; ``None`` takes :data:`MSA_DEFAULTS`.

    Scores are in units of 1/:data:`SCORE_SCALE` of the matrix's own units, so gap costs may
    be fractions (resolution 1/256).
    """
    d_matrix, d_open, d_extend, offset, terminal = MSA_DEFAULTS[alphabet.name]
    _, table, scale = load_matrix(d_matrix if matrix is None else matrix, alphabet)
    unit = SCORE_SCALE / scale
    g_open = gap_cost(d_open if gap_open is None else gap_open, "gap_open")
    g_ext = gap_cost(d_extend if gap_extend is None else gap_extend, "gap_extend")
    if g_ext > g_open:
        raise ScoringError(
            f"gap_extend ({g_ext}) is larger than gap_open ({g_open}); torchmsa needs "
            f"gap_extend <= gap_open"
        )
    mat = torch.round(torch.from_numpy(table.astype(np.float64)) * unit + offset * SCORE_SCALE)
    if float(mat.abs().max()) >= MAX_MATRIX_UNITS:
        raise ScoringError(
            f"matrix entries up to {float(mat.abs().max()) / SCORE_SCALE:g} are too large for "
            f"exact profile scores (limit {MAX_MATRIX_UNITS // SCORE_SCALE}); scale it down"
        )
    return ProfileScoring(
        mat.to(torch.int64), round(g_open * SCORE_SCALE), round(g_ext * SCORE_SCALE), terminal
    )


def _kmer_tree(batch: SequenceBatch, method: str, backend: str):
    from torchmsa.ops.kmer import kmer_distances, shared_kmer_counts
    from torchmsa.tree import build_tree

    counts = shared_kmer_counts(batch, backend="auto")
    self_counts = torch.diagonal(counts)
    dist = kmer_distances(counts, self_counts, self_counts)
    return build_tree(
        np.asarray(torch.as_tensor(dist).cpu(), dtype=np.float64), method, batch.names
    )


def _alignment_distances(codes: torch.Tensor, gap: int) -> np.ndarray:
    """p-distance of every pair of rows: 1 - identical / aligned residue pairs."""
    n, width = codes.shape
    residue = (codes != gap).to(torch.float64)
    pairs = residue @ residue.T
    same = torch.zeros(n, n, dtype=torch.float64, device=codes.device)
    step = max(1, RETREE_BLOCK // max(1, n * gap))
    for c0 in range(0, width, step):
        block = codes[:, c0 : c0 + step].long()
        hot = torch.nn.functional.one_hot(block, gap + 1)[..., :gap].reshape(n, -1)
        hot = hot.to(torch.float64)
        same += hot @ hot.T
    dist = 1.0 - same / pairs.clamp_min(1.0)
    dist[pairs == 0] = 1.0
    dist.fill_diagonal_(0.0)
    return dist.cpu().numpy()


def _progressive(batch, tree, scoring, backend, progress):
    table = ResidueTable.from_batch(batch.codes, batch.lengths)
    weights = quantize_weights(tree.weights())
    width = progressive_align(table, batch.lengths, tree, weights, scoring, backend, progress)
    return table.codes_matrix(width, len(batch), batch.alphabet.gap_code), weights


def _resolve_mode(mode: str, n: int) -> str:
    if mode not in MODES:
        raise ArgumentError(f"Invalid value for `mode` argument: {mode!r}; use one of {MODES}")
    if mode != "auto":
        return mode
    return "default" if n <= AUTO_DEFAULT_MAX_N else "fast"


def align(
    seqs,
    *,
    device="auto",
    mode: str = "auto",
    matrix=None,
    gap_open: float | None = None,
    gap_extend: float | None = None,
    tree: str = "auto",
    seqtype: str = "auto",
    progress: bool = False,
    backend: str = "auto",
) -> Alignment:
    """Align sequences.

    Arguments:
        seqs: a path (FASTA, optionally gzipped; A2M/A3M, Stockholm, Clustal; ``"-"`` for
            stdin), a list of strings, a dict of name to sequence, or a list of Bio.SeqRecord.
        device: ``"auto"`` (CUDA if available, else CPU), ``"cpu"``, ``"cuda"``, ``"cuda:N"``.
        mode: ``"fast"``, ``"default"`` or ``"auto"`` (see the module docstring).
        matrix: substitution matrix name or Biopython Array (default BLOSUM62 / NUC.4.4).
        gap_open, gap_extend: gap costs in matrix units (defaults in :data:`MSA_DEFAULTS`).
        tree: guide tree method: ``"auto"`` (= ``"upgma_mafft"``), ``"upgma"``,
            ``"upgma_mafft"``, ``"nj"`` or ``"single"``.
        seqtype: ``"auto"``, ``"protein"``, ``"dna"`` or ``"rna"``.
        progress: print a progress bar on stderr.
        backend: DP backend, ``"auto"``, ``"cpu"`` or ``"triton"``.

    Returns:
        An :class:`~torchmsa.alignment.Alignment`, rows in input order.
    """
    t0 = time.perf_counter()
    dev = resolve_device(device)
    impl = resolve_backend(backend, dev)
    if tree not in TREES:
        raise ArgumentError(f"Invalid value for `tree` argument: {tree!r}; use one of {TREES}")
    batch = SequenceBatch.from_input(seqs, seqtype, dev)
    n = len(batch)
    chosen = _resolve_mode(mode, n)
    scoring = profile_scoring(batch.alphabet, matrix, gap_open, gap_extend)
    method = "upgma_mafft" if tree == "auto" else tree
    meta: dict[str, Any] = {
        "mode": chosen,
        "requested_mode": mode,
        "device": str(dev),
        "backend": impl,
        "tree": method,
        "n_sequences": n,
    }
    bar = _ProgressBar(2 * max(0, n - 1) if chosen == "default" else max(0, n - 1), progress)
    if n == 1:
        codes = batch.codes[:, : int(batch.lengths[0])].clone()
        guide = None
    else:
        guide = _kmer_tree(batch, method, impl)
        codes, weights = _progressive(batch, guide, scoring, impl, bar.step)
        if chosen == "default":
            dist = _alignment_distances(codes, batch.alphabet.gap_code)
            from torchmsa.tree import build_tree

            guide = build_tree(dist, method, batch.names)
            codes, weights = _progressive(batch, guide, scoring, impl, bar.step)
            rounds = REFINE_ROUNDS.get(chosen, 0) if n <= REFINE_MAX_N else 0
            if rounds:
                from torchmsa.refine import refine

                codes, meta["refined_edges"] = refine(
                    codes, guide, weights, scoring, batch.alphabet.gap_code, rounds, impl
                )
    bar.close()
    weights = None if guide is None else torch.as_tensor(guide.weights(), dtype=torch.float64)
    meta["seconds"] = time.perf_counter() - t0
    return Alignment(
        batch.names, batch.descriptions, batch.residues, codes, batch.alphabet, guide, weights, meta
    )


class _ProgressBar:
    """A one-line progress bar on stderr (only when asked for and the job is not tiny)."""

    def __init__(self, total: int, enabled: bool):
        import sys

        self.total, self.enabled, self.base = total, enabled and total >= 2, 0
        self.stream = sys.stderr
        self.last = -1

    def step(self, done: int, total: int) -> None:
        if not self.enabled:
            return
        frac = min(1.0, (self.base + done) / max(1, self.total))
        if done == total:
            self.base += total
        pct = int(frac * 100)
        if pct != self.last:
            self.last = pct
            bar = "#" * (pct // 4)
            self.stream.write(f"\rtorchmsa: aligning [{bar:<25}] {pct:3d}%")
            self.stream.flush()

    def close(self) -> None:
        if self.enabled:
            self.stream.write("\n")
            self.stream.flush()
