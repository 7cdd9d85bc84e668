"""Batch planning for the DP kernels: argument checks, launch shapes, length sorting, memory.

Pairs are grouped by the length of ``a`` (powers of four), each group gets the launch shape
(lanes per pair ``q``, rows per lane ``r``) that a simple cost model likes best, and inside a
group pairs are sorted by passes and ``m`` so that the pairs of one program have similar
shapes (CUDA-LINSi's length sorting). Groups are cut into launches ("chunks") whose buffers
(direction bits, horizontal buffers, query profiles) fit in the memory budget.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import numpy as np
import torch

from torchmsa._triton.host import to_device
from torchmsa.constants import GLOBAL, KEY_BITS, MODES, RES_ONE
from torchmsa.errors import ArgumentError, ResourceError

# a short, fixed menu: every launch shape is one more kernel to compile (seconds each), so the
# menu bounds what a workload can compile and what ``torchmsa.warmup()`` must (decision 0037:
# without 64 lanes and 12 rows per lane no best modelled time grows by more than a quarter; 20
# rows stay for score-only calls, whose 300-residue shape it is); past 32 lanes a pair spans warps
# and the lanes trade rows through shared memory with barriers (XWARP_COST per step)
Q_CHOICES = (4, 16, 32, 128)
XWARP_COST = 8
R_CHOICES = (4, 8, 16, 20, 24)
# rows per lane past which the kernel spills registers on sm_90 (the traceback variant keeps
# the direction bits, the profile variant two gap costs per row)
R_MAX_TRACE = 16
R_MAX_PROFILE = 8
STEP_COST = 6  # per-step work besides the R cells, in cell updates (shuffles, loads, masks)
PASS_SLACK = 1.1
# A launch's planned buffers (direction bits, horizontal buffers, query profiles) take at most
# this share of the caller's budget: the traceback's scratch ops, the outputs and the launch
# metadata are allocated beside them after planning, and the allocator rounds every block up.
# 5/8 of MemoryBudget's default (0.8 of the free GPU memory) is the half of the free memory
# that the launches have always planned for.
LAUNCH_SHARE = 0.625
KEY_SCORE_LIMIT = (1 << (31 - KEY_BITS)) - 1  # |H| bound for keys h * 2**KEY_BITS - j in an int32
KEY_COLUMN_LIMIT = 1 << KEY_BITS


@dataclass(frozen=True)
class Config:
    """Launch shape: ``q`` lanes per pair, ``r`` rows per lane, ``pb`` pairs per program;
    ``maxnreg`` caps registers per thread (more resident warps), ``None`` leaves it to ptxas."""

    q: int
    r: int
    pb: int
    num_warps: int = 1
    maxnreg: int | None = None


@dataclass
class Chunk:
    """One launch: pairs ``order`` (global indices), shape, buffer offsets by slot (words)."""

    order: np.ndarray
    config: Config
    width_a: int
    hb_off: np.ndarray
    hb_size: int
    tr_off: np.ndarray
    tr_size: int
    longest: int  # largest n + m


@dataclass
class Launch:
    """The chunks of one call; ``packed``: track best cells as packed keys."""

    chunks: list[Chunk] = field(default_factory=list)
    packed: bool = False


@dataclass
class Args:
    """Normalised kernel inputs (all on one device); pairwise runs carry dummies for profile
    buffers and the other way round."""

    profile: bool
    mode: int
    n: torch.Tensor
    m: torch.Tensor
    codes_a: torch.Tensor
    codes_b: torch.Tensor
    b_stride: int
    matrix: torch.Tensor
    eb: int
    vmax: int
    gap_open: int
    ext: int
    S: torch.Tensor
    s_off: torch.Tensor
    open_a: torch.Tensor
    close_a: torch.Tensor
    a_off: torch.Tensor
    open_b: torch.Tensor
    close_b: torch.Tensor
    b_off: torch.Tensor
    res_a: torch.Tensor
    res_b: torch.Tensor
    sizes: np.ndarray  # int64 [2, P]: n and m on the host
    ops: torch.Tensor | None = None
    ops_off: torch.Tensor | None = None


def _mode(mode) -> int:
    if int(mode) not in MODES.values():
        raise ArgumentError(
            f"Invalid value for `mode` argument: {mode!r}; use GLOBAL (0), LOCAL (1) or "
            f"SEMIGLOBAL (2) from torchmsa.constants"
        )
    return int(mode)


def _range(scores) -> tuple[int, int]:
    """``(lowest, highest)`` score (one device sync for a tensor on a device); ``(0, 0)`` when
    empty."""
    scores = torch.as_tensor(scores)
    if scores.numel() == 0:
        return 0, 0
    lo, hi = torch.stack(torch.aminmax(scores)).tolist()
    return lo, hi


def element_bits(lo: int, hi: int) -> int:
    """Narrowest of 8 / 16 / 32 bits that holds every substitution score."""
    for bits in (8, 16):
        if -(1 << (bits - 1)) <= lo and hi < (1 << (bits - 1)):
            return bits
    return 32


def _host_sizes(n, m) -> np.ndarray:
    """``int64 [2, P]``: n and m on the host (one wait when they live on a device)."""
    if isinstance(n, torch.Tensor) and isinstance(m, torch.Tensor) and n.device == m.device:
        both = torch.stack([n.reshape(-1).to(torch.int64), m.reshape(-1).to(torch.int64)])
        return both.cpu().numpy()
    return np.stack([np.asarray(torch.as_tensor(x).cpu(), np.int64) for x in (n, m)]).reshape(2, -1)


def _aligned(t: torch.Tensor) -> torch.Tensor:
    """``t``, copied when it does not start 16-byte aligned (a view into a larger buffer):
    Triton compiles one kernel variant per pointer alignment, so every launch passes aligned
    pointers and compiles the same variant whatever the caller's buffers were."""
    return t if t.data_ptr() % 16 == 0 else t.clone()


def _checked(args: Args) -> Args:
    """``args`` with every tensor aligned (:func:`_aligned`)."""
    for name, value in vars(args).items():
        if isinstance(value, torch.Tensor):
            setattr(args, name, _aligned(value))
    return args


def pair_args(
    codes_a, len_a, codes_b, len_b, matrix, gap_open, gap_extend, mode, sizes=None
) -> Args:
    """Normalised inputs of a pairwise call; ``sizes``: ``int64 [2, P]`` lengths on the host
    where the caller has them (else copied from ``len_a`` and ``len_b``: one wait). A matrix on
    the host is read there and copied without waiting for the device."""
    dev = codes_a.device
    i32 = torch.zeros(1, dtype=torch.int32, device=dev)
    i64 = torch.zeros(1, dtype=torch.int64, device=dev)
    lo, hi = _range(matrix)  # the query profile holds matrix + gap_open
    mat = to_device(matrix, dev, torch.int32).contiguous()
    codes_b = codes_b.to(device=dev, dtype=torch.uint8).contiguous()
    if codes_b.shape[1] == 0:
        codes_b = torch.zeros((codes_b.shape[0], 1), dtype=torch.uint8, device=dev)
    return _checked(
        Args(
            profile=False,
            mode=_mode(mode),
            n=len_a.to(device=dev, dtype=torch.int32).contiguous(),
            m=len_b.to(device=dev, dtype=torch.int32).contiguous(),
            codes_a=codes_a.to(device=dev, dtype=torch.uint8).contiguous(),
            codes_b=codes_b,
            b_stride=codes_b.shape[1],
            matrix=mat,
            eb=element_bits(lo + int(gap_open), hi + int(gap_open)),
            vmax=max(-lo, hi),
            gap_open=int(gap_open),
            ext=int(gap_extend),
            S=i32,
            s_off=i64,
            open_a=i32,
            close_a=i32,
            a_off=i64,
            open_b=i32,
            close_b=i32,
            b_off=i64,
            res_a=i32,
            res_b=i32,
            sizes=_host_sizes(len_a, len_b) if sizes is None else _sizes(sizes),
        )
    )


def _sizes(sizes) -> np.ndarray:
    return np.ascontiguousarray(np.asarray(sizes, dtype=np.int64).reshape(2, -1))


def profile_args(
    S, s_off, n, m, open_a, close_a, a_off, open_b, close_b, b_off, ext, mode, res_a, res_b
):
    dev = S.device
    # only local and semiglobal runs track best cells, which needs the score range
    lo, hi = _range(S) if _mode(mode) else (0, 0)

    def i32(t):
        t = to_device(t, dev, torch.int32).contiguous()
        return t if t.numel() else torch.zeros(1, dtype=torch.int32, device=dev)

    def i64(t):
        return to_device(t, dev, torch.int64).contiguous()

    return _checked(
        Args(
            profile=True,
            mode=_mode(mode),
            n=to_device(n, dev, torch.int32).contiguous(),
            m=to_device(m, dev, torch.int32).contiguous(),
            codes_a=torch.zeros((1, 1), dtype=torch.uint8, device=dev),
            codes_b=torch.zeros((1, 1), dtype=torch.uint8, device=dev),
            b_stride=1,
            matrix=torch.zeros((1, 1), dtype=torch.int32, device=dev),
            eb=32,
            vmax=max(-lo, hi),
            gap_open=0,
            ext=int(ext),
            S=i32(S),
            s_off=i64(s_off),
            open_a=i32(open_a),
            close_a=i32(close_a),
            a_off=i64(a_off),
            open_b=i32(open_b),
            close_b=i32(close_b),
            b_off=i64(b_off),
            res_a=i32(torch.full_like(open_a, RES_ONE) if res_a is None else res_a),
            res_b=i32(torch.full_like(open_b, RES_ONE) if res_b is None else res_b),
            sizes=_host_sizes(n, m),
        )
    )


def _lanes(dev: torch.device) -> int:
    """Lanes the device runs at once (a rough count: 1,024 per multiprocessor)."""
    if dev.type == "cuda":
        return torch.cuda.get_device_properties(dev).multi_processor_count * 1024
    return 1 << 30


def choose_config(
    n: int, m: int, n_pairs: int, lanes: int, r_max: int, force_config: Config | None = None
) -> Config:
    """The launch shape of least modelled time for pairs of about ``n x m`` cells.

    Time ~ passes * (m + q - 1) steps * (r + STEP_COST) per step * waves of lanes, where a
    pass covers ``q * r`` rows and ``waves = max(1, n_pairs * q / lanes)``. A shape with fewer
    passes wins within ``PASS_SLACK`` of the best (the H200 sweep in NOTES-dp.md: one-pass
    traceback shapes ran 14% faster than two-pass ones of equal modelled time). ``force_config``
    (tests, benchmarks) is taken as it is.
    """
    if force_config is not None:
        return force_config
    shapes = []
    for cfg in _menu(r_max):
        q, r = cfg.q, cfg.r
        passes = max(1, -(-n // (q * r)))
        step = r + STEP_COST + (XWARP_COST if q > 32 else 0)
        cost = passes * (m + q - 1) * step * max(1.0, n_pairs * q / lanes)
        shapes.append((cost, passes, q, r, cfg))
    best = min(s[0] for s in shapes)
    near = [s for s in shapes if s[0] <= best * PASS_SLACK]
    return min(near, key=lambda s: (s[1], s[0], s[2], s[3]))[4]  # fewest passes, then cost


def r_cap(profile: bool, trace: bool) -> int:
    """Most rows per lane a launch of this kind may take (registers, see ``R_MAX_*``)."""
    return R_MAX_PROFILE if profile else R_MAX_TRACE if trace else max(R_CHOICES)


def menu(r_max: int) -> list[Config]:
    """Every launch shape :func:`choose_config` can return under ``r_max``: the whole set of
    fill-kernel variants of one kind of call (``torchmsa.warmup()`` compiles them all)."""
    return list(_menu(r_max))


@functools.cache
def _menu(r_max: int) -> tuple[Config, ...]:
    out = []
    for q in Q_CHOICES:
        for r in (r for r in R_CHOICES if r <= r_max):
            pb = max(1, 32 // q)
            # capping registers at 128 lets 16 warps per multiprocessor in: +5% for r = 16-20
            # score-only
            cap = 128 if r_max > R_MAX_TRACE and 16 <= r <= 20 else None
            out.append(Config(q=q, r=r, pb=pb, num_warps=max(1, pb * q // 32), maxnreg=cap))
    return tuple(out)


def launch_bytes(budget: int | None, dev: torch.device) -> int:
    """Bytes one launch's buffers may take: :data:`LAUNCH_SHARE` of ``budget`` (the caller's,
    from ``MemoryBudget.limit``); without one, of the memory free on a GPU, no limit for CPU
    tensors (the interpreter)."""
    if budget is None:
        if dev.type != "cuda":
            return 1 << 62
        budget, _ = torch.cuda.mem_get_info(dev)
    return int(budget * LAUNCH_SHARE)


def plan(
    args: Args,
    trace: bool,
    *,
    budget: int | None = None,
    force_config: Config | None = None,
    packed_tracking: bool = True,
) -> Launch:
    """Group, sort and chunk the pairs of ``args`` into launches.

    Arguments:
        args, trace: the normalised inputs; whether direction bits are kept.
        budget: bytes the caller may use (see :func:`launch_bytes`).
        force_config: one launch shape for every group instead of :func:`choose_config`'s.
        packed_tracking: track best cells as packed keys when the scores are small enough
            (``False``: always as a value and a column; same results).
    """
    dev = args.n.device
    n, m = args.sizes
    P = len(n)
    _check_lengths(args, n, m)
    lanes = _lanes(dev)
    budget = launch_bytes(budget, dev)
    # launch shapes by length class (factors of 4) on a GPU; one class on the CPU (the
    # interpreter pays per launch, not per lane)
    launch = Launch(packed=packed_tracking and _packed(args, n, m))
    r_max = r_cap(args.profile, trace)
    for members in _length_groups(n, dev.type == "cuda"):
        n_g, m_g = n[members], m[members]
        cfg = choose_config(int(n_g.max()), int(-(-m_g.sum() // len(m_g))), P, lanes, r_max,
                            force_config)  # fmt: skip
        passes = -(-n_g // (cfg.q * cfg.r))
        sort = _shape_order(n_g, m_g, passes)
        members, passes = members[sort], passes[sort]
        width = max(1, int(passes.max()) * cfg.q * cfg.r)  # query-profile rows programs read
        tr = (-(-n[members] // cfg.r)) * m[members] * (-(-cfg.r // 8)) if trace else 0 * passes
        hb = np.where(passes > 1, m[members], 0)
        qp = 0 if args.profile else args.matrix.shape[0] * -(-width // (32 // args.eb))
        need = 4 * (tr + 2 * hb + qp) + 64  # bytes per pair
        ends = np.cumsum(need)
        start = 0
        while start < len(members):
            base = ends[start - 1] if start else 0
            stop = int(np.searchsorted(ends, base + budget, side="right"))
            if stop == start:
                p = int(members[start])
                raise ResourceError(
                    f"DP of pair {p} ({n[p]} x {m[p]} cells)",
                    int(need[start]),
                    budget,
                    "align shorter sequences or free device memory (score-only runs store no "
                    "direction bits)",
                )
            part = slice(start, stop)
            idx = members[part]
            chunk = _chunk(idx, cfg, width, tr[part], hb[part], int(np.max(n[idx] + m[idx])))
            launch.chunks.append(chunk)
            start = stop
    return launch


def _length_groups(n: np.ndarray, by_length: bool) -> list[np.ndarray]:
    """Pair indices by length class of ``a`` (powers of four; one class where not
    ``by_length``), classes in increasing order, indices increasing in each."""
    if not by_length or len(n) == 0:
        return [np.arange(len(n))]
    group = (np.ceil(np.log2(np.maximum(n, 1)) / 2)).astype(np.int64)
    lo, hi = int(group.min()), int(group.max())
    if lo == hi:
        return [np.arange(len(n))]
    order = np.argsort(group, kind="stable")
    counts = np.bincount(group - lo)
    return [part for part in np.split(order, np.cumsum(counts)[:-1]) if len(part)]


def _shape_order(n: np.ndarray, m: np.ndarray, passes: np.ndarray) -> np.ndarray:
    """The order of ``np.lexsort((n, m, passes))`` (by passes, then m, then n, ties by index),
    through one stable sort of a packed key where the values fit in it."""
    if (
        len(n)
        and int(n.max()) < (1 << 21)
        and int(m.max()) < (1 << 21)
        and int(passes.max()) < (1 << 21)
    ):
        key = (passes << 42) | (m << 21) | n
        return np.argsort(key, kind="stable")
    return np.lexsort((n, m, passes))


def _check_lengths(args: Args, n: np.ndarray, m: np.ndarray) -> None:
    """Lengths must lie inside the code tensors (pairwise) or at least be non-negative."""
    widths = (None, None) if args.profile else (args.codes_a.shape[1], args.b_stride)
    for name, lengths, width in (("len_a", n, widths[0]), ("len_b", m, widths[1])):
        bad = np.nonzero((lengths < 0) | (width is not None and lengths > width))[0]
        if len(bad):
            p = int(bad[0])
            limit = "must not be negative" if width is None else f"must lie in 0..{width}"
            raise ArgumentError(
                f"`{name}[{p}]` is {lengths[p]} but {limit} (the codes tensor's width); pass "
                f"each pair's true length"
            )


def _packed(args: Args, n: np.ndarray, m: np.ndarray) -> bool:
    """Whether every H of the call fits a packed key (``|H| <= max|S| * min(n, m)``)."""
    if args.mode == GLOBAL or len(n) == 0:
        return False
    longest = int(np.max(np.minimum(n, m)))
    return int(m.max()) < KEY_COLUMN_LIMIT and args.vmax * longest < KEY_SCORE_LIMIT


def _chunk(idx, cfg, width, tr_words, hb_words, longest) -> Chunk:
    """A launch over pairs ``idx``; buffer offsets in words, by slot (position in ``idx``)."""
    return Chunk(
        order=idx.astype(np.int64),
        config=cfg,
        width_a=width,
        hb_off=np.cumsum(hb_words) - hb_words,
        hb_size=int(np.sum(hb_words)),
        tr_off=np.cumsum(tr_words) - tr_words,
        tr_size=int(np.sum(tr_words)),
        longest=longest,
    )
