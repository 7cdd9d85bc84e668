"""Shared k-mer counts and k-mer distances: the public functions and the tensor dispatchers."""

from __future__ import annotations

import numbers

import numpy as np
import torch

from torchmsa.alphabet import DNA, PROTEIN, Alphabet, detect_seqtype
from torchmsa.config import ExecutionPolicy, MemoryBudget
from torchmsa.constants import NOT_COUNTED
from torchmsa.cpu import kmer as cpu_kmer
from torchmsa.errors import AlphabetError, ArgumentError
from torchmsa.ops.backend import resolve_backend, resolve_device
from torchmsa.ops.kmer_stream import full_counts
from torchmsa.sequences import SequenceBatch, as_records

__all__ = [
    "REDUCTIONS",
    "reduced_map",
    "kmer_ids",
    "shared_counts",
    "pair_counts",
    "shared_kmer_counts",
    "kmer_distances",
    "kmer_distance_matrix",
]

# reduced alphabet name -> the alphabet whose `reduced` groups it uses (RNA reads as DNA)
REDUCTIONS = {"dayhoff6": PROTEIN, "acgt": DNA}


def reduced_map(alphabet: Alphabet) -> torch.Tensor:
    """``uint8 [A + 1]``: each code's group in ``alphabet``'s reduced alphabet, 255 for the
    residues that are not counted and for the gap code."""
    return torch.tensor(alphabet.reduced + (NOT_COUNTED,), dtype=torch.uint8)


def _triton():
    from torchmsa._triton import kmer as triton_kmer

    return triton_kmer


def kmer_ids(codes, lengths, reduced, k: int, backend: str = "auto"):
    """Sorted k-mer id lists ``(ids int32 [N, W], n int32 [N])`` on the device of ``codes``;
    see ``cpu/kmer.py``."""
    if resolve_backend(backend, codes.device) == "triton":
        return _triton().kmer_ids(codes, lengths, reduced, k)
    ids, n = cpu_kmer.kmer_ids(codes, lengths, reduced, k)
    return ids.to(codes.device), n.to(codes.device)


def shared_counts(
    ids_a,
    len_a,
    ids_b=None,
    len_b=None,
    backend: str = "auto",
    method: str | None = None,
    *,
    policy: ExecutionPolicy | None = None,
    budget: MemoryBudget | int | None = None,
) -> torch.Tensor:
    """Shared counts ``int32 [Na, Nb]`` of sorted id lists (all pairs of a when b is None), on
    the device of ``ids_a``.

    The Triton backend streams tiles (``torchmsa/ops/kmer_stream.py``; ``method`` picks
    ``"matrix"`` or ``"lists"``, by default ``policy.kmer_method``) and raises ResourceError
    when the whole matrix does not fit ``budget`` (default: ``MemoryBudget()``).
    """
    if resolve_backend(backend, ids_a.device) == "triton":
        return full_counts(
            ids_a, len_a, ids_b, len_b, backend="triton", method=method, budget=budget,
            policy=policy,
        )  # fmt: skip
    return cpu_kmer.shared_counts(ids_a, len_a, ids_b, len_b).to(ids_a.device)


def pair_counts(ids_a, len_a, ids_b, len_b, p, q, backend: str = "auto") -> torch.Tensor:
    """Shared counts ``int32 [P]`` of the pairs ``(a[p[t]], b[q[t]])``, on the device of
    ``ids_a``."""
    if resolve_backend(backend, ids_a.device) == "triton":
        return _triton().pair_counts(ids_a, len_a, ids_b, len_b, p, q)
    return cpu_kmer.pair_counts(ids_a, len_a, ids_b, len_b, p, q).to(ids_a.device)


def _check_k(k, base: int) -> int:
    if isinstance(k, bool) or not isinstance(k, numbers.Integral) or k < 1 or base**k >= 2**31 - 1:
        raise ArgumentError(
            f"Invalid value for `k` argument: {k!r}; use an integer with 1 <= k and "
            f"{base} ** k < 2**31 - 1 (k <= 11 for proteins, k <= 15 for DNA/RNA)"
        )
    return int(k)


def _batches(seqs_a, seqs_b, alphabet: str):
    """Encode both inputs with one alphabet; a SequenceBatch keeps its own codes."""
    inputs = [
        s if s is None or isinstance(s, SequenceBatch) else as_records(s) for s in (seqs_a, seqs_b)
    ]
    given = [s.alphabet for s in inputs if isinstance(s, SequenceBatch)]
    if alphabet == "acgt":
        nucleotide = True
    elif given:
        nucleotide = given[0].is_nucleotide
    else:
        nucleotide = detect_seqtype(
            [r.seq for s in inputs if s is not None for r in s]
        ).is_nucleotide
    for alph in given:
        if alph.is_nucleotide != nucleotide:
            raise AlphabetError(
                f"cannot count k-mers of {alph.name} sequences together with "
                f"{'nucleotide' if nucleotide else 'protein'} ones"
                + ("; use alphabet='dayhoff6' for proteins" if alphabet == "acgt" else "")
            )
    seqtype = DNA if nucleotide else PROTEIN
    batches = [
        s if s is None or isinstance(s, SequenceBatch) else SequenceBatch.from_input(s, seqtype)
        for s in inputs
    ]
    return batches[0], batches[1], seqtype


def shared_kmer_counts(
    seqs_a,
    seqs_b=None,
    *,
    k: int = 6,
    alphabet: str = "dayhoff6",
    device="auto",
    backend: str = "auto",
    policy: ExecutionPolicy | None = None,
    budget: MemoryBudget | int | None = None,
) -> torch.Tensor:
    """Shared k-mer counts of every pair of sequences.

    ``counts[p, q]`` is the sum over k-mers of ``min(count in a[p], count in b[q])``. k-mers are
    read on a reduced alphabet, and a k-mer holding a residue outside it is not counted:

    * ``"dayhoff6"``: proteins are grouped as ``AGPST | C | DENQ | FWY | HKR | ILMV``
      (``B Z J X U O *`` are not counted); sequences detected as DNA/RNA (or a DNA/RNA
      :class:`~torchmsa.sequences.SequenceBatch`) use the ``"acgt"`` reduction instead;
    * ``"acgt"``: the sequences are read as DNA/RNA: ``A C G T``, ``U`` counting as ``T``;
      ``N`` and the other ambiguity codes are not counted.

    To count protein sequences that look like DNA (only ``A C G T U N`` letters), pass a
    ``SequenceBatch.from_input(seqs, seqtype="protein")``.

    Gap characters are removed before counting (as everywhere in torchmsa), so a k-mer may span
    a removed gap.

    Arguments:
        seqs_a: the sequences: anything ``SequenceBatch.from_input`` accepts, or a
            :class:`~torchmsa.sequences.SequenceBatch`.
        seqs_b: a second set, or ``None`` for all pairs within ``seqs_a``.
        k: k-mer length.
        alphabet: ``"dayhoff6"`` or ``"acgt"``.
        device: where the result goes: ``"auto"``, ``"cpu"``, ``"cuda"``, ``"cuda:N"``.
        backend: ``"auto"`` (Triton on a CUDA ``device``, else the CPU), ``"cpu"`` (numba;
            the result is copied to ``device``) or ``"triton"`` (on CPU tensors only in
            Triton's interpreter, ``TRITON_INTERPRET=1``).
        policy: the :class:`~torchmsa.config.ExecutionPolicy` (its ``kmer_method`` picks the
            Triton formulation; every choice gives the same counts).
        budget: the memory the Triton backend may use (bytes or a
            :class:`~torchmsa.config.MemoryBudget`; ``None``: the default one).

    Returns:
        ``torch.int32 [Na, Nb]`` (``[Na, Na]`` when ``seqs_b`` is ``None``; its diagonal is
        each sequence's number of counted k-mers).

    Raises:
        ResourceError: with the Triton backend, the ``[Na, Nb]`` matrix does not fit in
            device memory (``torchmsa.ops.kmer_stream.count_tiles`` streams it instead).

    K and R share a Dayhoff group, L and I too; W and K do not:

    >>> shared_kmer_counts(["ACDEFGHIK", "ACDEFGHIR", "ACDEFGHLW"], k=3, device="cpu").tolist()
    [[7, 7, 6], [7, 7, 6], [6, 6, 7]]
    """
    if alphabet not in REDUCTIONS:
        raise ArgumentError(
            f"Invalid value for `alphabet` argument: {alphabet!r}; use 'dayhoff6' (proteins; "
            f"DNA/RNA input falls back to 'acgt') or 'acgt' (DNA/RNA)"
        )
    dev = resolve_device(device)
    impl = resolve_backend(backend, dev)
    batch_a, batch_b, seqtype = _batches(seqs_a, seqs_b, alphabet)
    k = _check_k(k, seqtype.reduced_size)
    reduced = reduced_map(seqtype)
    work = dev if impl == "triton" else torch.device("cpu")
    ids_a, n_a = kmer_ids(batch_a.codes.to(work), batch_a.lengths.to(work), reduced, k, impl)
    if batch_b is None:
        counts = shared_counts(ids_a, n_a, backend=impl, policy=policy, budget=budget)
    else:
        ids_b, n_b = kmer_ids(batch_b.codes.to(work), batch_b.lengths.to(work), reduced, k, impl)
        counts = shared_counts(ids_a, n_a, ids_b, n_b, impl, policy=policy, budget=budget)
    return counts.to(dev)


def _as_tensor(x, name: str) -> torch.Tensor:
    t = x if isinstance(x, torch.Tensor) else torch.as_tensor(np.asarray(x))
    if t.is_floating_point() or t.is_complex():
        raise ArgumentError(f"`{name}` must hold integer counts; got dtype {t.dtype}")
    return t


def kmer_distances(counts, self_a, self_b=None) -> torch.Tensor:
    """k-mer distances from shared counts, normalised by the smaller self-count.

    With ``c`` the shared count of sequences a and b and ``s_a``, ``s_b`` their self-counts
    (the number of counted k-mers in each, the diagonal of all-pairs counts)::

        d(a, b) = 1 - c / min(s_a, s_b)     when min(s_a, s_b) > 0
        d(a, b) = 1                          when either has no k-mer (shorter than k, or no
                                             stretch of k counted residues)

    so ``0 <= d <= 1`` (``c <= min(s_a, s_b)``), never NaN, and a fragment of a longer
    sequence is at distance 0 from it. This is the core of MAFFT's 6-mer distance
    (``disttbfast``: ``2 * (1 - c / min(s_a, s_b)) * lenfac``, and 2 when ``min`` is 0),
    without its factor 2 and without its length factor
    ``lenfac = 1 / (0.1 * shorter / longer + 10000 / (longer + 10000) + 0.01)`` (proteins),
    which is within about 10% of 1. A sequence without k-mers is at distance 1 from itself
    too: the diagonal is not special-cased here (:func:`kmer_distance_matrix` zeroes it, and
    ``build_tree`` ignores it).

    Arguments:
        counts: ``int [Na, Nb]`` shared counts (:func:`shared_kmer_counts`).
        self_a: ``int [Na]`` self-counts of the first set.
        self_b: ``int [Nb]`` self-counts of the second set; ``None`` means ``self_a``.

    Returns:
        ``torch.float64 [Na, Nb]`` on the device of ``counts``.
    """
    counts = _as_tensor(counts, "counts")
    self_a = _as_tensor(self_a, "self_a").to(counts.device)
    self_b = self_a if self_b is None else _as_tensor(self_b, "self_b").to(counts.device)
    if counts.ndim != 2 or self_a.shape != counts.shape[:1] or self_b.shape != counts.shape[1:]:
        raise ArgumentError(
            f"`counts` must be [Na, Nb] with `self_a` [Na] and `self_b` [Nb]; got "
            f"{tuple(counts.shape)}, {tuple(self_a.shape)} and {tuple(self_b.shape)}"
        )
    smaller = torch.minimum(self_a[:, None], self_b[None, :]).to(torch.float64)
    frac = counts.to(torch.float64) / smaller.clamp(min=1)
    return torch.where(smaller > 0, 1.0 - frac, torch.ones_like(frac))


def kmer_distance_matrix(
    seqs, *, k: int = 6, alphabet: str = "dayhoff6", device="auto", backend: str = "auto"
) -> torch.Tensor:
    """All-pairs :func:`kmer_distances` of ``seqs`` with a zero diagonal.

    Arguments:
        seqs, k, alphabet, device, backend: as for :func:`shared_kmer_counts`.

    Returns:
        ``torch.float64 [N, N]``, symmetric, ready for ``torchmsa.tree.build_tree``.
    """
    counts = shared_kmer_counts(seqs, k=k, alphabet=alphabet, device=device, backend=backend)
    dist = kmer_distances(counts, counts.diagonal())
    dist.fill_diagonal_(0.0)
    return dist
