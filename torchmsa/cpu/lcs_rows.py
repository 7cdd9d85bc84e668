"""LCS lengths of row blocks of the lower triangle on the CPU (numba): what streamed single
linkage (:func:`torchmsa.ops.lcs.lcs_single_linkage`) reads, with the lane routine of
:mod:`torchmsa.cpu.lcs` (so the same integers as its full matrix); the twin of
``triton_kernels/lcs.py``'s ``lcs_rows``. And blocks of any sequences against any others
(:func:`lcs_block`), which PartTree over LCS distances reads.

Both run ``LANES`` pairs at once (:func:`torchmsa.cpu.lcs.lanes_lcs`): one sequence's residues
drive the bit vectors of ``LANES`` others, whose masks are regrouped once per call
(:func:`torchmsa.cpu.lcs.lane_masks`)."""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from torchmsa.cpu.lcs import LANES, lane_masks, lanes_lcs

__all__ = ["lcs_rows", "lcs_block"]


@njit(cache=True, parallel=True)
def _rows(codes, lengths, lm, lz, words, n_codes, n_words, r0, out):
    K = LANES
    for t in prange(out.shape[0]):
        i = r0 + t
        v = np.empty(codes.shape[1] * K, np.uint64)  # carries between word blocks
        res = np.empty(K, np.uint64)
        for g in range((i + K - 1) // K):
            lanes_lcs(lm, lz, words, n_codes, n_words, g, codes[i], lengths[i], v, res)
            for k in range(min(K, i - g * K)):
                out[t, g * K + k] = np.int32(res[k])


def lcs_rows(codes: np.ndarray, lengths: np.ndarray, masks: np.ndarray, r0: int, r1: int):
    """``int32 [r1 - r0, r1]``: row t holds the LCS of sequence ``r0 + t`` with every
    sequence before it (columns from ``r0 + t`` on are left 0)."""
    out = np.zeros((r1 - r0, r1), np.int32)
    if r1 > r0 and r1 > 1:
        lm, lz, words = lane_masks(masks, lengths, np.arange(r1 - 1, dtype=np.int64))
        n_codes, n_words = masks.shape[1], masks.shape[2]
        _rows(codes, lengths, lm, lz, words, n_codes, n_words, r0, out)
    return out


@njit(cache=True, parallel=True)
def _block(codes, lengths, lm, lz, words, n_codes, n_words, ia, nb, out):
    K = LANES
    for x in prange(ia.shape[0]):
        a = ia[x]
        v = np.empty(codes.shape[1] * K, np.uint64)  # carries between word blocks
        res = np.empty(K, np.uint64)
        for g in range(words.shape[0]):
            lanes_lcs(lm, lz, words, n_codes, n_words, g, codes[a], lengths[a], v, res)
            for k in range(min(K, nb - g * K)):
                out[x, g * K + k] = np.int64(res[k])


def lcs_block(codes, lengths, masks, ia: np.ndarray, ib: np.ndarray) -> np.ndarray:
    """``int64 [len(ia), len(ib)]``: the LCS of sequence ``ia[x]`` and sequence ``ib[y]``.

    The longer list fills the lanes (when the other is shorter than ``LANES``, the block is
    made transposed), so a short ``ib`` does not leave lanes empty."""
    ia = np.ascontiguousarray(ia, dtype=np.int64)
    ib = np.ascontiguousarray(ib, dtype=np.int64)
    if len(ib) < min(len(ia), LANES):
        return np.ascontiguousarray(lcs_block(codes, lengths, masks, ib, ia).T)
    out = np.zeros((len(ia), len(ib)), np.int64)
    if len(ia) and len(ib):
        lm, lz, words = lane_masks(masks, lengths, ib)
        n_codes, n_words = masks.shape[1], masks.shape[2]
        _block(codes, lengths, lm, lz, words, n_codes, n_words, ia, len(ib), out)
    return out
