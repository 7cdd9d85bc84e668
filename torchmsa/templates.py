"""Template realignment: what AlphaFold, OpenFold and Chai-1 run the kalign binary for.

A query is aligned against many template sequences in one batched call of the pairwise DP
(:func:`torchmsa.ops.pairwise.pairwise_align_codes`: numba on the CPU, Triton on CUDA). For
each template the result gives the query-index -> template-index mapping of the aligned
residue pairs, the identity ``identical pairs / min(len(query), len(template))`` (as AlphaFold's
``_realign_pdb_template_to_query`` computes it) and whether it reaches ``min_identity``
(AlphaFold refuses a template below 0.6).

>>> r = realign("MKVLAG", ["MKVLG", "WWWW"], device="cpu")
>>> r.mappings()[0], r.accepted.tolist()
({0: 0, 1: 1, 2: 2, 3: 3, 5: 4}, [True, False])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import torch

from torchmsa import constants
from torchmsa.alphabet import encode, encode_batch, resolve_alphabet
from torchmsa.config import MemoryBudget
from torchmsa.errors import ArgumentError
from torchmsa.ops.backend import resolve_device
from torchmsa.ops.pairwise import pairwise_align_codes
from torchmsa.scoring import get_scoring

__all__ = ["Realignment", "realign"]


class Realignment(NamedTuple):
    """Template realignments, one row per template.

    Attributes:
        mapping: ``int64 [T, Lq]``: the template index aligned to each query index, -1 where
            the query residue faces a gap (or lies outside a local alignment).
        identity: ``float64 [T]``: identical aligned pairs / the shorter sequence's length.
        accepted: ``bool [T]``: ``identity >= min_identity``.
        score: ``int64 [T]``: the alignment scores.
    """

    mapping: torch.Tensor
    identity: torch.Tensor
    accepted: torch.Tensor
    score: torch.Tensor

    def mappings(self) -> list[dict[int, int]]:
        """One ``{query index: template index}`` dict per template (AlphaFold's form)."""
        out = []
        for row in self.mapping.cpu().tolist():
            out.append({q: t for q, t in enumerate(row) if t >= 0})
        return out


def _check(min_identity, mode) -> None:
    if isinstance(min_identity, bool) or not isinstance(min_identity, (int, float)):
        raise ArgumentError(
            f"Invalid value for `min_identity` argument: {min_identity!r}; use a fraction in 0..1"
        )
    if not 0 <= min_identity <= 1:
        raise ArgumentError(
            f"Invalid value for `min_identity` argument: {min_identity!r}; use a fraction in 0..1"
        )
    if mode not in constants.MODES:
        raise ArgumentError(
            f"Invalid value for `mode` argument: {mode!r}; use 'global', 'local' or 'semiglobal'"
        )


def realign(
    query: str,
    templates: Sequence[str],
    *,
    min_identity: float = 0.6,
    mode: str = "global",
    matrix=None,
    gap_open: int | None = None,
    gap_extend: int | None = None,
    seqtype: str = "protein",
    device="auto",
    backend: str = "auto",
    budget: MemoryBudget | int | None = None,
) -> Realignment:
    """Align ``query`` against every template in one batched call (module docstring).

    Arguments:
        query: the query sequence (gap characters are removed).
        templates: the template sequences.
        min_identity: the identity a template needs to be accepted (AlphaFold: 0.6).
        mode: ``"global"`` (as kalign), ``"local"`` or ``"semiglobal"``.
        matrix, gap_open, gap_extend: scoring, as :func:`torchmsa.pairwise_align`
            (``None``: BLOSUM62, 10, 1 for proteins).
        seqtype: ``"protein"``, ``"dna"``, ``"rna"`` or ``"auto"``.
        device: ``"auto"``, ``"cpu"``, ``"cuda"`` or a ``torch.device``.
        backend: ``"auto"``, ``"cpu"`` or ``"triton"``.
        budget: the memory the Triton launches may plan for.

    Returns:
        A :class:`Realignment` on ``device``.
    """
    _check(min_identity, mode)
    if not isinstance(query, str):
        raise ArgumentError(f"`query` must be a string; got {type(query).__name__}")
    templates = list(templates)
    alphabet = resolve_alphabet(seqtype, [query, *[t for t in templates if isinstance(t, str)]])
    scoring = get_scoring(alphabet, matrix, gap_open, gap_extend)
    dev = resolve_device(device)
    q_codes, _ = encode(query, alphabet, "query", 0)
    lq, n_t = len(q_codes), len(templates)
    names = [f"templates[{k}]" for k in range(n_t)]
    t_codes, t_len, _ = encode_batch(templates, alphabet, names) if n_t else (None, None, None)
    if n_t == 0:
        empty = torch.zeros(0, dtype=torch.float64, device=dev)
        return Realignment(
            torch.zeros((0, lq), dtype=torch.long, device=dev),
            empty,
            empty.bool(),
            empty.long(),
        )
    ca = torch.full((n_t, max(lq, 1)), alphabet.gap_code, dtype=torch.uint8)
    ca[:, :lq] = torch.from_numpy(q_codes.copy())
    cb = torch.full((n_t, max(t_codes.shape[1], 1)), alphabet.gap_code, dtype=torch.uint8)
    cb[:, : t_codes.shape[1]] = torch.from_numpy(t_codes)
    la = torch.full((n_t,), lq, dtype=torch.int32)
    lb = torch.from_numpy(t_len)
    mat = torch.from_numpy(scoring.matrix.copy())
    ca, la, cb, lb, mat = (t.to(dev) for t in (ca, la, cb, lb, mat))
    info, ops = pairwise_align_codes(
        ca, la, cb, lb, mat, scoring.gap_open, scoring.gap_extend, constants.MODES[mode],
        backend, budget=budget,
    )  # fmt: skip
    info = info.to(dev).long()
    ops = ops.to(dev)
    mapping, same = _walk(ops, info, ca, cb, lq)
    shorter = torch.minimum(la, lb).double()
    identity = torch.where(shorter > 0, same.double() / shorter.clamp_min(1), 0.0)
    return Realignment(mapping, identity, identity >= min_identity, info[:, 0])


def _walk(ops, info, ca, cb, lq) -> tuple[torch.Tensor, torch.Tensor]:
    """The query -> template mapping and identical pair counts of every traceback, at once."""
    n_t, width = ops.shape
    steps = torch.arange(width, device=ops.device)
    valid = steps[None, :] < info[:, 1:2]
    match = valid & (ops == constants.OP_MATCH)
    a_step = match | (valid & (ops == constants.OP_UP))
    b_step = match | (valid & (ops == constants.OP_LEFT))
    a_pos = info[:, 2:3] + torch.cumsum(a_step.long(), 1) - 1  # [T, W]
    b_pos = info[:, 3:4] + torch.cumsum(b_step.long(), 1) - 1
    a_at = torch.where(match, a_pos, lq)
    mapping = torch.full((n_t, lq + 1), -1, dtype=torch.long, device=ops.device)
    mapping.scatter_(1, a_at, torch.where(match, b_pos, -1))
    qa = torch.gather(ca.long(), 1, a_pos.clamp(0, ca.shape[1] - 1))
    tb = torch.gather(cb.long(), 1, b_pos.clamp(0, cb.shape[1] - 1))
    same = (match & (qa == tb)).sum(1)
    return mapping[:, :lq], same
