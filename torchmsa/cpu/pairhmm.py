"""Posterior match probabilities of a pair HMM on the CPU (numba): ProbCons' three-state model,
forward and backward in probability space, and the pairs' posteriors quantised to integer
library weights (:func:`torchmsa.consistency.posterior.posterior_entries`).

The model: state M emits residue pair (x_i, y_j) with odds ``odds[x_i, y_j]`` against the null
model, X emits x_i against a gap and Y emits y_j against a gap (odds 1). Transitions
M->M ``1 - 2d``, M->X and M->Y ``d``, X->X and Y->Y ``e``, X->M and Y->M ``1 - e``, no X<->Y;
the begin state is an M at cell (0, 0) and every state ends with probability 1. Forward
``f``, backward ``b`` and ``Z = f_M + f_X + f_Y`` at (n, m) give ``P(i ~ j) = f_M b_M / Z``.

With free end gaps (``free_ends``, a "glocal" or overlap model) a path is an unaligned prefix
of x and one of y, then a core from a match at (i0, j0) to a match at (i1, j1) under the same
transitions and emissions, then unaligned suffixes; prefixes, suffixes, the core's start and
its end have weight 1, and so has the empty path (no match). Then (1-based, 0 outside the
sequences)::

    f_M(i, j) = odds[x_i, y_j] (1 + (1-2d) f_M(i-1, j-1) + (1-e) (f_X + f_Y)(i-1, j-1))
    f_X(i, j) = d f_M(i-1, j) + e f_X(i-1, j)      f_Y likewise along j
    b_M(i, j) = 1 + (1-2d) o b_M(i+1, j+1) + d (b_X(i+1, j) + b_Y(i, j+1))
    b_X(i, j) = e b_X(i+1, j) + (1-e) o b_M(i+1, j+1)      b_Y likewise along j

with ``o = odds[x_{i+1}, y_{j+1}]``, ``Z = 1 + sum f_M`` over all cells, and again
``P(i ~ j) = f_M b_M / Z``. The model is symmetric in x and y, as the global one.

Numerics. Every DP row of the three states carries a power-of-two exponent: row i is formed
from row i - 1 times ``2**-k``, k the exponent of row i - 1's largest value (folded into the
recurrence's coefficients, which is exact), so stored values stay near 1 however long the
pair, and the forward, backward and ``Z`` exponents meet exactly in each posterior. Scaling by
a power of two rounds nothing, so the values depend only on the (fixed) order of the
operations; every pair is one thread's from start to end, so any thread count gives the same
bits.

Within a row values keep their spread, which FLOOR bounds at about 1,000 bits (2**-1000 of the
row's largest is set to 0). Rows therefore run along the longer sequence and columns along the
shorter one: a row spans at most the shorter length, and a long end gap costs ``e**k`` along
the rows, where the scaling absorbs it (with rows along the shorter one, 12 residues against
3,000 would lose every posterior: the end cell falls below the floor). What can still fall
out is a path more than about 1,000 bits below its row's best, e.g. one through a gap of
over 2,800 residues (0.34 bits a residue at e = 0.79) beside alignments that avoid it: the
posteriors of the few residues at the edges of such a gap are then partly lost. A posterior
is formed only where the product of the forward and backward values reaches
``2**-PRODUCT_FLOOR``, which their exponents tell: with FLOOR, no product then falls among the
subnormal numbers, which cost a hundred times a normal one and would fill most of a long
pair's off-diagonal cells. A pair with no path to the end within range (Z = 0) has no
posteriors.

Free end gaps. The constant 1 of a core's start (forward) or end (backward) enters a row
stored times ``2**-S`` as ``2**-S`` (exact), or as 0 where that is below FLOOR, like any
value; and no row's exponent S goes below 0, so the 1 is at most 1 where it dominates (short
or unrelated sequences, rows of residues with tiny odds): the scale follows the 1 and never
overflows it. What a floor then drops is negligible whatever its row: every forward value is
at most Z and every backward value at most 3 Z (a core may start or end anywhere), so a value
below ``2**-1000`` in absolute terms (S = 0) carries less than ``3 2**-1000`` of any
posterior. ``Z`` sums cells of every row's scale: it is kept as a mantissa in [1/2, 1) and an
integer exponent, starts at 1 (the empty path) and adds each row's f_M values (summed after the
floor, columns left to right) for rows 1 .. n in turn, each addition rounded once to 53 bits
as if exponents had no bounds (:func:`_accumulate`).

Both models rely on a row's forward values (and backward ones) that matter spanning under
about 1,000 bits. Two alternative alignments that each score more than about that and cross
(domains in swapped order, or one domain against a tandem repeat of it: with BLOSUM62, about
350 identical residues each) break it in either model: the forward pass keeps one, the
backward pass the other, and some posteriors come out far from the truth, even above 1.

Cost per pair of lengths n >= m: about ``2 n m`` cell updates (forward, backward), each a few
multiply-adds with one serial chain along the row, and ``8 (n + 1) (m + 1)`` bytes for the
forward M values, which then hold the posteriors; rows take ``O(m)``.
"""

from __future__ import annotations

import math

import numba
import numpy as np
from numba import njit, prange

from torchmsa.cpu.twins import pick, twin

__all__ = ["FLOOR", "PRODUCT_FLOOR", "CHUNK_BYTES", "pair_posterior", "posterior_weights"]

# a stored DP value below this is set to 0 (rows' largest values lie within about 2**-8 ..
# 2**6, or below 1 where free end gaps hold a row's exponent at 0, and a step multiplies by
# at least d * min(odds), about 2**-8, and by 1 or more: nothing subnormal forms)
FLOOR = 2.0**-1000
FLOOR_BITS = np.float64(FLOOR).view(np.int64).item()  # non-negative doubles order as their bits
# a posterior is formed where the product of the (scaled) forward and backward values reaches
# 2**-PRODUCT_FLOOR, told from their exponents: times the row's factor (:func:`_factor`) normal
PRODUCT_FLOOR = 960
# bytes of quantised weights held at once: pairs go through in chunks of about this many cells
CHUNK_BYTES = 1 << 26


@njit(cache=True, nogil=True, boundscheck=False)
def _settle(row, lo, hi):
    """Sets entries ``lo .. hi - 1`` of ``row`` (non-negative float64, seen as int64 bits,
    which order alike) below :data:`FLOOR` to 0 and returns the bits of the largest."""
    bits = row.view(np.int64)
    top = 0
    for j in range(lo, hi):
        u = bits[j]
        u = u if u >= FLOOR_BITS else 0
        bits[j] = u
        top = max(top, u)
    return top


@njit(cache=True, nogil=True, boundscheck=False)
def _exponent(rm, rx, ry, lo, hi):
    """Settles entries ``lo .. hi - 1`` of a row's three states (:func:`_settle`) and returns
    e with the largest in [2**(e - 1), 2**e): the next row is scaled by ``2**-e``; 0 for a
    row of zeros."""
    top = max(_settle(rm, lo, hi), _settle(rx, lo, hi), _settle(ry, lo, hi))
    return (top >> 52) - 1022 if top > 0 else 0


@njit(cache=True, nogil=True, boundscheck=False)
def _one(scale):
    """The constant 1 of the free-ends model (a core's start or end) in a row stored times
    ``2**-scale`` (``scale >= 0``): ``2**-scale``, exact, or 0 below :data:`FLOOR`, as any
    stored value."""
    return math.ldexp(1.0, -scale) if scale <= 1000 else 0.0


@njit(cache=True, nogil=True, boundscheck=False)
def _accumulate(zm, ze, r, s):
    """``(zm, ze)`` (the number ``zm 2**ze``, ``zm`` in [1/2, 1)) plus ``r 2**s`` (``r >= 0``),
    rounded once to 53 bits as if the exponent had no bounds: both terms are brought to the
    larger one's exponent, which is exact, and a term below ``2**-60`` of the other, which
    would leave it unchanged, is not formed (it would be subnormal or 0)."""
    if r <= 0.0:
        return zm, ze
    rm, re = math.frexp(r)
    re += s
    if re <= ze:
        if ze - re <= 60:
            zm = zm + math.ldexp(rm, re - ze)
    else:
        zm = math.ldexp(zm, ze - re) + rm if re - ze <= 60 else rm
        ze = re
    zm, dz = math.frexp(zm)
    return zm, ze + dz


@njit(cache=True, nogil=True, boundscheck=False)
def _limit(c):
    """The least sum of the biased exponents of a forward and a backward value whose product
    is turned into a posterior with the row's factor ``c`` (:func:`_factor`):
    ``2**-PRODUCT_FLOOR``, raised where ``c < 2**-61`` (the free-ends model only) so that
    every posterior formed stays normal (at least ``2**-1021``)."""
    lim = 2046 - PRODUCT_FLOOR
    if c > 0.0:
        ec = math.frexp(c)[1]
        if ec < -60:
            lim -= ec + 60
    return lim


@njit(cache=True, nogil=True, boundscheck=False)
def _profile(b, odds):
    """``prof [A, m + 2]``: ``prof[c, j] = odds[c, b[j - 1]]`` for columns j = 1 .. m, so that
    a residue's odds against every column are one contiguous row; 0 elsewhere."""
    m = b.shape[0]
    prof = np.zeros((odds.shape[0], m + 2))
    for c in range(odds.shape[0]):
        for j in range(1, m + 1):
            prof[c, j] = odds[c, b[j - 1]]
    return prof


@njit(cache=True, nogil=True, boundscheck=False)
def _forward(a, prof, d, e, free, fm, sf):
    """Forward over ``a`` (rows, length n) against the columns of ``prof`` (m): ``fm[i, j]`` =
    f_M(i, j) times ``2**-sf[i]``; returns ``(z, ez)`` with ``Z = z 2**ez``: the global
    model's ``f_M + f_X + f_Y`` at (n, m) (``ez = sf[n]``), or with ``free`` (free end gaps)
    1 plus every f_M, summed by :func:`_accumulate` in a fixed order (``z`` in [1/2, 1)).

    Row i is formed from row i - 1 as it stands, the factor ``2**-k`` from row i - 1's largest
    (:func:`_exponent`) folded into the coefficients: a power of two, so each value is the
    one the scaled row would give, bit for bit. With ``free`` each f_M also gets the core's
    start, the constant 1 at the row's scale (:func:`_one`), and no row's exponent goes below
    0: where the row's values are below 1 the start terms set its scale."""
    n, m = a.shape[0], fm.shape[1] - 1
    t_mm = 1.0 - 2.0 * d
    t_gm = 1.0 - e
    px, py = np.zeros(m + 1), np.zeros(m + 1)
    cx, cy = np.zeros(m + 1), np.zeros(m + 1)
    cm = fm[0]
    cm[:] = 0.0
    if not free:
        # row 0: the begin state (an M at (0, 0)), then y's residues against gaps
        cm[0] = 1.0
        for j in range(1, m + 1):
            cy[j] = d * cm[j - 1] + e * cy[j - 1]
    # (free ends: row 0 is all 0, a core starts with a match)
    sf[0] = 0
    k = _exponent(cm, cx, cy, 0, m + 1)
    zm, ze = 0.5, 1  # Z = 1: the free-ends model's empty path
    one = 0.0  # the start term at the row's scale: none in the global model
    for i in range(1, n + 1):
        if free:
            k = max(k, -sf[i - 1])
        sf[i] = sf[i - 1] + k
        if free:
            one = _one(sf[i])
        s = math.ldexp(1.0, -k)
        c_mm, c_gm, c_d, c_e = t_mm * s, t_gm * s, d * s, e * s
        pm, cm = cm, fm[i]
        px, py, cx, cy = cx, cy, px, py
        orow = prof[a[i - 1]]
        cm[0] = 0.0
        cx[0] = c_d * pm[0] + c_e * px[0]
        cy[0] = 0.0
        for j in range(1, m + 1):
            cm[j] = orow[j] * (one + (c_mm * pm[j - 1] + c_gm * (px[j - 1] + py[j - 1])))
            cx[j] = c_d * pm[j] + c_e * px[j]
        for j in range(1, m + 1):
            cy[j] = d * cm[j - 1] + e * cy[j - 1]
        k = _exponent(cm, cx, cy, 0, m + 1)
        if free:
            # Z += the row's f_M (as stored, after the floor), columns left to right
            r = 0.0
            for j in range(1, m + 1):
                r += cm[j]
            zm, ze = _accumulate(zm, ze, r, sf[i])
    if free:
        return zm, ze
    return cm[m] + cx[m] + cy[m], sf[n]


@njit(cache=True, nogil=True, boundscheck=False)
def _factor(z, k):
    """``2**k / z``, what turns a product of forward and backward values into a posterior
    (0 when no mass reached the end, z = 0). In the global model it lies above
    ``2**-12 / (2 m + 2)`` (a row's posteriors, its gap ones with them, sum to 1); with free
    end gaps it may be as small as the row's posteriors (:func:`_limit`). It is capped at
    ``2**1001``, past which no product that is formed (>= ``2**-PRODUCT_FLOOR``) could stay a
    probability."""
    if z <= 0.0:
        return 0.0
    mz, ez = math.frexp(z)
    return math.ldexp(1.0, min(k - ez, 1000)) / mz


@njit(cache=True, nogil=True, boundscheck=False)
def _posteriors(a, b, odds, d, e, free, fm):
    """Posterior match probabilities of ``a`` (rows, n >= 1) against ``b`` (columns, m >= 1)
    under the global model, or with ``free`` the free-ends one: ``fm [n + 1, m + 1]`` (a
    workspace) holds ``P(i ~ j)`` at ``[i, j]``, i, j >= 1, after it. The backward pass runs
    row by row from n, scaled as the forward one, and turns each row of forward values into
    posteriors as soon as its backward row is known."""
    n, m = a.shape[0], b.shape[0]
    t_mm = 1.0 - 2.0 * d
    t_gm = 1.0 - e
    prof = _profile(b, odds)
    sf = np.zeros(n + 1, np.int64)
    z, ez = _forward(a, prof, d, e, free, fm, sf)
    # backward rows over columns 1 .. m, with column m + 1 a zero for the chain along the row
    qm, qx, qy = np.zeros(m + 2), np.zeros(m + 2), np.zeros(m + 2)
    bm, bx, by = np.zeros(m + 2), np.zeros(m + 2), np.zeros(m + 2)
    dd = np.zeros(m + 1)
    if free:
        # row n: a core ends at its match (b_M = 1); no gap state can reach a match
        for j in range(1, m + 1):
            bm[j] = 1.0
    else:
        # row n: the end from every state at (n, m), else y's last residues against gaps
        bm[m] = bx[m] = by[m] = 1.0
        for j in range(m - 1, 0, -1):
            by[j] = e * by[j + 1]
            bm[j] = d * by[j + 1]
    sb = 0
    one = 0.0  # the core's end at the row's scale: none in the global model
    for i in range(n, 0, -1):
        k = _exponent(bm, bx, by, 1, m + 1)
        c = _factor(z, sf[i] + sb - ez)
        lim = _limit(c)
        row = fm[i]
        row[0] = 0.0
        fb, gb = row.view(np.int64), bm.view(np.int64)
        for j in range(1, m + 1):
            # a product below 2**-PRODUCT_FLOOR counts as 0, and is never formed
            f = row[j] if (fb[j] >> 52) + (gb[j] >> 52) >= lim else 0.0
            row[j] = (f * bm[j]) * c
        if i == 1:
            break
        # row i - 1 from row i, times 2**-k (folded into the coefficients as forward)
        if free:
            k = max(k, -sb)
            one = _one(sb + k)
        s = math.ldexp(1.0, -k)
        c_mm, c_gm, c_e = t_mm * s, t_gm * s, e * s
        qm, qx, qy, bm, bx, by = bm, bx, by, qm, qx, qy
        # dd[j]: cell (i, j + 1)'s odds times its b_M; none past column m
        orow = prof[a[i - 1]]
        for j in range(1, m + 1):
            dd[j] = orow[j + 1] * qm[j + 1]
            bx[j] = c_gm * dd[j] + c_e * qx[j]
            qx[j] = s * qx[j]
        for j in range(m, 0, -1):
            by[j] = c_gm * dd[j] + e * by[j + 1]
            bm[j] = one + (c_mm * dd[j] + d * (qx[j] + by[j + 1]))
        sb += k


@njit(cache=True, nogil=True, boundscheck=False)
def _dense(x, y, odds, odds_t, d, e, free):
    """``P [len x, len y]``: the posteriors of one pair, rows along the longer sequence."""
    n, m = x.shape[0], y.shape[0]
    out = np.zeros((n, m))
    if n == 0 or m == 0:
        return out
    if n >= m:
        fm = np.empty((n + 1, m + 1))
        _posteriors(x, y, odds, d, e, free, fm)
        out[:, :] = fm[1:, 1:]
    else:
        fm = np.empty((m + 1, n + 1))
        _posteriors(y, x, odds_t, d, e, free, fm)
        out[:, :] = fm[1:, 1:].T
    return out


def pair_posterior(
    x, y, odds, gap_open: float = 0.02, gap_extend: float = 0.79, *, free_ends: bool = False
) -> np.ndarray:
    """The dense posterior match probabilities ``float64 [len x, len y]`` of residue codes
    ``x`` and ``y`` (1-D) under the module's model with ``odds`` (``float64 [A, A]``), global
    or with ``free_ends`` free end gaps, as :func:`posterior_weights` quantises them; for
    tests and inspection."""
    odds = np.ascontiguousarray(odds, dtype=np.float64)
    x = np.ascontiguousarray(x, dtype=np.uint8)
    y = np.ascontiguousarray(y, dtype=np.uint8)
    odds_t = np.ascontiguousarray(odds.T)
    return _dense(x, y, odds, odds_t, float(gap_open), float(gap_extend), bool(free_ends))


def _weigh(codes, lengths, xs, ys, odds, odds_t, d, e, free, wm, p0, offsets, weights, counts):
    # pairs p0 .. p0 + len(counts) - 1: dense weights at offsets[k] (x's rows, y's columns)
    for k in prange(counts.shape[0]):
        x, y = xs[p0 + k], ys[p0 + k]
        n, m = lengths[x], lengths[y]
        if n == 0 or m == 0:
            continue
        flip = n < m
        if flip:
            fm = np.empty((m + 1, n + 1))
            _posteriors(codes[y, :m], codes[x, :n], odds_t, d, e, free, fm)
        else:
            fm = np.empty((n + 1, m + 1))
            _posteriors(codes[x, :n], codes[y, :m], odds, d, e, free, fm)
        base = offsets[k]
        kept = 0
        for r in range(1, fm.shape[0]):
            for c in range(1, fm.shape[1]):
                # floor: the value is not negative; at most wm where the row range loses one
                # of two far-apart alignments and a posterior comes out above 1 (module doc)
                w = min(np.int64(fm[r, c] * wm + 0.5), np.int64(wm))
                at = base + (c - 1) * m + (r - 1) if flip else base + (r - 1) * m + (c - 1)
                weights[at] = w
                kept += w > 0
        counts[k] = kept


def _fill(lengths, xs, ys, p0, offsets, weights, starts, out_p, out_i, out_j, out_w):
    # each pair's kept weights in x's residue order, then y's, from starts[k]
    for k in prange(starts.shape[0] - 1):
        n, m = lengths[xs[p0 + k]], lengths[ys[p0 + k]]
        base = offsets[k]
        at = starts[k]
        for i in range(n):
            for j in range(m):
                w = weights[base + i * m + j]
                if w > 0:
                    out_p[at] = p0 + k
                    out_i[at] = i
                    out_j[at] = j
                    out_w[at] = w
                    at += 1


# each with a one-thread twin for small or first calls (:mod:`torchmsa.cpu.twins`)
_weigh_parallel = njit(cache=True, parallel=True)(_weigh)
_weigh_serial = njit(cache=True, nogil=True)(twin(_weigh))
_fill_parallel = njit(cache=True, parallel=True)(_fill)
_fill_serial = njit(cache=True, nogil=True)(twin(_fill))


def _chunks(sizes: np.ndarray, budget: int, least: int):
    """``(start, stop)`` runs of pairs whose ``sizes`` sum to about ``budget`` each (at least
    ``least`` pairs a run while pairs remain, so that every thread has work)."""
    ends = np.cumsum(sizes)
    p0, total = 0, sizes.shape[0]
    while p0 < total:
        before = int(ends[p0 - 1]) if p0 else 0
        p1 = int(np.searchsorted(ends, before + budget, side="right"))
        p1 = min(total, max(p1, p0 + least))
        yield p0, p1
        p0 = p1


def posterior_weights(
    codes: np.ndarray,
    lengths: np.ndarray,
    xs: np.ndarray,
    ys: np.ndarray,
    odds: np.ndarray,
    gap_open: float,
    gap_extend: float,
    weight_max: int,
    chunk_bytes: int = CHUNK_BYTES,
    *,
    free_ends: bool = False,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(pair, i, j, w)``, int64 numpy arrays: the residue pairs of each pair ``(xs[p],
    ys[p])`` of ``codes`` (``uint8 [N, L]``, ``lengths int64 [N]``) with weight
    ``w = floor(P weight_max + 1/2) >= 1`` (``weight_max`` at most 255), sorted by pair, i, j;
    P under the global model, or with ``free_ends`` the one with free end gaps.

    Pairs go in chunks of about ``chunk_bytes`` cells: the first pass (parallel over the
    chunk's pairs) stores each pair's weights densely as bytes, ``len x * len y`` each, and
    counts the kept ones; the second writes the kept ones at their offsets. Arguments are
    trusted (:func:`torchmsa.consistency.posterior.posterior_entries` checks them)."""
    odds_t = np.ascontiguousarray(odds.T)
    n_x, n_y = lengths[xs], lengths[ys]
    sizes = n_x * n_y
    least = 4 * numba.get_num_threads()
    parts: list[tuple[np.ndarray, ...]] = []
    for p0, p1 in _chunks(sizes, chunk_bytes, least):
        offsets = np.zeros(p1 - p0 + 1, np.int64)
        np.cumsum(sizes[p0:p1], out=offsets[1:])
        weights = np.empty(int(offsets[-1]), np.uint8)
        counts = np.zeros(p1 - p0, np.int64)
        cells = int(offsets[-1])
        run = pick(_weigh_parallel, _weigh_serial, cells)
        run(codes, lengths, xs, ys, odds, odds_t, gap_open, gap_extend, bool(free_ends),
            float(weight_max), p0, offsets, weights, counts)  # fmt: skip
        starts = np.zeros(p1 - p0 + 1, np.int64)
        np.cumsum(counts, out=starts[1:])
        out = [np.empty(int(starts[-1]), np.int64) for _ in range(4)]
        fill = pick(_fill_parallel, _fill_serial, cells)
        fill(lengths, xs, ys, p0, offsets, weights, starts, *out)
        parts.append(tuple(out))
    if not parts:
        return tuple(np.zeros(0, np.int64) for _ in range(4))
    return tuple(np.concatenate([part[c] for part in parts]) for c in range(4))
