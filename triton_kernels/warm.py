"""Every DP kernel variant a kind of call can launch, compiled ahead (``torchmsa.warmup()``).

A fill kernel variant is fixed by the kind of call (pairs or profiles, score only or with
traceback, the DP mode, the query profile's element bits, packed best-cell keys) and by the
launch shape, which :func:`dp_plan.choose_config` picks from the short menu
:func:`dp_plan.menu`. Launching one tiny batch per shape with ``force_config`` compiles each
variant exactly as a real call would (the same argument types, every pointer 16-byte aligned),
so a later call of that kind compiles nothing, whatever its lengths and counts.
"""

from __future__ import annotations

import numpy as np
import torch

from torchmsa._triton import dp, dp_plan, strip
from torchmsa.constants import GLOBAL

__all__ = ["pair_variants", "profile_variants", "strip_variants", "element_bits"]


def element_bits(matrix: np.ndarray, gap_open: int) -> int:
    """The query profile's element bits for a scoring (as :func:`dp_plan.pair_args`)."""
    return dp_plan.element_bits(int(matrix.min()) + gap_open, int(matrix.max()) + gap_open)


def _pairs(device: torch.device, size: int):
    """Two pairs of short sequences over ``size`` codes (lengths 9 and 7, 8 and 5)."""
    rng = np.random.default_rng(0)
    codes = torch.from_numpy(rng.integers(0, size, (4, 9)).astype(np.uint8))
    la = torch.tensor([9, 8], dtype=torch.int32)
    lb = torch.tensor([7, 5], dtype=torch.int32)
    return codes[:2].to(device), la.to(device), codes[2:].to(device), lb.to(device)


def pair_variants(
    device: torch.device,
    mode: int,
    trace: bool,
    matrix: np.ndarray,
    gap_open: int,
    gap_extend: int,
    packed: bool = True,
    shard: tuple[int, int] = (0, 1),
) -> int:
    """Compile the fill (and traceback) variants of pair calls of one kind: one tiny launch
    per launch shape; ``packed`` as ``dp_plan.plan``'s ``packed_tracking`` (only local and
    semiglobal calls track packed keys); ``shard = (k, n)``: every n-th shape from the k-th.
    Returns the launches made."""
    mat = torch.from_numpy(np.ascontiguousarray(matrix, dtype=np.int32)).to(device)
    ca, la, cb, lb = _pairs(device, mat.shape[0])
    run = dp.pairwise_align if trace else dp.pairwise_score
    shapes = dp_plan.menu(dp_plan.r_cap(False, trace))[shard[0] :: shard[1]]
    for cfg in shapes:
        run(
            ca,
            la,
            cb,
            lb,
            mat,
            gap_open,
            gap_extend,
            mode,
            force_config=cfg,
            packed_tracking=packed,
        )
    return len(shapes)


def profile_variants(device: torch.device, shard: int = 0, shards: int = 1) -> int:
    """Compile the variants of profile calls (global, with traceback: every profile call of
    the pipeline): one tiny launch per launch shape (every ``shards``-th from ``shard``).
    Returns the launches made."""
    rng = np.random.default_rng(0)
    n, m = np.array([6, 4]), np.array([5, 7])
    offs = [
        np.concatenate([[0], np.cumsum(x)[:-1]]).astype(np.int64) for x in (n * m, n + 1, m + 1)
    ]
    S = rng.integers(-20, 20, int((n * m).sum())).astype(np.int32)
    costs = [rng.integers(2, 12, int((x + 1).sum())).astype(np.int32) for x in (n, n, m, m)]
    oa, ca, ob, cb = (torch.from_numpy(c).to(device) for c in costs)
    t = [torch.from_numpy(x).to(device) for x in (S, offs[0], offs[1], offs[2])]
    n32, m32 = (torch.from_numpy(x.astype(np.int32)).to(device) for x in (n, m))
    shapes = dp_plan.menu(dp_plan.r_cap(True, True))[shard::shards]
    for cfg in shapes:
        dp.profile_align(
            t[0], t[1], n32, m32, oa, ca, t[2], ob, cb, t[3], 1, GLOBAL, force_config=cfg
        )
    return len(shapes)


def strip_variants(device: torch.device, matrix: np.ndarray) -> int:
    """Compile best-K local alignment's strip kernel (``strip.py``) for ``matrix``: one tiny
    launch per launch shape, without and with forbidden pairs; then the global variant's shape
    and its crossings. Returns the launches made."""
    mat = torch.from_numpy(np.array(matrix, dtype=np.int32)).to(device)
    rng = np.random.default_rng(0)
    n, m, W = 9, 40, 16
    q = torch.from_numpy(rng.integers(0, mat.shape[0], n).astype(np.uint8)).to(device)
    s = torch.from_numpy(rng.integers(0, mat.shape[0], m).astype(np.uint8)).to(device)
    S = -(-m // W)
    i32 = {"dtype": torch.int32, "device": device}
    lo, hi = torch.zeros(1, **i32), torch.full((1,), S, **i32)
    col = torch.zeros((1, 4, n + 1), **i32)
    col[:, 1] = -(1 << 28)
    slot = torch.zeros(1, dtype=torch.int64, device=device)
    launches = 0
    for shape in strip.SHAPES:
        for forbid in (False, True):
            ptr = torch.zeros(n + 2, **i32)
            ptr[2:] = 1 if forbid else 0  # row 1 forbids column 1
            fcol = torch.ones(1 if forbid else 0, **i32)
            ckpt, best = torch.empty((S, 4, n + 1), **i32), torch.empty((S, 4), **i32)
            strip.strip_fill(q, s, mat, 10, 1, W, lo, hi, col, slot, ptr, fcol, ckpt, best,
                             shape=shape)  # fmt: skip
            launches += 1
    # one long global pair (decision 0060): its shape and the crossings
    ckpt = torch.empty((S, 4, n + 1), **i32)
    g_col = torch.zeros((1, 4, n + 1), **i32)
    strip.global_strip_fill(
        q, s, mat, 10, 1, W, lo, hi, g_col, slot, ckpt, shape=strip.GLOBAL_SHAPE
    )
    strip.crossings(ckpt, n)
    return launches + 2
