"""Pairwise alignment: the public ``pairwise_align`` and the batched tensor dispatchers."""

from __future__ import annotations

from typing import NamedTuple

import torch

from torchmsa import constants
from torchmsa.alphabet import detect_seqtype, encode, get_alphabet
from torchmsa.config import MemoryBudget
from torchmsa.cpu import dp as cpu_dp
from torchmsa.errors import ArgumentError
from torchmsa.ops.backend import budget_bytes, resolve_backend, resolve_device
from torchmsa.scoring import get_scoring

__all__ = [
    "PairwiseAlignment",
    "pairwise_align",
    "pairwise_score_codes",
    "pairwise_align_codes",
    "ops_to_rows",
]


class PairwiseAlignment(NamedTuple):
    """One pairwise alignment.

    Attributes:
        score: the alignment score (integer, in matrix units).
        aligned: ``(gapped_a, gapped_b)``, or ``None`` when ``traceback=False``. In local mode
            these cover the aligned region only.
        a_range: ``(start, end)`` of the part of ``a`` that the rows cover (0-based, end
            exclusive): all of ``a`` in global and semiglobal mode, the aligned region in local
            mode. With ``traceback=False`` a local start is not computed and is ``None``.
        b_range: the same for ``b``.
    """

    score: int
    aligned: tuple[str, str] | None
    a_range: tuple[int | None, int]
    b_range: tuple[int | None, int]


def pairwise_score_codes(
    codes_a,
    len_a,
    codes_b,
    len_b,
    matrix,
    gap_open,
    gap_extend,
    mode,
    backend="auto",
    *,
    budget: MemoryBudget | int | None = None,
):
    """Batched scores on tensors: ``int32 [P, 3]`` (score, end_i, end_j); see ``cpu/dp.py``.
    ``budget``: the memory the Triton launches may plan for (bytes or a MemoryBudget)."""
    args = (codes_a, len_a, codes_b, len_b, matrix, gap_open, gap_extend, mode)
    if resolve_backend(backend, codes_a.device) == "triton":
        from torchmsa._triton import dp as triton_dp

        return triton_dp.pairwise_score(*args, budget=budget_bytes(budget, codes_a.device))
    return cpu_dp.pairwise_score(*args)


def pairwise_align_codes(
    codes_a,
    len_a,
    codes_b,
    len_b,
    matrix,
    gap_open,
    gap_extend,
    mode,
    backend="auto",
    *,
    budget: MemoryBudget | int | None = None,
):
    """Batched alignments on tensors: ``(info int32 [P, 6], ops uint8 [P, La+Lb])``;
    ``budget`` as :func:`pairwise_score_codes`."""
    args = (codes_a, len_a, codes_b, len_b, matrix, gap_open, gap_extend, mode)
    if resolve_backend(backend, codes_a.device) == "triton":
        from torchmsa._triton import dp as triton_dp

        return triton_dp.pairwise_align(*args, budget=budget_bytes(budget, codes_a.device))
    return cpu_dp.pairwise_align(*args)


def ops_to_rows(ops, a: str, b: str, start_a: int = 0, start_b: int = 0) -> tuple[str, str]:
    """Gapped rows from traceback ops (0: pair, 1: a vs gap, 2: gap vs b)."""
    ra, rb = [], []
    i, j = start_a, start_b
    for op in ops:
        if op == constants.OP_MATCH:
            ra.append(a[i])
            rb.append(b[j])
            i += 1
            j += 1
        elif op == constants.OP_UP:
            ra.append(a[i])
            rb.append("-")
            i += 1
        else:
            ra.append("-")
            rb.append(b[j])
            j += 1
    return "".join(ra), "".join(rb)


def _pad(codes: list, gap: int) -> tuple[torch.Tensor, torch.Tensor]:
    width = max(1, max(len(c) for c in codes))
    out = torch.full((len(codes), width), gap, dtype=torch.uint8)
    for i, c in enumerate(codes):
        out[i, : len(c)] = torch.from_numpy(c)
    return out, torch.tensor([len(c) for c in codes], dtype=torch.int32)


def pairwise_align(
    a: str | list[str],
    b: str | list[str],
    *,
    mode: str = "global",
    matrix=None,
    gap_open: int | None = None,
    gap_extend: int | None = None,
    device="auto",
    traceback: bool = True,
    seqtype: str = "auto",
    backend: str = "auto",
) -> PairwiseAlignment | list[PairwiseAlignment]:
    """Align one pair, or many pairs in one batched call.

    Arguments:
        a, b: two sequences, or two equal-length lists of sequences (pair ``k`` is
            ``(a[k], b[k])``). Gap characters are removed; case is kept in the output.
        mode: ``"global"``, ``"local"`` or ``"semiglobal"`` (end gaps free on both ends of
            both sequences).
        matrix: a substitution matrix name or a ``Bio.Align.substitution_matrices.Array``;
            ``None`` is BLOSUM62 for proteins and NUC.4.4 for DNA/RNA.
        gap_open, gap_extend: affine costs (``None``: 10 and 1); a gap of length k scores
            ``-(gap_open + (k - 1) * gap_extend)``.
        device: ``"auto"``, ``"cpu"``, ``"cuda"``, ``"cuda:N"`` or a ``torch.device``.
        traceback: also return the gapped rows (score only when ``False``).
        seqtype: ``"auto"``, ``"protein"``, ``"dna"`` or ``"rna"``.
        backend: ``"auto"``, ``"cpu"`` or ``"triton"``.

    Returns:
        A :class:`PairwiseAlignment`, or a list of them for list input.

    Ties between equally good alignments are broken by the rule in ``torchmsa/cpu/dp.py``,
    identically on every backend.

    >>> r = pairwise_align("HEAGAWGHEE", "PAWHEAE", mode="local", gap_open=10, gap_extend=1)
    >>> r.score, r.aligned
    (18, ('AWGHE', 'AW-HE'))
    """
    single = isinstance(a, str)
    if single != isinstance(b, str):
        raise ArgumentError("`a` and `b` must both be strings or both be lists of strings")
    seqs_a, seqs_b = ([a], [b]) if single else (list(a), list(b))
    if len(seqs_a) != len(seqs_b):
        raise ArgumentError(
            f"`a` and `b` hold {len(seqs_a)} and {len(seqs_b)} sequences; pairs need equal counts"
        )
    if mode not in constants.MODES:
        raise ArgumentError(
            f"Invalid value for `mode` argument: {mode!r}; use 'global', 'local' or 'semiglobal'"
        )
    if not seqs_a:
        return []
    alphabet = detect_seqtype(seqs_a + seqs_b) if seqtype == "auto" else get_alphabet(seqtype)
    scoring = get_scoring(alphabet, matrix, gap_open, gap_extend)
    dev = resolve_device(device)
    enc_a = [encode(s, alphabet, f"a[{k}]", k) for k, s in enumerate(seqs_a)]
    enc_b = [encode(s, alphabet, f"b[{k}]", k) for k, s in enumerate(seqs_b)]
    ca, la = _pad([c for c, _ in enc_a], alphabet.gap_code)
    cb, lb = _pad([c for c, _ in enc_b], alphabet.gap_code)
    mat = torch.from_numpy(scoring.matrix.copy())
    ca, la, cb, lb, mat = (t.to(dev) for t in (ca, la, cb, lb, mat))
    args = (ca, la, cb, lb, mat, scoring.gap_open, scoring.gap_extend, constants.MODES[mode])
    results = []
    if not traceback:
        out = pairwise_score_codes(*args, backend=backend).cpu().tolist()
        for k, (score, ei, ej) in enumerate(out):
            if mode == "local":
                ranges = (None, ei), (None, ej)
            else:
                ranges = (0, len(enc_a[k][0])), (0, len(enc_b[k][0]))
            results.append(PairwiseAlignment(score, None, *ranges))
    else:
        info, ops = pairwise_align_codes(*args, backend=backend)
        info, ops = info.cpu().tolist(), ops.cpu().numpy()
        for k, (score, n_ops, si, sj, ei, ej) in enumerate(info):
            rows = ops_to_rows(ops[k, :n_ops], enc_a[k][1], enc_b[k][1], si, sj)
            if mode != "local":
                ei, ej = len(enc_a[k][0]), len(enc_b[k][0])
            results.append(PairwiseAlignment(score, rows, (si, ei), (sj, ej)))
    return results[0] if single else results
