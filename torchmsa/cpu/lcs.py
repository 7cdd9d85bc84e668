"""Longest-common-subsequence lengths of all pairs on the CPU (numba), the twin of
``triton_kernels/lcs.py``.

Bit-parallel LCS (Allison & Dix 1986, in Hyyro's form): sequence a is a bit vector ``V`` of
``len(a)`` bits, all ones at the start, and ``M[c]`` has bit p set where ``a[p] == c``. Each
residue c of b updates ``V = (V + (V & M[c])) | (V & ~M[c])`` with one multi-word addition whose
carries run from low words to high ones; at the end the LCS length is the number of zero bits
among the ``len(a)`` bits of V. Residues are equal when their codes are equal (so ``X`` matches
``X``); positions past a sequence's length are never read.

Words are 64 bits here and 32 bits in the Triton kernel; both give the same integers.
"""

from __future__ import annotations

import numba
import numpy as np
import torch
from numba import njit, prange

from torchmsa.errors import check_codes

__all__ = ["lcs_lengths", "lcs_masks", "bit_masks", "pair_lcs", "host_inputs"]


@njit(cache=True)
def bit_masks(codes, lengths, n_codes, n_words):
    # [N, n_codes, n_words]: bit p of word p // 64 set where a[p] == c
    out = np.zeros((codes.shape[0], n_codes, n_words), np.uint64)
    for s in range(codes.shape[0]):
        for p in range(lengths[s]):
            out[s, codes[s, p], p // 64] |= np.uint64(1) << np.uint64(p % 64)
    return out


@njit(cache=True, inline="always")
def _zeros(x):
    x = ~x
    c = 0
    while x:
        x &= x - np.uint64(1)
        c += 1
    return c


@njit(cache=True)
def pair_lcs(masks_a, len_a, b, len_b, v):
    n_words = (len_a + 63) // 64
    for w in range(n_words):
        v[w] = ~np.uint64(0)
    for q in range(len_b):
        m_row = masks_a[b[q]]
        carry = np.uint64(0)
        for w in range(n_words):
            x = v[w]
            u = x & m_row[w]
            s = x + u
            c1 = s < x
            t = s + carry
            carry = np.uint64(1) if (c1 or t < s) else np.uint64(0)
            v[w] = t | (x & ~m_row[w])
    total = 0
    for w in range(n_words):
        x = v[w]
        rest = len_a - 64 * w
        if rest < 64:
            x |= ~((np.uint64(1) << np.uint64(rest)) - np.uint64(1))
        total += _zeros(x)
    return total


@njit(cache=True, parallel=True)
def _all_pairs(codes, lengths, masks, out, n_chunks):
    n = codes.shape[0]
    # row i has n - 1 - i pairs: chunk c takes rows c, c + n_chunks, ... for balance
    for c in prange(n_chunks):
        v = np.empty(masks.shape[2], np.uint64)
        for i in range(c, n, n_chunks):
            out[i, i] = lengths[i]
            for j in range(i + 1, n):
                x = pair_lcs(masks[i], lengths[i], codes[j], lengths[j], v)
                out[i, j] = x
                out[j, i] = x


def lcs_lengths(codes, lengths) -> torch.Tensor:
    """LCS lengths of every pair of sequences.

    Arguments:
        codes: ``uint8 [N, L]`` residue codes (positions past a sequence's length are ignored).
        lengths: ``int [N]`` sequence lengths, each in ``0 .. L``.

    Returns:
        ``int32 [N, N]`` (CPU): ``out[i, j]`` is the length of the longest common subsequence of
        sequences i and j; ``out[i, i] = lengths[i]``.
    """
    codes, lengths = host_inputs(codes, lengths)
    n = codes.shape[0]
    out = np.zeros((n, n), np.int32)
    if n:
        masks = lcs_masks(codes, lengths)
        _all_pairs(codes, lengths, masks, out, min(n, 8 * numba.get_num_threads()))
    return torch.from_numpy(out)


def lcs_masks(codes: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The bit masks of every sequence (``uint64 [N, codes, words]``) of checked host inputs
    (:func:`host_inputs`), made once and read by every pair routine."""
    longest = int(lengths.max()) if lengths.size else 0
    n_codes = int(codes.max()) + 1 if codes.size else 1
    return bit_masks(codes, lengths, n_codes, max(1, (longest + 63) // 64))


def host_inputs(codes, lengths) -> tuple[np.ndarray, np.ndarray]:
    """Codes and lengths as host numpy arrays (int64 lengths), checked: the inputs of every
    host LCS routine."""
    if isinstance(codes, torch.Tensor):
        codes = codes.detach().cpu().numpy()
    if isinstance(lengths, torch.Tensor):
        lengths = lengths.detach().cpu().numpy()
    codes, lengths = np.ascontiguousarray(codes), np.asarray(lengths).astype(np.int64)
    check_codes(codes, lengths)
    return codes, lengths
