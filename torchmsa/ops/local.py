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

from torchmsa.alphabet import GAP_CHARS, encode, get_alphabet, resolve_alphabet
from torchmsa.config import MemoryBudget
from torchmsa.errors import ArgumentError, EmptyInputError, InvalidCharacterError
from torchmsa.ops.backend import budget_bytes, resolve_backend, resolve_device
from torchmsa.ops.local_hits import LocalHits, Tracer, topk_one, topk_over_ranks
from torchmsa.ops.local_strips import W_MAX, WARMUP_COLUMNS, LocalPlan
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
    ranks=None,
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
        ranks: ``None``, or the ranks that share the subject (an object with ``rank``,
            ``size`` and ``all_gather(obj)``, such as a ``torchmsa.distributed.Session``):
            every rank calls with the same arguments (codes on its own device) and gets the
            same hits (``torchmsa/ops/local_hits.py``).

    Returns:
        :class:`LocalHits`, best first.

    Raises:
        ArgumentError: an argument is invalid, or a code is not below the matrix's size.
        EmptyInputError: ``query`` or ``subject`` is empty.
        ResourceError: the checkpoints (or a hit's traceback rectangle) do not fit the budget.
    """
    return _topk_codes(
        query, subject, matrix, gap_open, gap_extend, k, min_score, backend, budget, plan, ranks
    )


def _topk_codes(
    query, subject, matrix, gap_open, gap_extend, k, min_score, backend, budget, plan, ranks,
    whole=None,
) -> LocalHits:  # fmt: skip
    """:func:`local_topk_codes`; ``whole``: with ``ranks``, where ``subject`` holds only the
    codes this rank's strips reach, a function giving all of them (rank 0 alone may need
    them)."""
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
    tracer = Tracer(q, s, mat_np, go, ge, budget_bytes(budget, torch.device("cpu")), be)
    if ranks is not None and ranks.size > 1:
        return topk_over_ranks(ranks, tracer, k, min_score, plan, budget, whole)
    return topk_one(tracer, k, min_score, plan, budget_bytes(budget, work))


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
    ranks=None,
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
        ranks: ``None``, or a ``torchmsa.distributed.Session`` whose ranks share the subject's
            strips (each on its own GPU; ``device="auto"`` takes the rank's): every rank calls
            with the same arguments and gets the same hits, those of one process.

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
    auto_device = isinstance(device, str) and device == "auto"
    dev = ranks.device if ranks is not None and auto_device else resolve_device(device)
    if resolve_backend(backend, dev) == "cpu":
        dev = torch.device("cpu")
    whole = None
    shared = ranks is not None and ranks.size > 1 and subject
    # a substring test per gap character, not set(subject): ~1 s of a 10^8 subject
    if shared and not any(g in subject for g in GAP_CHARS):
        s_dev, whole = _subject_share(subject, alphabet, ranks, plan or LocalPlan(), dev)
        s_text = subject
    else:
        s_codes, s_text = encode(subject, alphabet, "subject", 1)
        s_dev = torch.from_numpy(s_codes).to(dev)
    for name, size in (("query", q_codes.shape[0]), ("subject", s_dev.shape[0])):
        if size == 0:
            raise EmptyInputError(f"the {name} has no residues; give at least one")
    r = _topk_codes(
        torch.from_numpy(q_codes).to(dev), s_dev, scoring.matrix, scoring.gap_open,
        scoring.gap_extend, k, min_score, backend, budget, plan, ranks, whole,
    )  # fmt: skip
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


def _subject_share(subject: str, alphabet, ranks, plan: LocalPlan, device):
    """The subject's codes on ``device`` where this rank's strips (and their warm-up) can
    reach, zeros elsewhere, so that each rank encodes about ``1 / size`` of a long subject;
    the first invalid character of the whole subject is raised on every rank, as
    :func:`encode` names it. Returns the codes and a function that encodes them all (for rank
    0 when it runs the job alone). The subject holds no gap character."""
    m, size, r = len(subject), ranks.size, ranks.rank
    width = max(W_MAX, plan.strip_width or 0)
    margin = (3 + (1 if plan.warmup is None else plan.warmup)) * width + WARMUP_COLUMNS
    own_a, own_b = r * m // size, (r + 1) * m // size
    a, b = max(0, own_a - margin), min(m, own_b + margin)
    if m < 2 * size * width:  # fewer strips than ranks may be: every rank encodes it all
        a, b = 0, m
    try:  # the first invalid character of a slice, if any, is a real one
        part, bad = encode(subject[a:b], alphabet, "subject", 1)[0], None
    except InvalidCharacterError as exc:
        part, bad = None, a + exc.position - 1
    firsts = [x for x in ranks.all_gather(bad) if x is not None]
    if firsts:
        pos = min(firsts)  # the first of the whole subject: its slice's first too
        raise InvalidCharacterError("subject", 1, pos + 1, subject[pos], alphabet.name)
    codes = torch.zeros(m, dtype=torch.uint8, device=device)
    codes[a:b] = torch.from_numpy(part).to(device)

    def whole() -> torch.Tensor:
        return torch.from_numpy(encode(subject, alphabet, "subject", 1)[0]).to(device)

    return codes, whole
