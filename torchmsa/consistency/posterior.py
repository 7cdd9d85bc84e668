"""Library entries from a pair HMM's posterior match probabilities (ProbCons): for each chosen
pair of sequences, every residue pair the model aligns with probability P enters with the
integer weight ``floor(P * weight_max + 1/2)`` when that is at least 1.

The model (:mod:`torchmsa.cpu.pairhmm`) is ProbCons' three states, match M and gaps X and Y,
with gap open ``d`` and extend ``e`` probabilities and the match state's emission odds
``odds[a, b]`` against the null model (:func:`blosum_odds` turns a substitution matrix into
them). The model is global (end gaps charged like internal ones) or, with ``free_ends``, has
free end gaps: a path is an unaligned prefix of each sequence, a core from a match to a match
under the same transitions, and unaligned suffixes, the ends costing nothing (a pair may also
align nothing at all). Its posteriors sum to at most 1 over a residue's partners, so a residue
has at most ``2 * weight_max`` entries in a pair. Close sequences of lengths n and m yield
about ``min(n, m)`` entries, distant ones several times more, each light: 300 residues at 80%
identity about 300 entries, at 50% 340, at 25% 820, unrelated ones 2,600 (weight_max 64, the
global model).

It runs on the host (numba, float64 in probability space with exact power-of-two scaling per
DP row) whatever the device of the inputs, and every thread count gives the same integers.
"""

from __future__ import annotations

import numba
import numpy as np
import torch

from torchmsa.cpu.pairhmm import posterior_weights
from torchmsa.errors import ArgumentError, check_codes
from torchmsa.stages import stage

__all__ = ["blosum_odds", "posterior_entries"]


def blosum_odds(scoring_matrix: np.ndarray, bits_per_unit: float = 0.5) -> np.ndarray:
    """``float64 [A, A]`` emission odds ratios ``2 ** (bits_per_unit * matrix)`` of a
    log-odds substitution matrix whose unit is ``bits_per_unit`` bits (BLOSUM62: half bits)."""
    matrix = np.asarray(scoring_matrix, dtype=np.float64)
    return np.exp2(bits_per_unit * matrix)


def _host(t, dtype) -> np.ndarray:
    if isinstance(t, torch.Tensor):
        t = t.detach().cpu().numpy()
    return np.ascontiguousarray(t, dtype=dtype)


def posterior_entries(
    codes,
    lengths,
    xs,
    ys,
    odds,
    *,
    gap_open: float = 0.02,
    gap_extend: float = 0.79,
    weight_max: int = 64,
    threads: int | None = None,
    free_ends: bool = False,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """(pair, i, j, w), int64 each: for each pair p = (xs[p], ys[p]) of sequences of `codes`
    (uint8 [N, L] torch tensor, rows padded), `lengths` (int [N]), every residue pair (i of
    xs[p], j of ys[p]) whose posterior match probability P under the pair HMM is such that
    w = floor(P * weight_max + 1/2) >= 1, sorted by pair, then i, then j.

    Arguments:
        codes, lengths: the sequences, on any device (positions past a length are not read).
        xs, ys: ``int [P]`` the pairs' sequence indices (any order; ``xs[p] == ys[p]`` is
            allowed).
        odds: ``float64 [A, A]`` match emission odds ratios indexed by residue code (every
            code within the lengths below A), e.g. :func:`blosum_odds` of BLOSUM62.
        gap_open: the probability ``d`` of M -> X (and of M -> Y), ``0 < d < 1/2``.
        gap_extend: the probability ``e`` of X -> X (and Y -> Y), ``0 <= e < 1``.
        weight_max: the weight of a certain pair, ``1 .. 255``.
        free_ends: free end gaps (a "glocal" or overlap model): each sequence's residues
            before and after the aligned core (from its first match to its last) cost nothing,
            so that a fragment or a domain with long unrelated ends aligns as well as the
            core alone; ``False`` (the default): end gaps are charged like internal ones.
        threads: numba threads for the call (``None``: as set); the result does not depend
            on it.

    Returns:
        Four ``int64 [K]`` tensors on ``codes.device``: ``w`` in ``1 .. weight_max``.

    Cost: about ``2 n m`` DP cells a pair of lengths n and m, in float64 (under a millisecond
    a pair of 300 residues on one core), ``8 n m`` bytes of workspace per running thread, and
    the weights of up to 64 MiB of cells at once, a byte a cell, between the two passes; 32
    bytes an entry for the result.
    """
    check_codes(codes, lengths)
    device = codes.device if isinstance(codes, torch.Tensor) else torch.device("cpu")
    host_codes = _host(codes, np.uint8)
    lens = _host(lengths, np.int64)
    px, py = _host(xs, np.int64), _host(ys, np.int64)
    table = _host(odds, np.float64)
    _check(lens, px, py, table, host_codes, gap_open, gap_extend, weight_max)
    before = numba.get_num_threads()
    if threads is not None:
        numba.set_num_threads(max(1, min(int(threads), numba.config.NUMBA_NUM_THREADS)))
    try:
        with stage("posterior_entries"):
            cols = posterior_weights(
                host_codes,
                lens,
                px,
                py,
                table,
                float(gap_open),
                float(gap_extend),
                weight_max,
                free_ends=bool(free_ends),
            )
    finally:
        numba.set_num_threads(before)
    return tuple(torch.from_numpy(c).to(device) for c in cols)


def _check(lens, xs, ys, odds, codes, gap_open, gap_extend, weight_max) -> None:
    """Raise :class:`ArgumentError` for arguments :func:`posterior_entries` cannot use."""
    n = lens.shape[0]
    if xs.ndim != 1 or xs.shape != ys.shape:
        raise ArgumentError(f"`xs` and `ys` must be 1-D of one length; got {xs.shape}, {ys.shape}")
    for idx, which in ((xs, "xs"), (ys, "ys")):
        if idx.size and (idx.min() < 0 or idx.max() >= n):
            raise ArgumentError(f"`{which}` must index sequences 0..{n - 1}")
    if odds.ndim != 2 or odds.shape[0] != odds.shape[1]:
        raise ArgumentError(f"`odds` must be a square [A, A] array; got {odds.shape}")
    if not np.all(np.isfinite(odds)) or (odds < 0).any():
        raise ArgumentError("`odds` must be finite and not negative")
    used = np.arange(codes.shape[1]) < lens[:, None]
    if used.any() and int(codes[used].max()) >= odds.shape[0]:
        raise ArgumentError(
            f"a residue code ({int(codes[used].max())}) lies outside `odds` ({odds.shape[0]} codes)"
        )
    if not 0.0 < gap_open < 0.5:
        raise ArgumentError(f"Invalid value for `gap_open`: {gap_open!r}; use 0 < gap_open < 0.5")
    if not 0.0 <= gap_extend < 1.0:
        raise ArgumentError(
            f"Invalid value for `gap_extend`: {gap_extend!r}; use 0 <= gap_extend < 1"
        )
    if not 1 <= int(weight_max) <= 255 or int(weight_max) != weight_max:
        raise ArgumentError(
            f"Invalid value for `weight_max`: {weight_max!r}; use an integer in 1..255"
        )
