"""Best-K local alignment of a query against a long subject (Waterman-Eggert with forbidden
pairs), exact and in bounded memory: :func:`local_topk` on strings and :func:`local_topk_codes`
on code tensors. The method is decision ``docs/decisions/0038-best-k-local-alignment.md``; the
strips live in :mod:`torchmsa.ops.local_strips`.

The hits are, in order: the first maximum of the local DP in row-major order (largest score,
then smallest query end, then smallest subject end), traced back with the tie rule of
``torchmsa/cpu/dp.py``; then every pair that hit aligns is forbidden (no diagonal move into it)
and the next maximum of the recomputed matrix is taken, until ``k`` hits or no cell reaches
``min_score``. Hit 1 is ``pairwise_align(query, subject, mode="local")``.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import torch

from torchmsa import constants
from torchmsa.alphabet import encode, get_alphabet, resolve_alphabet
from torchmsa.config import MemoryBudget
from torchmsa.cpu import strip as cpu_strip
from torchmsa.errors import ArgumentError, EmptyInputError
from torchmsa.ops.backend import budget_bytes, resolve_backend, resolve_device
from torchmsa.ops.local_strips import LocalPlan, StripDP, plan_layout
from torchmsa.ops.pairwise import rows_from_ops
from torchmsa.scoring import get_scoring

__all__ = ["LocalHit", "LocalHits", "LocalPlan", "local_topk", "local_topk_codes"]


class LocalHit(NamedTuple):
    """One local alignment of :func:`local_topk`.

    Attributes:
        score: its score, in matrix units.
        query: ``(start, end)`` of the aligned query residues (0-based, end exclusive).
        subject: ``(start, end)`` of the aligned subject residues.
        aligned: ``(query_row, subject_row)``, the gapped rows (``-`` for gaps, case as given).
    """

    score: int
    query: tuple[int, int]
    subject: tuple[int, int]
    aligned: tuple[str, str]


class LocalHits(NamedTuple):
    """The hits of :func:`local_topk_codes`, best first, as CPU tensors.

    Attributes:
        score: ``int32 [K]`` scores.
        query_start, query_end: ``int64 [K]``: hit ``t`` aligns query residues
            ``query_start[t] .. query_end[t] - 1``.
        subject_start, subject_end: the same for the subject.
        n_ops: ``int32 [K]`` ops per hit.
        ops: ``uint8 [K, L]``: hit ``t``'s ops in ``ops[t, :n_ops[t]]`` (``0`` a residue pair,
            ``1`` a query residue against a gap, ``2`` a gap against a subject residue).
        plan: the :class:`LocalPlan` used, every field resolved.
        refilled: strips filled again after the first pass (fix-ups and recomputations).
    """

    score: torch.Tensor
    query_start: torch.Tensor
    query_end: torch.Tensor
    subject_start: torch.Tensor
    subject_end: torch.Tensor
    n_ops: torch.Tensor
    ops: torch.Tensor
    plan: LocalPlan
    refilled: int


def _count(name: str, value, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        raise ArgumentError(
            f"Invalid value for `{name}` argument: {value!r}; expected an integer >= {low}"
        )
    return int(value)


def _check_codes(name: str, codes, size: int) -> None:
    if not isinstance(codes, torch.Tensor) or codes.dtype != torch.uint8 or codes.ndim != 1:
        raise ArgumentError(
            f"`{name}` must be a uint8 [L] tensor of residue codes; got "
            f"{getattr(codes, 'dtype', type(codes).__name__)} {tuple(getattr(codes, 'shape', ()))}"
        )
    if codes.shape[0] == 0:
        raise EmptyInputError(f"`{name}` is empty; give at least one residue")
    top = int(codes.max())
    if top >= size:
        at = int(torch.nonzero(codes >= size)[0, 0])
        raise ArgumentError(
            f"`{name}[{at}]` is {int(codes[at])} but the matrix has {size} rows (codes "
            f"0..{size - 1}); encode with the matrix's alphabet"
        )


def local_topk_codes(
    query: torch.Tensor,
    subject: torch.Tensor,
    matrix,
    gap_open: int,
    gap_extend: int,
    *,
    k: int = 100,
    min_score: int = 1,
    backend: str = "auto",
    budget: MemoryBudget | int | None = None,
    plan: LocalPlan | None = None,
) -> LocalHits:
    """Best-K local alignment on code tensors (the engine of :func:`local_topk`).

    Arguments:
        query, subject: ``uint8 [n]``, ``uint8 [m]`` residue codes on one device; the backend
            follows it (``"auto"``: Triton on CUDA, numba on the CPU).
        matrix: ``int32 [A, A]`` substitution scores (tensor or array); codes must be ``< A``.
        gap_open, gap_extend: gap costs: a gap of length ``L`` costs
            ``gap_open + (L - 1) * gap_extend``.
        k: the most hits to return (``>= 1``).
        min_score: the lowest score a hit may have (``>= 1``).
        backend: ``"auto"``, ``"cpu"`` or ``"triton"``.
        budget: the memory the strips may take on the codes' device (bytes or a
            ``MemoryBudget``; ``None``: ``MemoryBudget()``); a hit's traceback takes the host's.
        plan: the strip layout (:class:`LocalPlan`; ``None``: chosen from the budget).

    Returns:
        :class:`LocalHits`, best first.

    Raises:
        ArgumentError: an argument is invalid, or a code is not below the matrix's size.
        EmptyInputError: ``query`` or ``subject`` is empty.
        ResourceError: the checkpoints (or a hit's traceback rectangle) do not fit the budget.
    """
    k, min_score = _count("k", k, 1), _count("min_score", min_score, 1)
    go, ge = _count("gap_open", gap_open, 0), _count("gap_extend", gap_extend, 0)
    if plan is None:
        plan = LocalPlan()
    if not isinstance(plan, LocalPlan):
        raise ArgumentError(f"Invalid value for `plan` argument: {plan!r}; pass a LocalPlan")
    raw = matrix.detach().cpu().numpy() if isinstance(matrix, torch.Tensor) else matrix
    mat_np = np.array(raw, dtype=np.int32)  # a copy: the scoring's matrix is read-only
    if mat_np.ndim != 2 or mat_np.shape[0] != mat_np.shape[1] or mat_np.shape[0] == 0:
        raise ArgumentError(f"`matrix` must be a square [A, A] array; got shape {mat_np.shape}")
    for name, codes in (("query", query), ("subject", subject)):
        _check_codes(name, codes, mat_np.shape[0])
    if subject.device != query.device:
        raise ArgumentError(f"`subject` is on {subject.device} but `query` on {query.device}")
    be = resolve_backend(backend, query.device)
    work = query.device if be == "triton" else torch.device("cpu")
    q, s = query.to(work), subject.to(work)
    n, m = q.shape[0], s.shape[0]
    resolved, chunk = plan_layout(n, m, plan, be, work, budget_bytes(budget, work))
    host_bytes = budget_bytes(budget, torch.device("cpu"))
    dp = StripDP(q, s, torch.from_numpy(mat_np).to(work), go, ge, resolved, chunk, be)
    dp.first_pass()
    q_host = q.cpu().numpy()
    col_max = mat_np[np.unique(q_host)].max(0)  # [A] best score of a subject code
    hits = []
    while len(hits) < k:
        score, i_end, j_end, j_start = dp.top()
        if score < min_score:
            break
        s_part = s[j_start - 1 : j_end].cpu().numpy()
        i_first = cpu_strip.rect_first_row(score, i_end, s_part, col_max, go, ge)
        ops, i0, j0, h = cpu_strip.rect_traceback(
            q_host[i_first - 1 : i_end], s_part, j_start, mat_np, go, ge, dp.forbid_ptr,
            dp.forbid_col, host_bytes, i_first,
        )  # fmt: skip
        if h != score or j0 != j_start - 1:
            raise RuntimeError(
                f"internal error: hit ({i_end}, {j_end}) of score {score} starting at column "
                f"{j_start} traces back to score {h} from column {j0 + 1} ({be} backend)"
            )
        hits.append((score, i0, i_end, j0, j_end, ops))
        if len(hits) == k:
            break
        match = ops == constants.OP_MATCH
        i = i0 + np.cumsum(ops != constants.OP_LEFT)
        j = j0 + np.cumsum(ops != constants.OP_UP)
        dp.forbid(i[match], j[match])
        dp.recompute(j_start, j_end, score)
    return _pack(hits, resolved, dp.refilled)


def _pack(hits, plan: LocalPlan, refilled: int) -> LocalHits:
    K = len(hits)
    width = max([len(h[5]) for h in hits], default=0)
    ops = np.zeros((K, width), np.uint8)
    for t, h in enumerate(hits):
        ops[t, : len(h[5])] = h[5]
    cols = np.array([h[:5] for h in hits], np.int64).reshape(K, 5)
    return LocalHits(
        torch.from_numpy(cols[:, 0].astype(np.int32)),
        *(torch.from_numpy(cols[:, c].copy()) for c in (1, 2, 3, 4)),
        torch.tensor([len(h[5]) for h in hits], dtype=torch.int32),
        torch.from_numpy(ops),
        plan,
        refilled,
    )


def local_topk(
    query: str,
    subject: str,
    *,
    k: int = 100,
    min_score: int = 1,
    matrix=None,
    gap_open: int | None = None,
    gap_extend: int | None = None,
    seqtype: str = "auto",
    device="auto",
    backend: str = "auto",
    budget: MemoryBudget | int | None = None,
    plan: LocalPlan | None = None,
) -> list[LocalHit]:
    """The ``k`` best local alignments of ``query`` in ``subject`` (Waterman-Eggert), exactly.

    Each hit is the best local alignment of the matrix in which the residue pairs of the
    earlier hits may not be aligned; ties go to the smallest query end, then the smallest
    subject end, and each alignment follows the tie rule of ``torchmsa/cpu/dp.py``, on every
    backend. Memory stays at 16 bytes per query residue per strip of the subject (decision 0038).

    Arguments:
        query, subject: sequences; gap characters (``-``, ``.``) are removed and positions count
            the residues that remain. The subject may hold 10^8 residues and more.
        k: the most hits to return (``>= 1``).
        min_score: the lowest score a hit may have (``>= 1``), in matrix units.
        matrix, gap_open, gap_extend, seqtype, device, backend: as for
            :func:`~torchmsa.pairwise_align` (BLOSUM62 / NUC.4.4, gaps 10 and 1 by default).
        budget: the memory the strips may take (bytes or a ``MemoryBudget``).
        plan: the strip layout (:class:`LocalPlan`; ``None``: chosen from the budget).

    Returns:
        Up to ``k`` :class:`LocalHit`, best first.

    Raises:
        InvalidCharacterError: a sequence holds a character of no residue (named ``query`` or
            ``subject``, with its position).
        EmptyInputError: a sequence has no residues.
        ArgumentError, ScoringError, AlphabetError: an argument is invalid.
        ResourceError: the work does not fit the memory budget.

    >>> hits = local_topk("HEAGAWGHEE", "PAWHEAEKKKHEAGAWGHEEKKPAWHEAE", k=3)
    >>> for h in hits:
    ...     print(h.score, h.query, h.subject, *h.aligned)
    62 (0, 10) (10, 20) HEAGAWGHEE HEAGAWGHEE
    22 (0, 9) (3, 12) HEAGAWGHE HEAEKKKHE
    18 (4, 9) (1, 5) AWGHE AW-HE
    """
    for name, seq in (("query", query), ("subject", subject)):
        if not isinstance(seq, str):
            raise ArgumentError(
                f"`{name}` is a {type(seq).__name__}, not a string; pass its text (str(seq) for "
                f"a Bio.Seq)"
            )
    k, min_score = _count("k", k, 1), _count("min_score", min_score, 1)
    auto = isinstance(seqtype, str) and seqtype.strip().lower() == "auto"
    alphabet = resolve_alphabet(seqtype, [query, subject]) if auto else get_alphabet(seqtype)
    scoring = get_scoring(alphabet, matrix, gap_open, gap_extend)
    q_codes, q_text = encode(query, alphabet, "query", 0)
    s_codes, s_text = encode(subject, alphabet, "subject", 1)
    for name, codes in (("query", q_codes), ("subject", s_codes)):
        if codes.shape[0] == 0:
            raise EmptyInputError(f"the {name} has no residues; give at least one")
    dev = resolve_device(device)
    if resolve_backend(backend, dev) == "cpu":
        dev = torch.device("cpu")
    r = local_topk_codes(
        torch.from_numpy(q_codes).to(dev),
        torch.from_numpy(s_codes).to(dev),
        scoring.matrix,
        scoring.gap_open,
        scoring.gap_extend,
        k=k,
        min_score=min_score,
        backend=backend,
        budget=budget,
        plan=plan,
    )
    spans = torch.stack([r.query_start, r.query_end, r.subject_start, r.subject_end]).tolist()
    qa, qb, sa, sb = spans
    rows = rows_from_ops(
        r.ops.numpy(), r.n_ops.numpy(), [q_text[x:y] for x, y in zip(qa, qb)],
        [s_text[x:y] for x, y in zip(sa, sb)],
    )  # fmt: skip
    return [
        LocalHit(score, (a, b), (c, d), row)
        for score, a, b, c, d, row in zip(r.score.tolist(), qa, qb, sa, sb, rows)
    ]
