"""Longest-common-subsequence lengths of all pairs on the CPU (numba), the twin of
``triton_kernels/lcs.py``.

Bit-parallel LCS (Allison & Dix 1986, in Hyyro's form): sequence a is a bit vector ``V`` of
``len(a)`` bits, all ones at the start, and ``M[c]`` has bit p set where ``a[p] == c``. Each
residue c of b updates ``V = (V + (V & M[c])) | (V & ~M[c])`` with one multi-word addition whose
carries run from low words to high ones; at the end the LCS length is the number of zero bits
among the ``len(a)`` bits of V. Residues are equal when their codes are equal (so ``X`` matches
``X``); positions past a sequence's length are never read.

Words are 64 bits here and 32 bits in the Triton kernel; both give the same integers.

**Lanes.** :func:`pair_lcs` runs one pair (the scalar reference). The all-pairs routine and
:mod:`torchmsa.cpu.lcs_rows` run ``LANES`` pairs at once (:func:`lanes_lcs`): one sequence's
residues drive the bit vectors of ``LANES`` others, lane k of an LLVM vector
(:mod:`torchmsa.cpu.vec`) holding word w of pair k's ``V``, with its own masks, loaded with one
vector load per word from masks regrouped a group of ``LANES`` sequences at a time
(:func:`lane_masks`). The carry of the multi-word addition is per lane; four words stay in
registers over the whole driving sequence, longer ones go four words at a time with the carries
between blocks kept per residue. LCS is symmetric, so the integers are those of
:func:`pair_lcs` with either sequence as ``a``. Measured in decision 0057.
"""

from __future__ import annotations

import numba
import numpy as np
import torch
from numba import njit, prange, types

from torchmsa.cpu.vec import (
    lane_count,
    lanes,
    vadd,
    vand,
    vandnot,
    vload,
    vor,
    vpopcount,
    vshr,
    vsplat,
    vstore,
    vxor,
)
from torchmsa.errors import check_codes

__all__ = [
    "lcs_lengths",
    "lcs_masks",
    "bit_masks",
    "pair_lcs",
    "host_inputs",
    "LANES",
    "lane_masks",
    "lanes_lcs",
]

LANES = 16  # pairs at once: two <8 x i64> zmm registers per word (measured against 4 and 8)
_P = lanes(types.uint64, LANES)


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


@njit(cache=True)
def lane_masks(masks, lengths, idx):
    """The bit masks of sequences ``idx`` in groups of ``LANES``, lane k of a group holding
    sequence ``idx[g * LANES + k]`` (the last group padded with empty sequences): ``(lm, lz,
    words)``. ``lm`` is ``[G, codes, W, LANES]`` flat (``W = masks.shape[2]``), so the
    words of one code for a whole group are ``W`` vector loads; ``lz`` is ``[G, W, LANES]``
    flat, the bits below each lane's length; ``words[g]`` is the words the group's longest
    sequence needs."""
    K = LANES
    n_codes, W = masks.shape[1], masks.shape[2]
    G = (idx.shape[0] + K - 1) // K
    lm = np.zeros(G * n_codes * W * K, np.uint64)
    lz = np.zeros(G * W * K, np.uint64)
    words = np.zeros(G, np.int64)
    for x in range(idx.shape[0]):
        g, k = x // K, x % K
        s = idx[x]
        n = lengths[s]
        nw = (n + 63) // 64
        words[g] = max(words[g], nw)
        for c in range(n_codes):
            for w in range(nw):
                lm[((g * n_codes + c) * W + w) * K + k] = masks[s, c, w]
        for w in range(nw):
            rest = n - 64 * w
            z = ~np.uint64(0)
            if rest < 64:
                z = (np.uint64(1) << np.uint64(rest)) - np.uint64(1)
            lz[(g * W + w) * K + k] = z
    return lm, lz, words


@njit(cache=True, nogil=True, inline="always")
def _word(x, m, carry):
    """One word of ``V = (V + (V & M)) | (V & ~M)`` in every lane: ``(new V, carry out)``.
    With ``u = x & m`` (within ``x``) and ``t = x + u + carry``, the carry out is bit 63 of
    ``u | (x & ~t)`` (a full adder's carry, ``(x & u) | ((x | u) & ~t)``, with ``u`` in ``x``),
    and ``x & ~m`` is ``x ^ u``."""
    u = vand(x, m)
    t = vadd(vadd(x, u), carry)
    return vor(t, vxor(x, u)), vshr(vor(u, vandnot(x, t)), 63)


@njit(cache=True, nogil=True, inline="always")
def _block(lm, lz, base, z, cstride, b, len_b, cb, tot, nb, chained, p):
    """Words ``w0 .. w0 + nb`` of every lane over all of ``b`` (``base`` and ``z``: the
    group's offsets at word w0 in ``lm`` and ``lz``), in registers; carries in and out through
    ``cb`` when ``chained`` (else the carry in is 0 and none is kept). Returns ``tot`` plus
    the zero bits of these words below each lane's length."""
    K = lane_count(p)
    ones = vsplat(~np.uint64(0), p)
    v0, v1, v2, v3 = ones, ones, ones, ones
    for q in range(len_b):
        row = base + np.int64(b[q]) * cstride
        carry = vload(cb, q * K, p) if chained else vsplat(np.uint64(0), p)
        v0, carry = _word(v0, vload(lm, row, p), carry)
        if nb > 1:
            v1, carry = _word(v1, vload(lm, row + K, p), carry)
        if nb > 2:
            v2, carry = _word(v2, vload(lm, row + 2 * K, p), carry)
        if nb > 3:
            v3, carry = _word(v3, vload(lm, row + 3 * K, p), carry)
        if chained:
            vstore(cb, q * K, carry)
    tot = vadd(tot, vpopcount(vandnot(vload(lz, z, p), v0)))
    if nb > 1:
        tot = vadd(tot, vpopcount(vandnot(vload(lz, z + K, p), v1)))
    if nb > 2:
        tot = vadd(tot, vpopcount(vandnot(vload(lz, z + 2 * K, p), v2)))
    if nb > 3:
        tot = vadd(tot, vpopcount(vandnot(vload(lz, z + 3 * K, p), v3)))
    return tot


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
def lanes_lcs(lm, lz, words, n_codes, n_words, g, b, len_b, cb, res):
    """The LCS of ``b[:len_b]`` with each of the ``LANES`` sequences of group ``g`` of
    :func:`lane_masks`, all lanes at once, into ``res[:LANES]`` (uint64).

    Lane k holds word w of its own ``V``; the residue ``c = b[q]`` drives every lane with its
    own masks ``M_k[c]`` (one vector load per word), and the addition's carry is per lane
    (:func:`_word`). The words go four at a time, kept in registers over all of ``b``: the
    carry out of a block of four at residue q waits in ``cb[q * LANES:]`` (a workspace of
    ``len_b * LANES`` words) for the next block, which needs nothing else from this one. At
    the end each lane counts the zero bits of V below its length (``llvm.ctpop``)."""
    p = _P()
    K = lane_count(p)
    nw = words[g]
    zero = vsplat(np.uint64(0), p)
    cstride = n_words * K
    gbase = g * n_codes * cstride
    zbase = g * cstride
    tot = zero
    # the same loop with the block's word count a constant (1 to 4): no branch inside
    if nw <= 4:  # one block, no carries to keep
        if nw == 4:
            tot = _block(lm, lz, gbase, zbase, cstride, b, len_b, cb, tot, 4, False, p)
        elif nw == 3:
            tot = _block(lm, lz, gbase, zbase, cstride, b, len_b, cb, tot, 3, False, p)
        elif nw == 2:
            tot = _block(lm, lz, gbase, zbase, cstride, b, len_b, cb, tot, 2, False, p)
        elif nw == 1:
            tot = _block(lm, lz, gbase, zbase, cstride, b, len_b, cb, tot, 1, False, p)
    else:
        for q in range(len_b):
            vstore(cb, q * K, zero)
        for w0 in range(0, nw, 4):
            nb = nw - w0
            o, z = gbase + w0 * K, zbase + w0 * K
            if nb >= 4:
                tot = _block(lm, lz, o, z, cstride, b, len_b, cb, tot, 4, True, p)
            elif nb == 3:
                tot = _block(lm, lz, o, z, cstride, b, len_b, cb, tot, 3, True, p)
            elif nb == 2:
                tot = _block(lm, lz, o, z, cstride, b, len_b, cb, tot, 2, True, p)
            else:
                tot = _block(lm, lz, o, z, cstride, b, len_b, cb, tot, 1, True, p)
    vstore(res, 0, tot)


@njit(cache=True, parallel=True)
def _all_pairs(codes, lengths, lm, lz, words, n_codes, n_words, out, n_chunks):
    n = codes.shape[0]
    K = LANES
    G = words.shape[0]
    # row i drives the groups of sequences from i + 1 on (the first one partly wasted); row i
    # has n - 1 - i pairs: chunk c takes rows c, c + n_chunks, ... for balance
    for c in prange(n_chunks):
        v = np.empty(codes.shape[1] * K, np.uint64)  # carries between word blocks
        res = np.empty(K, np.uint64)
        for i in range(c, n, n_chunks):
            out[i, i] = lengths[i]
            for g in range((i + 1) // K, G):
                lanes_lcs(lm, lz, words, n_codes, n_words, g, codes[i], lengths[i], v, res)
                for k in range(K):
                    j = g * K + k
                    if i < j < n:
                        x = np.int32(res[k])
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
        lm, lz, words = lane_masks(masks, lengths, np.arange(n, dtype=np.int64))
        n_codes, n_words = masks.shape[1], masks.shape[2]
        n_chunks = min(n, 8 * numba.get_num_threads())
        _all_pairs(codes, lengths, lm, lz, words, n_codes, n_words, out, n_chunks)
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
