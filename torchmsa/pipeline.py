"""Modes to stages: ``torchmsa.align`` and ``torchmsa.align_many``.

=========== ==========================================================================
mode        stages
=========== ==========================================================================
fast        6-mer distances -> guide tree -> one progressive pass
default     fast, then distances from that alignment -> new tree -> second pass ->
            two rounds of refinement (MAFFT FFT-NS-2 style, plus light refinement); above
            :data:`LCS_MIN_N` sequences LCS distances -> single linkage -> one pass
            (FAMSA's guide tree; ``tree="lcs"`` asks for it at any size)
accurate    all-pairs local alignments -> distances and terminal set-aside; all-pairs
            end-gap-free global alignments -> consistency library -> tree -> progressive
            pass with consistency -> refinement until no edge gains (at most 4 rounds) ->
            set-aside ends back as blocks (MAFFT L-INS-i style)
auto        ``accurate`` up to 200 sequences of at most 2,000 residues, ``default`` up to
            20,000 sequences, ``fast`` with a PartTree guide tree above; the choice is in
            ``Alignment.metadata["mode"]``
=========== ==========================================================================
"""

from __future__ import annotations

import dataclasses
import math
import os
import time
from typing import Any

import numpy as np
import torch

from torchmsa.alignment import Alignment
from torchmsa.cpu.dp_rows import RES_ONE
from torchmsa.errors import ArgumentError, ResourceError, ScoringError
from torchmsa.ops.backend import resolve_backend, resolve_device
from torchmsa.progressive import (
    Forest,
    ProfileScoring,
    ResidueTable,
    progressive_align,
    quantize_weights,
)
from torchmsa.scoring import gap_cost, get_scoring, load_matrix
from torchmsa.sequences import SequenceBatch, segments

__all__ = [
    "align",
    "align_many",
    "MODES",
    "TREES",
    "MSA_DEFAULTS",
    "SCORE_SCALE",
    "profile_scoring",
]

MODES = ("auto", "fast", "default", "accurate")
TREES = ("auto", "upgma", "upgma_mafft", "nj", "single", "lcs", "parttree")
PARTTREE_MIN_N = 20_000  # "auto" trees above this size are PartTree (no N x N matrix)
FULL_MATRIX_BYTES = 16  # per pair, a full-matrix tree: int32 LCS or k-mer counts, float64 distances
LCS_MIN_N = 500  # default mode's "auto" tree above this size: single linkage on LCS distances
SCORE_SCALE = 256
# matrix, gap_open, gap_extend, matrix offset, terminal gap-opening factor (num, den)
MSA_DEFAULTS = {
    "protein": ("BLOSUM62", 11, 0, 2.0, (1, 2)),
    "dna": ("NUC.4.4", 11, 0, 2.0, (1, 2)),
    "rna": ("NUC.4.4", 11, 0, 2.0, (1, 2)),
}
AUTO_DEFAULT_MAX_N = 20_000
# The matrix offset grows with the job's size: OFFSET_PER_DECADE per tenfold above OFFSET_FROM
# sequences, up to OFFSET_MAX (README, Architecture: "The matrix offset grows with N")
OFFSET_PER_DECADE = 2
OFFSET_FROM = 1000
OFFSET_MAX = 4
RETREE_BLOCK = 1 << 24
REFINE_ROUNDS = {"default": 2, "accurate": 4}
ACCURATE_LOCAL = ("BLOSUM62", 11, 1)  # stage-1 local alignments: matrix, gap open, extend
# Karlin-Altschul lambda and K of those alignments' scores (BLAST's gapped BLOSUM62 11/1 values)
ACCURATE_KARLIN = (0.267, 0.041)
# DP units per unit of normalised consistency (64 = all pairs agree, so 16 matrix units);
# chosen on BAliBASE's 218 full-length cases among 16, 32, 64, 128 (README, Consistency)
CONSISTENCY_WEIGHT = 64
# set aside terminal extensions from this median excess (consistency.terminal_trims): about a
# domain's length; shorter stretches were more often homology that the local alignments missed
# (README, Consistency: 60, 100 and 150 on BAliBASE and balifam100)
TRIM_MIN = 100
TRIM_EVALUE = 0.01  # ... unless pieces beyond a local alignment still align at this E-value
AUTO_ACCURATE_MAX_N = 200
AUTO_ACCURATE_MAX_LEN = 2000
REFINE_MAX_N = 500
# On a GPU (backend "auto"), jobs of at most HOST_JOB_MAX_N sequences with N L^2 at most
# HOST_JOB_CELLS run wholly on the host, where they are faster (benchmarks/results/
# probes-small-cases.md, ab_cases-h100-jobs-turned.md; README, Architecture). Families of
# about 1,000 sequences ran well there (balifam1000); 10,011 short ones took 6.8x the GPU's
# time (its guide tree: e2e_gpu-balifam-dp.md against -balifam10000-cap.md, PF00037). The
# cap between them is not measured.
HOST_JOB_CELLS = 1 << 25
HOST_JOB_MAX_N = 2048
# Accurate mode's work is its all-pairs local alignments: there a job runs on the host when
# pairs times the square of the longest is at most this. Chosen on BAliBASE's cases timed wholly
# on the GPU (e2e_gpu-accurate-hostcells-0.md) and wholly on the host (193 of them before the
# call's limit: e2e_gpu-accurate-hostcells-all-host.log); README, Architecture.
HOST_ACCURATE_CELLS = 1 << 27
MAX_MATRIX_UNITS = 1 << 13  # keeps P_a M P_bᵀ below 2^51 (see ops.colscores.column_scores)


def job_offset(alphabet, n: int) -> float:
    """The matrix offset for a job of ``n`` sequences: :data:`MSA_DEFAULTS`' offset, plus
    :data:`OFFSET_PER_DECADE` per tenfold above :data:`OFFSET_FROM` sequences, at most
    :data:`OFFSET_MAX` (a multiple of 1/:data:`SCORE_SCALE`)."""
    base = MSA_DEFAULTS[alphabet.name][3]
    if n <= OFFSET_FROM:
        return base
    grown = base + OFFSET_PER_DECADE * math.log10(n / OFFSET_FROM)
    return float(min(max(base, OFFSET_MAX), round(grown * SCORE_SCALE) / SCORE_SCALE))


def profile_scoring(
    alphabet, matrix=None, gap_open=None, gap_extend=None, offset=None
) -> ProfileScoring:
    """The integer profile scoring for ``alphabet``; ``None`` takes :data:`MSA_DEFAULTS`.

    Scores are in units of 1/:data:`SCORE_SCALE` of the matrix's own units, so gap costs may
    be fractions (resolution 1/256). ``offset`` is added to every matrix entry (the matrix's
    offset; :func:`job_offset` gives the one a job uses).
    """
    d_matrix, d_open, d_extend, d_offset, terminal = MSA_DEFAULTS[alphabet.name]
    offset = d_offset if offset is None else offset
    _, table, scale = load_matrix(d_matrix if matrix is None else matrix, alphabet)
    unit = SCORE_SCALE / scale
    g_open = gap_cost(d_open if gap_open is None else gap_open, "gap_open")
    g_ext = gap_cost(d_extend if gap_extend is None else gap_extend, "gap_extend")
    if g_ext > g_open:
        raise ScoringError(
            f"gap_extend ({g_ext}) is larger than gap_open ({g_open}); torchmsa needs "
            f"gap_extend <= gap_open"
        )
    if g_open * SCORE_SCALE * RES_ONE >= 1 << 31:
        raise ScoringError(
            f"Invalid value for `gap_open` argument: {g_open:g}; profile alignment needs gap "
            f"costs below {(1 << 31) // (SCORE_SCALE * RES_ONE)} matrix units"
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


def _host_available() -> int | None:
    """Bytes of host memory available to a new allocation (Linux's ``MemAvailable``, else the
    free physical pages); None where the system does not say."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def _check_full_matrix(n: int, device: torch.device, method: str) -> None:
    """:class:`ResourceError` where an ``n x n`` guide-tree matrix cannot fit on ``device``
    (free GPU memory and torch's cached blocks; on the host, the available memory)."""
    need = FULL_MATRIX_BYTES * n * n
    if device.type == "cuda":
        cached = torch.cuda.memory_reserved(device) - torch.cuda.memory_allocated(device)
        avail = torch.cuda.mem_get_info(device)[0] + cached
    else:
        avail = _host_available()
        if avail is None:
            return
    if need > avail:
        raise ResourceError(
            f"a full-matrix guide tree ({method}) of {n} sequences on {device}",
            need,
            avail,
            "use tree='parttree', which needs no N x N matrix",
        )


def _first_tree(batch: SequenceBatch, method: str, backend: str):
    """The first guide tree (``method`` from :func:`_first_tree_method`): PartTree, single
    linkage on LCS distances, or 6-mer distances and a linkage."""
    from torchmsa.ops.kmer import kmer_distances, shared_kmer_counts
    from torchmsa.tree import tree_from_tensor

    if method == "parttree":
        from torchmsa.parttree import parttree_tree

        return parttree_tree(batch, backend=backend)
    _check_full_matrix(len(batch), batch.codes.device, method)
    if method == "lcs":
        from torchmsa.ops.lcs import lcs_distances, lcs_lengths

        lengths = batch.lengths.to(batch.codes.device)
        dist = lcs_distances(lcs_lengths(batch.codes, lengths, backend), lengths)
        return tree_from_tensor(dist, "single", batch.names)
    counts = shared_kmer_counts(batch, backend=backend)
    self_counts = torch.diagonal(counts)
    dist = kmer_distances(counts, self_counts, self_counts)
    return tree_from_tensor(dist, method, batch.names)


def _alignment_distances(codes: torch.Tensor, gap: int) -> torch.Tensor:
    """p-distance of every pair of rows: 1 - identical / aligned residue pairs.

    Exact integer counts from float64 matrix products.
    """
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
    return dist


def _concat(batches: list[SequenceBatch]) -> tuple[torch.Tensor, torch.Tensor]:
    """All jobs' codes in one padded ``uint8 [sum N, Lmax]`` tensor, and their lengths."""
    width = max(b.codes.shape[1] for b in batches)
    gap = batches[0].alphabet.gap_code
    codes = torch.cat(
        [
            torch.nn.functional.pad(b.codes, (0, width - b.codes.shape[1]), value=gap)
            for b in batches
        ]
    )
    return codes, torch.cat([b.lengths for b in batches])


def _progressive_jobs(batches, trees, scoring, backend, progress):
    """One level-batched progressive pass over every job; each job's codes and weights."""
    sizes = [len(b) for b in batches]
    codes, lengths = _concat(batches)
    weights = torch.cat(
        [
            quantize_weights(t.weights()) if t is not None else torch.ones(1, dtype=torch.int64)
            for t in trees
        ]
    )
    table = ResidueTable.from_batch(codes, lengths)
    forest = Forest.from_trees(trees, sizes)
    widths = progressive_align(table, lengths, forest, weights, scoring, backend, progress)
    out, first = [], 0
    for n, width in zip(sizes, widths):
        out.append(
            (
                table.codes_matrix(first, n, width, batches[0].alphabet.gap_code),
                weights[first : first + n],
            )
        )
        first += n
    return out


def _host_job(batch: SequenceBatch, mode: str) -> bool:
    """Whether a job is small enough to run on the host rather than a GPU: at most
    :data:`HOST_JOB_MAX_N` sequences and ``N L^2`` (sequences times the square of the longest)
    at most :data:`HOST_JOB_CELLS`; in accurate mode, pairs times ``L^2`` at most
    :data:`HOST_ACCURATE_CELLS`."""
    longest = int(batch.lengths.max()) if len(batch) else 0
    n = len(batch)
    if mode == "accurate":
        return n <= HOST_JOB_MAX_N and n * (n - 1) // 2 * longest * longest <= HOST_ACCURATE_CELLS
    return n <= HOST_JOB_MAX_N and n * longest * longest <= HOST_JOB_CELLS


def _resolve_mode(mode: str, batch: SequenceBatch) -> str:
    if mode not in MODES:
        raise ArgumentError(f"Invalid value for `mode` argument: {mode!r}; use one of {MODES}")
    if mode != "auto":
        return mode
    n, longest = len(batch), int(batch.lengths.max()) if len(batch) else 0
    if n <= AUTO_ACCURATE_MAX_N and longest <= AUTO_ACCURATE_MAX_LEN:
        return "accurate"
    return "default" if n <= AUTO_DEFAULT_MAX_N else "fast"


def _cut_ends(batch: SequenceBatch, head: torch.Tensor, tail: torch.Tensor) -> SequenceBatch:
    """``batch`` with ``head[s]`` residues cut from each sequence's start and ``tail[s]`` from
    its end (``int64 [N]`` each, every sequence keeping at least one residue if it had any)."""
    dev = batch.codes.device
    kept = batch.lengths.long() - head.to(dev) - tail.to(dev)
    rows = torch.arange(len(batch), device=dev)
    codes = segments(batch.codes, rows, head.to(dev), kept, batch.alphabet.gap_code)
    starts, counts = head.tolist(), kept.tolist()
    residues = [r[a : a + k] for r, a, k in zip(batch.residues, starts, counts)]
    return dataclasses.replace(batch, codes=codes, lengths=kept.int(), residues=residues)


def _end_block(
    batch: SequenceBatch, start, count, scoring, method, impl, host_small=False
) -> torch.Tensor:
    """``uint8 [N, W]``: the pieces ``start[s] .. start[s] + count[s]`` of ``batch``'s sequences
    that have one, aligned among themselves in accurate mode (a subfamily may share them); rows
    without a piece are all gaps. ``host_small`` (GPU work under the automatic backend, as in
    :func:`align_many`): pieces that make a host-sized job (:func:`_host_job`) are aligned on
    the host whatever ``batch``'s device (the same alignment, without a GPU's launches)."""
    dev, gap = batch.codes.device, batch.alphabet.gap_code
    rows = torch.nonzero(count > 0)[:, 0]
    if rows.numel() == 0:
        return torch.full((len(batch), 0), gap, dtype=torch.uint8, device=dev)
    at, size = start.to(dev)[rows.to(dev)], count.to(dev)[rows.to(dev)]
    codes = segments(batch.codes, rows.to(dev), at, size, gap)
    if rows.numel() == 1:
        job = codes
    else:
        keep = rows.tolist()
        pieces = SequenceBatch(
            [batch.names[r] for r in keep],
            [batch.descriptions[r] for r in keep],
            [batch.residues[r][a : a + k] for r, a, k in zip(keep, at.tolist(), size.tolist())],
            codes,
            size.int(),
            batch.alphabet,
        )
        if host_small and _host_job(pieces, "accurate"):
            pieces, impl = pieces.to(torch.device("cpu")), "cpu"
        bar = _ProgressBar(0, False)
        job = _accurate_group([pieces], scoring, method, impl, bar, host_small)[0][0]
    block = torch.full((len(batch), job.shape[1]), gap, dtype=torch.uint8, device=dev)
    block[rows.to(dev)] = job.to(device=dev, dtype=torch.uint8)
    return block


def _accurate_group(batches, scoring, method, impl, bar, host_small=False):
    """L-INS-i style: all-pairs library, tree, consistency progressive, refinement.

    Terminal extensions that a sequence's partners lack
    (:func:`~torchmsa.consistency.terminal_trims`) are set aside before the progressive pass;
    each end's stretches are aligned among themselves and put back as a block before (after)
    the alignment (:func:`_end_block`, which ``host_small`` is passed to).
    """
    from torchmsa.consistency import Consistency, LocalScoring, local_library, terminal_trims
    from torchmsa.refine import refine
    from torchmsa.tree import build_tree

    gap = batches[0].alphabet.gap_code
    name, go, ge = ACCURATE_LOCAL
    protein = not batches[0].alphabet.is_nucleotide
    if not protein:
        name = "NUC.4.4"
    sc = get_scoring(batches[0].alphabet, name, go, ge)
    mat = torch.from_numpy(sc.matrix.copy())
    local = LocalScoring(mat, sc.gap_open, sc.gap_extend, gap, *ACCURATE_KARLIN, TRIM_EVALUE)
    libs, trees, cuts, ends = [], [], [], []
    for b in batches:
        lib = local_library(b.codes, b.lengths, mat, sc.gap_open, sc.gap_extend, impl)
        trees.append(build_tree(lib.dist, method, b.names) if len(b) > 1 else None)
        head = tail = torch.zeros(len(b), dtype=torch.int64)
        if protein:  # the E-values need the protein scoring's Karlin-Altschul parameters
            head, tail = terminal_trims(lib, b.codes, b.lengths, local, TRIM_MIN, impl)
        ends.append((head, tail))
        if head.any() or tail.any():
            b = _cut_ends(b, head, tail)
            lib = lib.trimmed(head.to(lib.x.device), b.lengths.to(lib.x.device).long())
        cuts.append(b)
        libs.append(lib)
    sizes = [len(b) for b in batches]
    codes, lengths = _concat(cuts)
    weights = torch.cat(
        [
            quantize_weights(t.weights()) if t is not None else torch.ones(1, dtype=torch.int64)
            for t in trees
        ]
    ).to(codes.device)
    forest = Forest.from_trees(trees, sizes)
    cons = Consistency(libs, trees, sizes, forest, CONSISTENCY_WEIGHT)
    table = ResidueTable.from_batch(codes, lengths)
    widths = progressive_align(table, lengths, forest, weights, scoring, impl, bar.step, cons)
    out, first = [], 0
    for b, lib, tree, width, (head, tail) in zip(batches, libs, trees, widths, ends):
        job = table.codes_matrix(first, len(b), width, gap)
        w = weights[first : first + len(b)]
        extra = {"library_entries": len(lib), "set_aside": int(head.sum() + tail.sum())}
        if tree is not None and len(b) > 2:
            job, extra["refined_edges"] = refine(
                job, tree, w, scoring, gap, REFINE_ROUNDS["accurate"], impl, lib, CONSISTENCY_WEIGHT
            )
        if extra["set_aside"]:  # the set-aside ends back as blocks before and after
            last = b.lengths.cpu().long() - tail
            job = torch.cat(
                [
                    _end_block(b, torch.zeros_like(head), head, scoring, method, impl, host_small),
                    job.to(torch.uint8),
                    _end_block(b, last, tail, scoring, method, impl, host_small),
                ],
                1,
            )
        out.append((job, tree, extra))
        first += len(b)
    return out


def _linkage(tree: str) -> str:
    """The linkage of trees built from alignment or library distances."""
    return "upgma_mafft" if tree in ("auto", "parttree", "lcs") else tree


def _first_tree_method(tree: str, n: int, mode: str) -> str:
    if tree == "parttree" or (tree == "auto" and n > PARTTREE_MIN_N):
        return "parttree"
    if tree == "lcs" or (tree == "auto" and mode == "default" and n > LCS_MIN_N):
        return "lcs"
    return _linkage(tree)


def _second_pass(mode: str, method: str) -> bool:
    """Default mode re-trees from its first alignment, except after an LCS tree or PartTree
    (chosen where the second tree's N x N matrix would be too large)."""
    return mode == "default" and method not in ("lcs", "parttree")


def _align_group(batches, chosen, firsts, scoring, tree, impl, bar, host_small=False):
    """Align jobs that share an alphabet and a mode, each under its first-tree method
    (``firsts``); returns (codes, tree, extra meta) each. ``host_small``: accurate mode's
    set-aside ends go to the host when small (:func:`_end_block`)."""
    from torchmsa.tree import tree_from_tensor

    method = _linkage(tree)
    if chosen == "accurate":
        return _accurate_group(batches, scoring, method, impl, bar, host_small)
    gap = batches[0].alphabet.gap_code
    trees = [_first_tree(b, f, impl) if len(b) > 1 else None for b, f in zip(batches, firsts)]
    done = _progressive_jobs(batches, trees, scoring, impl, bar.step)
    extra = [{} for _ in batches]
    again = [j for j, f in enumerate(firsts) if _second_pass(chosen, f)]
    if again:
        for j in again:
            _check_full_matrix(len(batches[j]), done[j][0].device, method)
        retrees = [
            tree_from_tensor(_alignment_distances(done[j][0], gap), method, batches[j].names)
            if len(batches[j]) > 1
            else None
            for j in again
        ]
        redone = _progressive_jobs([batches[j] for j in again], retrees, scoring, impl, bar.step)
        for j, t, r in zip(again, retrees, redone):
            trees[j], done[j] = t, r
    rounds = REFINE_ROUNDS.get(chosen, 0)  # default mode only: accurate returned above
    if rounds:
        from torchmsa.refine import refine

        for j, (b, t) in enumerate(zip(batches, trees)):
            if t is not None and len(b) <= REFINE_MAX_N:
                codes, applied = refine(done[j][0], t, done[j][1], scoring, gap, rounds, impl)
                done[j] = (codes, done[j][1])
                extra[j]["refined_edges"] = applied
    return [(codes, tree, e) for (codes, _), tree, e in zip(done, trees, extra)]


def align_many(
    inputs: list,
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
) -> list[Alignment]:
    """Align many independent sequence sets in shared batches (one result per input).

    Every job's tree levels are aligned together, so a level of all jobs is one batched DP
    launch: many small families cost little more than one. Jobs are grouped by alphabet and
    chosen mode; arguments as :func:`align`, applied to every job.
    """
    t0 = time.perf_counter()
    dev = resolve_device(device)
    impl = resolve_backend(backend, dev)
    if tree not in TREES:
        raise ArgumentError(f"Invalid value for `tree` argument: {tree!r}; use one of {TREES}")
    host = torch.device("cpu")
    batches = [SequenceBatch.from_input(x, seqtype, host) for x in inputs]
    chosen = [_resolve_mode(mode, b) for b in batches]
    # on a GPU under the automatic backend, a small job runs wholly on the host (its launches
    # and copies would cost more than its work); its tensors come back to the device
    host_small = backend == "auto" and dev.type == "cuda"
    places = [host if host_small and _host_job(b, m) else dev for b, m in zip(batches, chosen)]
    batches = [b.to(p) for b, p in zip(batches, places)]
    offsets = [job_offset(b.alphabet, len(b)) for b in batches]
    groups: dict[tuple[str, str, torch.device, float], list[int]] = {}
    for j, b in enumerate(batches):
        groups.setdefault((b.alphabet.name, chosen[j], places[j], offsets[j]), []).append(j)
    firsts = [_first_tree_method(tree, len(b), chosen[j]) for j, b in enumerate(batches)]
    total = sum(
        (2 if _second_pass(chosen[j], firsts[j]) else 1) * max(0, len(b) - 1)
        for j, b in enumerate(batches)
    )
    bar = _ProgressBar(total, progress)
    results: list = [None] * len(batches)
    for (_, mode_j, place, offset), idx in groups.items():
        scoring = profile_scoring(batches[idx[0]].alphabet, matrix, gap_open, gap_extend, offset)
        group = [batches[j] for j in idx]
        group_firsts = [firsts[j] for j in idx]
        group_impl = impl if place == dev else resolve_backend(backend, place)
        done = _align_group(group, mode_j, group_firsts, scoring, tree, group_impl, bar, host_small)
        for j, (codes, guide, extra) in zip(idx, done):
            results[j] = (codes.to(dev), guide, extra)
    bar.close()
    seconds = time.perf_counter() - t0
    out = []
    for j, (b, (codes, guide, extra)) in enumerate(zip(batches, results)):
        meta: dict[str, Any] = {
            "mode": chosen[j],
            "requested_mode": mode,
            "device": str(dev),
            "backend": impl if places[j] == dev else "cpu",
            "computed_on": str(places[j]),
            "tree": firsts[j] if chosen[j] != "accurate" else _linkage(tree),
            "n_sequences": len(b),
            "matrix_offset": offsets[j],
            "seconds": seconds,
            "jobs_in_batch": len(batches),
            **extra,
        }
        weights = None if guide is None else torch.as_tensor(guide.weights(), dtype=torch.float64)
        out.append(
            Alignment(b.names, b.descriptions, b.residues, codes, b.alphabet, guide, weights, meta)
        )
    return out


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
        tree: guide tree method: ``"auto"`` (``"upgma_mafft"``; in default mode above
            :data:`LCS_MIN_N` sequences ``"lcs"``; PartTree above :data:`PARTTREE_MIN_N`),
            ``"upgma"``, ``"upgma_mafft"``, ``"nj"``, ``"single"`` (on 6-mer distances),
            ``"lcs"`` (single linkage on LCS distances, ``torchmsa/ops/lcs.py``; default mode
            then makes one pass) or ``"parttree"``. Second-pass trees (default mode) use the
            linkage (``"upgma_mafft"`` for ``"auto"``, ``"lcs"`` and ``"parttree"``).
        seqtype: ``"auto"``, ``"protein"``, ``"dna"`` or ``"rna"``.
        progress: print a progress bar on stderr.
        backend: DP backend, ``"auto"``, ``"cpu"`` or ``"triton"``.

    Returns:
        An :class:`~torchmsa.alignment.Alignment`, rows in input order.
    """
    return align_many(
        [seqs],
        device=device,
        mode=mode,
        matrix=matrix,
        gap_open=gap_open,
        gap_extend=gap_extend,
        tree=tree,
        seqtype=seqtype,
        progress=progress,
        backend=backend,
    )[0]


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
