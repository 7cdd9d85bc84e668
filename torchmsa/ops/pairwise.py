"""Pairwise alignment: ``pairwise_align`` on strings, and beneath it the tensor API
(``encode_sequences``, ``pairwise_scores``, ``pairwise_traceback``) and the batched dispatchers
(``pairwise_score_codes``, ``pairwise_align_codes``).

Strings cost Python work only where a ``str`` is read or made: the sequences are encoded in one
pass over their joined text (``alphabet.encode_batch``) and the gapped rows of all pairs are
built at once from the ops (:func:`rows_from_ops`). The tensor API has no Python object per pair.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from itertools import repeat
from typing import NamedTuple

import numpy as np
import torch

from torchmsa import constants
from torchmsa.alphabet import (
    Alphabet,
    detect_seqtype,
    detect_texts,
    encode_batch,
    encode_texts,
    get_alphabet,
    join_texts,
)
from torchmsa.config import MemoryBudget
from torchmsa.cpu import dp as cpu_dp
from torchmsa.errors import ArgumentError
from torchmsa.ops import global_strips
from torchmsa.ops.backend import budget_bytes, resolve_backend, resolve_device
from torchmsa.scoring import Scoring, get_scoring

__all__ = [
    "PairwiseAlignment",
    "PairwiseScores",
    "PairwiseTraceback",
    "EncodedSequences",
    "pairwise_align",
    "pairwise_scores",
    "pairwise_traceback",
    "encode_sequences",
    "pairwise_score_codes",
    "pairwise_align_codes",
    "rows_from_ops",
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


# ``PairwiseAlignment._make`` without its Python-level length check (the tuples zipped here
# always hold four fields): 15% of building 10^4 results
_make_result = partial(tuple.__new__, PairwiseAlignment)


class PairwiseScores(NamedTuple):
    """Scores of a batch of pairs (:func:`pairwise_scores`), tensors on the codes' device.

    Attributes:
        score: ``int32 [P]`` alignment scores, in matrix units.
        end_a: ``int32 [P]``, where each alignment ends in ``a`` (exclusive): the aligned
            region's end in local mode, ``len_a`` otherwise (as ``PairwiseAlignment.a_range``).
        end_b: the same for ``b``.
    """

    score: torch.Tensor
    end_a: torch.Tensor
    end_b: torch.Tensor


class PairwiseTraceback(NamedTuple):
    """Alignments of a batch of pairs (:func:`pairwise_traceback`), tensors on the codes' device.

    Attributes:
        score: ``int32 [P]`` alignment scores, in matrix units.
        start_a, end_a: ``int32 [P]``: the alignment covers ``a[start_a:end_a]`` (all of ``a`` in
            global and semiglobal mode), as ``PairwiseAlignment.a_range``.
        start_b, end_b: the same for ``b``.
        n_ops: ``int32 [P]``, the number of ops (columns) of each alignment.
        ops: ``uint8 [P, La + Lb]``: pair ``p``'s ops in order in ``ops[p, :n_ops[p]]``, zero
            after; ``0`` pairs a residue of ``a`` with one of ``b``, ``1`` a residue of ``a`` with
            a gap, ``2`` a gap with a residue of ``b`` (:func:`rows_from_ops` makes rows of them).
    """

    score: torch.Tensor
    start_a: torch.Tensor
    end_a: torch.Tensor
    start_b: torch.Tensor
    end_b: torch.Tensor
    n_ops: torch.Tensor
    ops: torch.Tensor


class EncodedSequences(NamedTuple):
    """Sequences as code tensors (:func:`encode_sequences`).

    Attributes:
        codes: ``uint8 [N, L]`` residue codes (:mod:`torchmsa.alphabet`), ``L`` the longest
            residue count (at least 1), padded with the alphabet's gap code.
        lengths: ``int32 [N]`` residue counts (gap characters removed).
        seqtype: the alphabet's name, ``"protein"``, ``"dna"`` or ``"rna"``: pass it on as the
            ``seqtype=`` of the other side's encoding and of the alignment call.
    """

    codes: torch.Tensor
    lengths: torch.Tensor
    seqtype: str


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
    sizes=None,
):
    """Batched scores on tensors: ``int32 [P, 3]`` (score, end_i, end_j); see ``cpu/dp.py``.
    ``budget``: the memory the Triton launches may plan for (bytes or a MemoryBudget);
    ``sizes``: ``int64 [2, P]``, the lengths on the host where the caller has them (the Triton
    launches then need not wait for the device to read them)."""
    args = (codes_a, len_a, codes_b, len_b, matrix, gap_open, gap_extend, mode)
    if resolve_backend(backend, codes_a.device) == "triton":
        from torchmsa._triton import dp as triton_dp

        available = budget_bytes(budget, codes_a.device)
        long = _long_global(len_a, len_b, mode, sizes=sizes)
        if long is None:
            return triton_dp.pairwise_score(*args, budget=available, sizes=sizes)
        return _scores_with_long_global(args, long, triton_dp.pairwise_score, available)
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
    wide: int | None = None,
    sizes=None,
):
    """Batched alignments on tensors: ``(info int32 [P, 6], ops uint8 [P, La+Lb])``;
    ``budget`` and ``sizes`` as :func:`pairwise_score_codes`; on the CPU, pairs whose full DP
    matrices would not fit in it, or of more than ``wide`` cells, are traced back in linear
    space (``cpu/dp_linear.py``, same results)."""
    args = (codes_a, len_a, codes_b, len_b, matrix, gap_open, gap_extend, mode)
    if resolve_backend(backend, codes_a.device) == "triton":
        from torchmsa._triton import dp as triton_dp

        available = budget_bytes(budget, codes_a.device)
        long = _long_global(len_a, len_b, mode, sizes=sizes)
        if long is None:
            return triton_dp.pairwise_align(*args, budget=available, sizes=sizes)
        return _with_long_global(args, long, triton_dp.pairwise_align, available)
    cpu = torch.device("cpu")
    return cpu_dp.pairwise_align(*args, budget=budget_bytes(budget, cpu), wide=wide)


def _long_global(len_a, len_b, mode, sms: int | None = None, sizes=None) -> np.ndarray | None:
    """Indices of the global pairs that go through the strips on a GPU (decision 0060), or
    ``None``: pairs of at least ``LONG_GLOBAL_CELLS`` cells, while they are few enough
    (``LONG_GLOBAL_PAIRS`` per multiprocessor) that the batched kernel, one block a pair,
    would leave most of the GPU idle (``sms`` multiprocessors; ``None``: the device's, 4
    off a GPU, as under Triton's interpreter); ``sizes``: the lengths on the host, if known."""
    if mode != constants.GLOBAL:
        return None
    if sizes is not None:  # on the host: no wait for the device
        n, m = np.asarray(sizes, np.int64).reshape(2, -1)
        long = np.flatnonzero(n * m >= global_strips.LONG_GLOBAL_CELLS)
    else:
        cells = len_a.to(torch.int64) * len_b.to(torch.int64)
        long = torch.nonzero(cells >= global_strips.LONG_GLOBAL_CELLS).flatten().cpu().numpy()
    if not long.size:
        return None
    if sms is None:
        dev = len_a.device
        sms = (
            torch.cuda.get_device_properties(dev).multi_processor_count if dev.type == "cuda" else 4
        )
    return None if long.size > global_strips.LONG_GLOBAL_PAIRS * sms else long


def _scores_with_long_global(args, long: np.ndarray, batched, available: int):
    """``pairwise_score_codes`` of the pairs in ``args``: those in ``long`` one by one in
    strips (the forward pass alone), the others through ``batched``."""
    ca, la, cb, lb, matrix, go, ge, mode = args
    out = torch.zeros((ca.shape[0], 3), dtype=torch.int32, device=ca.device)
    rest = torch.from_numpy(np.setdiff1d(np.arange(out.shape[0]), long)).to(out.device)
    if rest.numel():
        out[rest] = batched(ca[rest], la[rest], cb[rest], lb[rest], *args[4:], budget=available)
    mat_np = np.ascontiguousarray(matrix.cpu().numpy(), dtype=np.int32)
    for p in long.tolist():
        n, m = int(la[p]), int(lb[p])
        score, _ = global_strips.global_pair(
            ca[p, :n], cb[p, :m], mat_np, go, ge, available, traceback=False
        )
        out[p] = torch.tensor([score, n, m], dtype=torch.int32)
    return out


def _with_long_global(args, long: np.ndarray, batched, available: int):
    """``pairwise_align_codes`` of the pairs in ``args``: those in ``long`` one by one in
    strips, the others through ``batched``."""
    ca, la, cb, lb, matrix, go, ge, mode = args
    dev, P = ca.device, ca.shape[0]
    width = ca.shape[1] + cb.shape[1]
    info = torch.zeros((P, 6), dtype=torch.int32, device=dev)
    ops = torch.zeros((P, max(1, width)), dtype=torch.uint8, device=dev)
    rest = np.setdiff1d(np.arange(P), long)
    if rest.size:
        r = torch.from_numpy(rest).to(dev)
        r_info, r_ops = batched(ca[r], la[r], cb[r], lb[r], matrix, go, ge, mode, budget=available)
        info[r] = r_info
        ops[r, : r_ops.shape[1]] = r_ops
    mat_np = np.ascontiguousarray(matrix.cpu().numpy(), dtype=np.int32)
    for p in long.tolist():
        n, m = int(la[p]), int(lb[p])
        score, path = global_strips.global_pair(ca[p, :n], cb[p, :m], mat_np, go, ge, available)
        info[p] = torch.tensor([score, path.shape[0], 0, 0, n, m], dtype=torch.int32)
        ops[p, : path.shape[0]] = torch.from_numpy(path).to(dev)
    return info, ops[:, :width]


def rows_from_ops(
    ops, n_ops, a: list[str], b: list[str], start_a=None, start_b=None
) -> list[tuple[str, str]]:
    """Gapped rows of many alignments at once (``tests/oracles.py``'s ``ops_to_rows`` is the
    pair-by-pair reference).

    Arguments:
        ops: ``uint8 [P, W]`` (numpy, or a CPU tensor); pair ``p``'s ops are ``ops[p, :n_ops[p]]``.
        n_ops: ``[P]`` op counts.
        a, b: the pairs' residue texts, ASCII (as :func:`torchmsa.alphabet.encode` leaves them).
        start_a, start_b: ``[P]``, where each alignment starts in its texts (``None``: at 0).

    Returns:
        ``(row_a, row_b)`` for each pair.
    """
    P = len(a)
    texts, origins = [], []
    for side, starts in ((a, start_a), (b, start_b)):
        sizes = np.fromiter(map(len, side), np.int64, P)
        origin = np.cumsum(sizes) - sizes  # where each pair's text starts in the joined texts
        if starts is not None:
            origin += np.asarray(starts, dtype=np.int64).reshape(-1)
        texts.append("".join(side).encode("ascii"))
        origins.append(origin)
    return _rows(ops, n_ops, texts[0], origins[0], texts[1], origins[1])


ROWS_PER_THREAD = 1 << 18  # ops a thread of :func:`_rows` fills at least


def _rows(ops, n_ops, text_a: bytes, at_a, text_b: bytes, at_b) -> list[tuple[str, str]]:
    """:func:`rows_from_ops` on the residue texts as ASCII bytes: pair ``p``'s rows take
    letters from ``text_a[at_a[p]:]`` and ``text_b[at_b[p]:]``. Filled by up to numba's thread
    count of threads (pairs in contiguous ranges), the same rows for any count."""
    from numba import get_num_threads

    from torchmsa.cpu.pair_rows import fill_pair_rows

    ops = np.ascontiguousarray(np.asarray(ops, dtype=np.uint8))
    n_ops = np.asarray(n_ops, dtype=np.int64).reshape(-1)
    P = len(n_ops)
    bounds = np.zeros(P + 1, np.int64)  # pair p's rows are [bounds[p], bounds[p + 1])
    np.cumsum(n_ops, out=bounds[1:])
    total = int(bounds[-1])
    out_a, out_b = np.empty(total, np.uint8), np.empty(total, np.uint8)
    args = (ops, n_ops, bounds, np.frombuffer(text_a, np.uint8), np.asarray(at_a, np.int64))
    args += (np.frombuffer(text_b, np.uint8), np.asarray(at_b, np.int64), out_a, out_b)
    threads = max(1, min(get_num_threads(), total // ROWS_PER_THREAD))
    # contiguous ranges of about equal op counts
    cuts = np.searchsorted(bounds, np.arange(threads + 1) * (total / threads)).tolist()
    cuts[0], cuts[-1] = 0, P
    ranges = [(lo, hi) for lo, hi in zip(cuts[:-1], cuts[1:]) if hi > lo]
    if len(ranges) > 1:
        with ThreadPoolExecutor(len(ranges)) as pool:
            bad = list(pool.map(lambda r: fill_pair_rows(*args, r[0], r[1]), ranges))
    else:
        bad = [fill_pair_rows(*args, lo, hi) for lo, hi in ranges]
    wrong = [k for k in bad if k >= 0]
    if wrong:
        raise ValueError(f"pair {min(wrong)}'s ops use more residues than its texts hold")
    rows_a, rows_b = str(out_a.data, "ascii"), str(out_b.data, "ascii")
    ends = bounds.tolist()
    return [(rows_a[s:e], rows_b[s:e]) for s, e in zip(ends, ends[1:])]


def encode_sequences(
    seqs: list[str], *, seqtype: str | Alphabet = "auto", device="cpu"
) -> EncodedSequences:
    """Encode sequences into the tensors :func:`pairwise_scores` and :func:`pairwise_traceback`
    take, in one vectorised pass.

    Arguments:
        seqs: sequence texts (a list or tuple of ``str``). Gap characters ``-`` and ``.`` are
            removed; lower case letters get the code of their upper case form.
        seqtype: ``"auto"`` (detected from ``seqs``), ``"protein"``, ``"dna"`` or ``"rna"``.
            Both sides of a batch of pairs need one alphabet: encode the second side with the
            first one's ``seqtype``.
        device: where the tensors go: ``"cpu"``, ``"auto"``, ``"cuda"``, ``"cuda:N"`` or a
            ``torch.device``.

    Returns:
        An :class:`EncodedSequences` ``(codes, lengths, seqtype)``.

    Raises:
        InvalidCharacterError: for the first sequence holding a character its alphabet does not
            allow, naming it ``seqs[k]``, with the 1-based position and the character.
        ArgumentError: ``seqs`` is one string, or holds something that is not a string.

    >>> enc = encode_sequences(["ACDE", "a-c"], seqtype="protein")
    >>> enc.codes.tolist(), enc.lengths.tolist(), enc.seqtype
    ([[0, 4, 3, 6], [0, 4, 27, 27]], [4, 2], 'protein')
    """
    if isinstance(seqs, (str, bytes)):
        raise ArgumentError("`seqs` is one string; pass a list of sequences ([seq] for one)")
    seqs = list(seqs)  # an item not a string: named by the detection, else by the encoding
    auto = isinstance(seqtype, str) and seqtype.strip().lower() == "auto"
    alphabet = detect_seqtype(seqs) if auto else get_alphabet(seqtype)
    codes, lengths, _ = _encode(seqs, alphabet, "seqs")
    dev = resolve_device(device)
    return EncodedSequences(codes.to(dev), lengths.to(dev), alphabet.name)


class _ItemNames(Sequence):
    """``label[0]``, ``label[1]``, ...: the names errors give the items of a list argument,
    each made only when an error needs it (a list of 10,000 names took 1.7 ms, about half of
    what encoding the 10,000 sequences takes)."""

    def __init__(self, label: str, n: int):
        self.label, self.n = label, n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, k):
        if not 0 <= k < self.n:
            raise IndexError(k)
        return f"{self.label}[{k}]"


def _encode(seqs: list[str], alphabet: Alphabet, label: str):
    """``(uint8 [N, L >= 1] codes, int32 [N] lengths, residue texts)``; a bad sequence is named
    ``label[k]`` in the error, as the per-sequence ``encode`` names it."""
    codes, lengths, residues = encode_batch(seqs, alphabet, _ItemNames(label, len(seqs)))
    return _codes(codes, alphabet), torch.from_numpy(lengths), residues


def _codes(codes: np.ndarray, alphabet: Alphabet) -> torch.Tensor:
    """``codes`` as a tensor of at least one column: only empty sequences get one column of
    padding, as any batch has."""
    if codes.shape[1] == 0:
        codes = np.full((codes.shape[0], 1), alphabet.gap_code, np.uint8)
    return torch.from_numpy(codes)


def _check_mode(mode: str) -> None:
    if mode not in constants.MODES:
        raise ArgumentError(
            f"Invalid value for `mode` argument: {mode!r}; use 'global', 'local' or 'semiglobal'"
        )


def _setup(mode, seqtype, matrix, gap_open, gap_extend) -> Scoring:
    _check_mode(mode)
    if isinstance(seqtype, str) and seqtype.strip().lower() == "auto":
        raise ArgumentError(
            "Invalid value for `seqtype` argument: 'auto'; codes carry no letters to detect the "
            "alphabet from: pass 'protein', 'dna' or 'rna' (EncodedSequences.seqtype)"
        )
    return get_scoring(get_alphabet(seqtype), matrix, gap_open, gap_extend)


def _check_tensors(codes_a, len_a, codes_b, len_b, alphabet: Alphabet):
    """``([codes_a, len_a, codes_b, len_b], sizes)``: the inputs as ``uint8`` codes (at least
    one column) and ``int32`` lengths, once their types, shapes, devices and values are known
    to be fine, and the lengths on the host (``int64 [2, P]``): one copy from the device."""
    args = {"codes_a": codes_a, "len_a": len_a, "codes_b": codes_b, "len_b": len_b}
    for name, t in args.items():
        if not isinstance(t, torch.Tensor):
            raise ArgumentError(
                f"`{name}` is a {type(t).__name__}, not a torch.Tensor; make codes and lengths "
                f"with torchmsa.encode_sequences (or torch.as_tensor)"
            )
    dev = codes_a.device
    for side in "ab":
        codes, lengths = args[f"codes_{side}"], args[f"len_{side}"]
        if codes.dtype != torch.uint8 or codes.ndim != 2:
            raise ArgumentError(
                f"`codes_{side}` must be a uint8 [P, L] tensor of residue codes; got "
                f"{codes.dtype} {tuple(codes.shape)}"
            )
        integer = not (lengths.is_floating_point() or lengths.is_complex())
        if not integer or lengths.dtype == torch.bool or lengths.shape != codes.shape[:1]:
            raise ArgumentError(
                f"`len_{side}` must be an integer [P] tensor with P = {codes.shape[0]} (the rows "
                f"of `codes_{side}`); got {lengths.dtype} {tuple(lengths.shape)}"
            )
        for name, t in ((f"codes_{side}", codes), (f"len_{side}", lengths)):
            if t.device != dev:
                raise ArgumentError(
                    f"`{name}` is on {t.device} but `codes_a` on {dev}; put all four tensors on "
                    f"one device"
                )
    if codes_a.shape[0] != codes_b.shape[0]:
        raise ArgumentError(
            f"`codes_a` and `codes_b` hold {codes_a.shape[0]} and {codes_b.shape[0]} sequences; "
            f"pairs need equal counts"
        )
    # one copy to the host: whether each side holds a bad code inside a length, and the
    # lengths (what the launch planning reads anyway)
    flags = [_bad_codes(args[f"codes_{s}"], args[f"len_{s}"], alphabet) for s in "ab"]
    lengths = [args[f"len_{s}"].reshape(-1).to(torch.int64) for s in "ab"]
    host = torch.cat([torch.stack(flags).to(torch.int64), *lengths]).cpu().numpy()
    P = codes_a.shape[0]
    sizes = host[2:].reshape(2, P)
    for k, side in enumerate("ab"):
        codes = args[f"codes_{side}"]
        width = codes.shape[1]
        wrong = np.flatnonzero((sizes[k] < 0) | (sizes[k] > width))
        if wrong.size:
            p = int(wrong[0])
            raise ArgumentError(
                f"`len_{side}[{p}]` is {int(sizes[k, p])} but must lie in 0..{width} (the width "
                f"of `codes_{side}`); pass each sequence's residue count"
            )
        if host[k]:
            bad = _bad_codes(codes, args[f"len_{side}"], alphabet, reduce=False)
            p, i = bad.nonzero()[0].tolist()
            raise ArgumentError(
                f"`codes_{side}[{p}, {i}]` is {int(codes[p, i])}, inside `len_{side}[{p}]`, but "
                f"the {alphabet.name} alphabet's residue codes are 0..{alphabet.size - 1} "
                f"({alphabet.gap_code}, the gap code, only pads past a length); encode with "
                f"torchmsa.encode_sequences, or pass the seqtype the codes were made for"
            )
    out = []
    for side in "ab":
        codes, lengths = args[f"codes_{side}"], args[f"len_{side}"]
        if codes.shape[1] == 0:  # the kernels read at least one column
            codes = torch.full(
                (codes.shape[0], 1), alphabet.gap_code, dtype=torch.uint8, device=dev
            )
        out += [codes, lengths.to(torch.int32)]
    return out, sizes


def _bad_codes(codes: torch.Tensor, lengths: torch.Tensor, alphabet: Alphabet, reduce=True):
    """Where ``codes`` holds a code past the alphabet's residues inside its row's length:
    whether anywhere (a 0-d tensor), or ``bool [P, L]`` without ``reduce``."""
    inside = torch.arange(codes.shape[1], device=codes.device) < lengths.reshape(-1, 1)
    bad = inside & (codes >= alphabet.size)
    return bad.any() if reduce else bad


def pairwise_scores(
    codes_a: torch.Tensor,
    len_a: torch.Tensor,
    codes_b: torch.Tensor,
    len_b: torch.Tensor,
    *,
    mode: str = "global",
    matrix=None,
    gap_open: int | None = None,
    gap_extend: int | None = None,
    seqtype: str | Alphabet = "protein",
    backend: str = "auto",
    budget: MemoryBudget | int | None = None,
) -> PairwiseScores:
    """Scores of many pairs given as code tensors, with no Python object per pair.

    Pair ``p`` is ``(codes_a[p, :len_a[p]], codes_b[p, :len_b[p]])``. The results are those of
    :func:`pairwise_align` with ``traceback=False`` on the same sequences, on every backend.

    Arguments:
        codes_a, codes_b: ``uint8 [P, La]`` and ``uint8 [P, Lb]`` residue codes of ``seqtype``'s
            alphabet (:func:`encode_sequences` makes them); codes past a length are not read.
        len_a, len_b: ``[P]`` integer tensors of residue counts, on the codes' device.
        mode, matrix, gap_open, gap_extend, backend: as for :func:`pairwise_align`; the backend
            follows the codes' device (``"auto"``: Triton on CUDA, numba on the CPU).
        seqtype: the codes' alphabet, ``"protein"``, ``"dna"`` or ``"rna"`` (not ``"auto"``:
            codes carry no letters to detect it from).
        budget: the memory the Triton launches may plan for (bytes or a ``MemoryBudget``;
            ``None``: the default ``MemoryBudget()``).

    Returns:
        A :class:`PairwiseScores` ``(score, end_a, end_b)`` of ``int32 [P]`` tensors on the
        codes' device.

    Raises:
        ArgumentError: an input's type, dtype, shape or device is wrong, a length lies outside
            ``0 ..`` its codes' width, or a code inside a length is not a residue code of the
            alphabet (the message names the first such index); an argument is invalid.
        ScoringError: as for :func:`pairwise_align`.

    >>> a = encode_sequences(["HEAGAWGHEE"], seqtype="protein")
    >>> b = encode_sequences(["PAWHEAE"], seqtype="protein")
    >>> r = pairwise_scores(a.codes, a.lengths, b.codes, b.lengths, mode="local")
    >>> r.score.tolist(), r.end_a.tolist(), r.end_b.tolist()
    ([18], [9], [5])
    """
    scoring = _setup(mode, seqtype, matrix, gap_open, gap_extend)
    tensors, sizes = _check_tensors(codes_a, len_a, codes_b, len_b, scoring.alphabet)
    return _scores(*tensors, scoring, mode, backend, budget, sizes)


def pairwise_traceback(
    codes_a: torch.Tensor,
    len_a: torch.Tensor,
    codes_b: torch.Tensor,
    len_b: torch.Tensor,
    *,
    mode: str = "global",
    matrix=None,
    gap_open: int | None = None,
    gap_extend: int | None = None,
    seqtype: str | Alphabet = "protein",
    backend: str = "auto",
    budget: MemoryBudget | int | None = None,
) -> PairwiseTraceback:
    """Alignments (scores, ranges and traceback ops) of many pairs given as code tensors.

    Arguments, checks and results as :func:`pairwise_scores`; the alignments are those of
    :func:`pairwise_align` on the same sequences (:func:`rows_from_ops` turns the ops and the
    residue texts into its gapped rows). On the CPU, pairs whose full DP matrices would not fit
    in ``budget`` are traced back in linear space, with the same results (a pair that does not
    fit even so raises :class:`~torchmsa.errors.ResourceError`).

    Returns:
        A :class:`PairwiseTraceback` ``(score, start_a, end_a, start_b, end_b, n_ops, ops)`` on
        the codes' device, ``ops`` of width ``La + Lb``.

    >>> a = encode_sequences(["HEAGAWGHEE"], seqtype="protein")
    >>> b = encode_sequences(["PAWHEAE"], seqtype="protein")
    >>> r = pairwise_traceback(a.codes, a.lengths, b.codes, b.lengths, mode="local")
    >>> r.score.tolist(), r.start_a.tolist(), r.n_ops.tolist(), r.ops[0, :5].tolist()
    ([18], [4], [5], [0, 0, 1, 0, 0])
    """
    scoring = _setup(mode, seqtype, matrix, gap_open, gap_extend)
    tensors, sizes = _check_tensors(codes_a, len_a, codes_b, len_b, scoring.alphabet)
    out = _traceback(*tensors, scoring, mode, backend, budget, sizes)
    return out._replace(ops=out.ops[:, : codes_a.shape[1] + codes_b.shape[1]])


def _args(ca, la, cb, lb, scoring: Scoring, mode: str) -> tuple:
    # the matrix stays on the host: the launchers read its range there and copy it to the
    # device without waiting for the device
    mat = torch.from_numpy(scoring.matrix.copy())
    return (ca, la, cb, lb, mat, scoring.gap_open, scoring.gap_extend, constants.MODES[mode])


def _scores(ca, la, cb, lb, scoring, mode, backend, budget, sizes) -> PairwiseScores:
    args = _args(ca, la, cb, lb, scoring, mode)
    out = pairwise_score_codes(*args, backend=backend, budget=budget, sizes=sizes)
    score, end_a, end_b = out.to(ca.device).unbind(1)
    if mode != "local":
        end_a, end_b = la.clone(), lb.clone()
    return PairwiseScores(score, end_a, end_b)


def _traceback(ca, la, cb, lb, scoring, mode, backend, budget, sizes) -> PairwiseTraceback:
    args = _args(ca, la, cb, lb, scoring, mode)
    info, ops = pairwise_align_codes(*args, backend=backend, budget=budget, sizes=sizes)
    score, n_ops, start_a, start_b, end_a, end_b = info.to(ca.device).unbind(1)
    if mode != "local":
        end_a, end_b = la.clone(), lb.clone()
    return PairwiseTraceback(score, start_a, end_a, start_b, end_b, n_ops, ops.to(ca.device))


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
    budget: MemoryBudget | int | None = None,
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
        budget: the memory the call may plan for (bytes or a ``MemoryBudget``; ``None``: the
            default ``MemoryBudget()``). On the CPU a pair whose full DP matrices would not fit
            is traced back in linear space, with the same result.

    Returns:
        A :class:`PairwiseAlignment`, or a list of them for list input.

    Ties between equally good alignments are broken by the rule in ``torchmsa/cpu/dp.py``,
    identically on every backend. For many pairs, :func:`encode_sequences` with
    :func:`pairwise_scores` or :func:`pairwise_traceback` gives the same results as tensors,
    without a Python object per pair.

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
    _check_mode(mode)
    if not seqs_a:
        return []
    names_a, names_b = _ItemNames("a", len(seqs_a)), _ItemNames("b", len(seqs_b))
    text_a, text_b = join_texts(seqs_a, names_a), join_texts(seqs_b, names_b)
    alphabet = detect_texts(text_a, text_b) if seqtype == "auto" else get_alphabet(seqtype)
    scoring = get_scoring(alphabet, matrix, gap_open, gap_extend)
    dev = resolve_device(device)
    ea = encode_texts(seqs_a, alphabet, names_a, text_a, keep_raw=traceback)
    eb = encode_texts(seqs_b, alphabet, names_b, text_b, keep_raw=traceback)
    tensors = []
    for e in (ea, eb):
        tensors += [_codes(e.codes, alphabet).to(dev), torch.from_numpy(e.lengths).to(dev)]
    sizes = np.stack([ea.lengths, eb.lengths]).astype(np.int64)
    if not traceback:
        r = _scores(*tensors, scoring, mode, backend, budget, sizes)
        score, end_a, end_b = torch.stack(tuple(r)).tolist()
        start = [None if mode == "local" else 0] * len(score)
        ranges_a, ranges_b = zip(start, end_a), zip(start, end_b)
        no_rows = repeat(None)  # score only: no gapped rows
        results = list(map(_make_result, zip(score, no_rows, ranges_a, ranges_b)))
    else:
        r = _traceback(*tensors, scoring, mode, backend, budget, sizes)
        info = torch.stack(r[:6]).cpu().numpy()  # [6, P]
        origin_a = np.arange(len(seqs_a), dtype=np.int64) * ea.width + info[1]
        origin_b = np.arange(len(seqs_b), dtype=np.int64) * eb.width + info[3]
        rows = _rows(r.ops.cpu().numpy(), info[5], ea.raw, origin_a, eb.raw, origin_b)
        score, start_a, end_a, start_b, end_b, _ = info.tolist()
        ranges_a, ranges_b = zip(start_a, end_a), zip(start_b, end_b)
        results = list(map(_make_result, zip(score, rows, ranges_a, ranges_b)))
    return results[0] if single else results
