"""Adding sequences to an existing alignment, and merging two alignments.

:func:`add` aligns new sequences to an alignment's profile, keeping its columns (MAFFT's
``--add``, ``--addfragments``, ``--keeplength``); :func:`merge` aligns two alignments as
profiles, each one's columns kept as blocks (Clustal Omega's ``--profile1/--profile2``,
MAFFT's ``--merge`` of two sub-alignments). Both use the profile scoring of the progressive
pass (exact integer scores, the same on every device); ``add`` aligns many new sequences per
batched DP call.

>>> from torchmsa.addmerge import add, merge
>>> ref = {"a": "MKV-LAAG", "b": "MKVQLA-G"}
>>> add(ref, {"c": "MKVQLAAG"}, device="cpu").rows
['MKV-LAAG', 'MKVQLA-G', 'MKVQLAAG']
>>> merge(ref, {"d": "MK--LAG", "e": "MKLS--G"}, device="cpu").width
8
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import torch

from torchmsa.addmerge.add import add_codes
from torchmsa.addmerge.merge import merge_codes
from torchmsa.addmerge.msa import EncodedMsa, Msa, as_msa, encode_msa, shared_alphabet
from torchmsa.addmerge.profile import reference_profile
from torchmsa.alignment import Alignment
from torchmsa.config import AlignConfig, ExecutionPolicy, MemoryBudget, checked, describe
from torchmsa.errors import ArgumentError
from torchmsa.ops.backend import resolve_backend, resolve_device
from torchmsa.pipeline.accurate import local_scoring
from torchmsa.pipeline.placement import entry_section
from torchmsa.pipeline.progress import ProgressBar
from torchmsa.pipeline.scoring import job_offset, profile_scoring
from torchmsa.pipeline.shortcuts import apply_shortcuts
from torchmsa.pipeline.trees import alignment_tree
from torchmsa.progressive import quantize_weights
from torchmsa.sequences import SequenceBatch, as_records
from torchmsa.stages import stage

__all__ = ["add", "merge"]

MERGE_WEIGHT_TOTAL = 1 << 18  # each group's weights: both together stay below 2^20


def add(
    alignment,
    seqs,
    *,
    keep_length: bool = False,
    fragments: bool = False,
    device="auto",
    config: AlignConfig | None = None,
    policy: ExecutionPolicy | None = None,
    budget: MemoryBudget | None = None,
    matrix=None,
    gap_open: float | None = None,
    gap_extend: float | None = None,
    seqtype: str = "auto",
    backend: str = "auto",
    progress: bool = False,
) -> Alignment:
    """Align new sequences to an existing alignment, keeping its columns.

    Each new sequence is aligned to the alignment's profile (sequence weights from its guide
    tree: the :class:`~torchmsa.Alignment`'s own, else one built from the rows' distances),
    many sequences per batched DP call. Residues that match no existing column go into new
    columns between the existing ones, unaligned among the new sequences (see
    :mod:`torchmsa.addmerge.place`); every existing row, with the new columns removed, is the
    row that was given.

    Arguments:
        alignment: the existing alignment: a :class:`~torchmsa.Alignment`, an aligned file
            (FASTA, A2M/A3M, Stockholm, Clustal, PHYLIP), a dict of name to gapped row or a
            list of ``(name, row)`` pairs.
        seqs: the new sequences, in any form :func:`torchmsa.align` takes (gaps removed).
        keep_length: drop the new residues that fall between existing columns, so the result
            has exactly the existing columns (MAFFT ``--keeplength``).
        fragments: the new sequences are fragments: their end gaps are free (MAFFT
            ``--addfragments``).
        device, config, policy, budget, matrix, gap_open, gap_extend, seqtype, backend,
        progress: as :func:`torchmsa.align` (``config.scoring`` is used; its matrix offset
            grows with the existing alignment's size).

    Returns:
        An :class:`~torchmsa.Alignment`: the existing rows, then the new ones in input order;
        ``metadata["mode"]`` is ``"add"``.
    """
    config, custom = apply_shortcuts(
        config, matrix=matrix, gap_open=gap_open, gap_extend=gap_extend
    )
    policy = checked(policy, ExecutionPolicy, "policy")
    budget = checked(budget, MemoryBudget, "budget")
    with entry_section("add", policy):
        t0 = time.perf_counter()
        dev = resolve_device(device)
        impl = resolve_backend(backend, dev)
        msa = as_msa(alignment, "alignment")
        with stage("encode"):
            records = as_records(seqs)
            if not records:
                raise ArgumentError("`seqs` holds no sequences; give the sequences to add")
            alphabet = shared_alphabet(seqtype, [msa], [r.seq for r in records])
            ref = encode_msa(msa, alphabet, dev)
            new = SequenceBatch.from_input(records, alphabet, dev)
        offset = job_offset(alphabet, len(msa), config=config.scoring)
        scoring = profile_scoring(alphabet, custom, offset=offset, config=config.scoring)
        weights = _reference_weights(ref, config, policy, budget)
        gap = alphabet.gap_code
        with stage("reference_profile"):
            prof = reference_profile(ref.codes, weights, scoring, alphabet.size, gap)
        bar = ProgressBar(len(new), progress, "adding")
        codes, kept = add_codes(
            ref.codes,
            prof,
            new.codes,
            new.lengths,
            scoring,
            gap,
            impl,
            keep_length=keep_length,
            fragments=fragments,
            policy=policy,
            budget=budget,
            progress=bar.update,
        )
        bar.close()
        residues = _kept_residues(new.residues, new.lengths, kept)
        meta = _metadata("add", dev, impl, config, policy, t0, offset)
        meta.update(
            n_reference=len(msa), n_added=len(new), keep_length=keep_length, fragments=fragments
        )
        return Alignment(
            msa.names + new.names,
            msa.descriptions + new.descriptions,
            ref.residues + residues,
            codes,
            alphabet,
            metadata=meta,
        )


def merge(
    aln_a,
    aln_b,
    *,
    device="auto",
    config: AlignConfig | None = None,
    policy: ExecutionPolicy | None = None,
    budget: MemoryBudget | None = None,
    matrix=None,
    gap_open: float | None = None,
    gap_extend: float | None = None,
    seqtype: str = "auto",
    backend: str = "auto",
) -> Alignment:
    """Align two alignments to each other as profiles, each one's columns kept as blocks.

    Every row of ``aln_a`` and ``aln_b``, with the columns the other alignment brought
    removed, is the row that was given, except for columns that are gaps in every row of
    their alignment, which are dropped.

    Arguments:
        aln_a, aln_b: the alignments, each in any form :func:`add` takes as ``alignment``.
        device, config, policy, budget, matrix, gap_open, gap_extend, seqtype, backend: as
            :func:`torchmsa.align`.

    Returns:
        An :class:`~torchmsa.Alignment`: ``aln_a``'s rows, then ``aln_b``'s;
        ``metadata["mode"]`` is ``"merge"``.
    """
    config, custom = apply_shortcuts(
        config, matrix=matrix, gap_open=gap_open, gap_extend=gap_extend
    )
    policy = checked(policy, ExecutionPolicy, "policy")
    budget = checked(budget, MemoryBudget, "budget")
    with entry_section("merge", policy):
        t0 = time.perf_counter()
        dev = resolve_device(device)
        impl = resolve_backend(backend, dev)
        msa_a, msa_b = as_msa(aln_a, "aln_a"), as_msa(aln_b, "aln_b")
        with stage("encode"):
            alphabet = shared_alphabet(seqtype, [msa_a, msa_b])
            a, b = encode_msa(msa_a, alphabet, dev), encode_msa(msa_b, alphabet, dev)
        offset = job_offset(alphabet, len(msa_a) + len(msa_b), config=config.scoring)
        scoring = profile_scoring(alphabet, custom, offset=offset, config=config.scoring)
        w_a = _scaled(_reference_weights(a, config, policy, budget))
        w_b = _scaled(_reference_weights(b, config, policy, budget))
        codes = merge_codes(
            a.codes,
            w_a,
            b.codes,
            w_b,
            scoring,
            alphabet.gap_code,
            alphabet.size,
            impl,
            local=local_scoring(alphabet, config=config.consistency),
            consistency=config.consistency,
            policy=policy,
            budget=budget,
        )
        meta = _metadata("merge", dev, impl, config, policy, t0, offset)
        meta.update(n_a=len(msa_a), n_b=len(msa_b))
        return Alignment(
            msa_a.names + msa_b.names,
            msa_a.descriptions + msa_b.descriptions,
            a.residues + b.residues,
            codes,
            alphabet,
            metadata=meta,
        )


def _reference_weights(enc: EncodedMsa, config, policy, budget) -> torch.Tensor:
    """``int64 [R]``: the alignment's tree weights, quantised; a tree is built from its rows'
    distances when it has none (uniform weights above ``config.tree.parttree_min_n`` rows,
    where no full distance matrix is built)."""
    msa: Msa = enc.msa
    if msa.weights is not None:
        return quantize_weights(msa.weights)
    n = len(msa)
    if n < 3 or n > config.tree.parttree_min_n:
        return quantize_weights(torch.ones(n, dtype=torch.float64))
    tree = alignment_tree(
        enc.codes, enc.alphabet.gap_code, "upgma_mafft", msa.names, policy=policy, budget=budget
    )
    return quantize_weights(tree.weights())


def _scaled(weights: torch.Tensor) -> torch.Tensor:
    """Integer weights summing to about :data:`MERGE_WEIGHT_TOTAL`, each at least 1."""
    w = weights.to(torch.float64)
    return torch.floor(w * (MERGE_WEIGHT_TOTAL / float(w.sum()))).to(torch.int64).clamp_min(1)


def _kept_residues(texts: list[str], lengths: torch.Tensor, kept: torch.Tensor) -> list[str]:
    keep = kept.cpu().numpy()
    if keep.all():
        return list(texts)
    ends = np.cumsum(lengths.cpu().numpy().astype(np.int64))
    out = []
    for text, stop, size in zip(texts, ends, (len(t) for t in texts)):
        mask = keep[stop - size : stop]
        raw = np.frombuffer(text.encode("ascii"), np.uint8)
        out.append(raw[mask].tobytes().decode("ascii"))
    return out


def _metadata(mode, dev, impl, config, policy, t0, offset) -> dict[str, Any]:
    return {
        "mode": mode,
        "requested_mode": mode,
        "device": str(dev),
        "backend": impl,
        "computed_on": str(dev),
        "tree": None,
        "matrix_offset": offset,
        "seconds": time.perf_counter() - t0,
        "config": describe(config),
        "policy": describe(policy),
    }
