"""LCS lengths of row blocks of the lower triangle on the CPU (numba): what streamed single
linkage (:func:`torchmsa.ops.lcs.lcs_single_linkage`) reads, with the pair routine of
:mod:`torchmsa.cpu.lcs` (so the same integers as its full matrix); the twin of
``triton_kernels/lcs.py``'s ``lcs_rows``. And blocks of any sequences against any others
(:func:`lcs_block`), which PartTree over LCS distances reads."""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from torchmsa.cpu.lcs import pair_lcs

__all__ = ["lcs_rows", "lcs_block"]


@njit(cache=True, parallel=True)
def _rows(codes, lengths, masks, r0, out):
    for t in prange(out.shape[0]):
        i = r0 + t
        v = np.empty(masks.shape[2], np.uint64)
        for j in range(i):
            out[t, j] = pair_lcs(masks[j], lengths[j], codes[i], lengths[i], v)


def lcs_rows(codes: np.ndarray, lengths: np.ndarray, masks: np.ndarray, r0: int, r1: int):
    """``int32 [r1 - r0, r1]``: row t holds the LCS of sequence ``r0 + t`` with every
    sequence before it (columns from ``r0 + t`` on are left 0)."""
    out = np.zeros((r1 - r0, r1), np.int32)
    if r1 > r0:
        _rows(codes, lengths, masks, r0, out)
    return out


@njit(cache=True, parallel=True)
def _block(codes, lengths, masks, ia, ib, out):
    for x in prange(ia.shape[0]):
        a = ia[x]
        v = np.empty(masks.shape[2], np.uint64)
        for y in range(ib.shape[0]):
            b = ib[y]
            out[x, y] = pair_lcs(masks[b], lengths[b], codes[a], lengths[a], v)


def lcs_block(codes, lengths, masks, ia: np.ndarray, ib: np.ndarray) -> np.ndarray:
    """``int64 [len(ia), len(ib)]``: the LCS of sequence ``ia[x]`` and sequence ``ib[y]``."""
    ia = np.ascontiguousarray(ia, dtype=np.int64)
    ib = np.ascontiguousarray(ib, dtype=np.int64)
    out = np.zeros((len(ia), len(ib)), np.int64)
    if len(ia) and len(ib):
        _block(codes, lengths, masks, ia, ib, out)
    return out
