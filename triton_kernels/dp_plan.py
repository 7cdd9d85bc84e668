"""Batch planning for the DP kernels: argument checks, launch shapes, length sorting, memory.

Pairs are grouped by the length of ``a`` (powers of four), each group gets the launch shape
(lanes per pair ``q``, rows per lane ``r``) that a simple cost model likes best, and inside a
group pairs are sorted by passes and ``m`` so that the pairs of one program have similar
shapes (CUDA-LINSi's length sorting). Groups are cut into launches ("chunks") whose buffers
(direction bits, horizontal buffers, query profiles) fit in the memory budget.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from torchmsa.errors import ArgumentError, ResourceError

MODES = (0, 1, 2)
Q_CHOICES = (4, 16, 32)  # a short menu: every launch shape is one more kernel to compile
R_CHOICES = (4, 8, 12, 16, 20, 24)
# rows per lane past which the kernel spills registers on sm_90 (the traceback variant keeps
# the direction bits, the profile variant two gap costs per row)
R_MAX_TRACE = 16
R_MAX_PROFILE = 8
STEP_COST = 6  # per-step work besides the R cells, in cell updates (shuffles, loads, masks)
CPU_BUDGET = 1 << 30  # bytes of buffers per launch when the tensors live on the CPU
CUDA_BUDGET_FRACTION = 0.5  # of the free device memory
FORCE_CONFIG: Config | None = None  # tests pin a launch shape with this
PACKED_TRACKING = True  # best cells as packed keys when the scores are small enough
KEY_SCORE_LIMIT = (1 << 17) - 1  # |H| bound for keys h * 2**14 - j in an int32
KEY_COLUMN_LIMIT = 1 << 14


@dataclass(frozen=True)
class Config:
    """Launch shape: ``q`` lanes per pair, ``r`` rows per lane, ``pb`` pairs per program."""

    q: int
    r: int
    pb: int
    num_warps: int = 1


@dataclass
class Chunk:
    """One launch: pairs ``order`` (global indices), shape, buffer offsets (``[P]`` int64)."""

    order: np.ndarray
    config: Config
    width_a: int
    hb_off: np.ndarray
    hb_size: int
    tr_off: np.ndarray
    tr_size: int


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
    ops: torch.Tensor | None = None
    ops_off: torch.Tensor | None = None


def _mode(mode) -> int:
    if int(mode) not in MODES:
        raise ArgumentError(
            f"Invalid value for `mode` argument: {mode!r}; use GLOBAL (0), LOCAL (1) or "
            f"SEMIGLOBAL (2) from torchmsa.cpu.dp"
        )
    return int(mode)


def _element_bits(matrix: torch.Tensor) -> int:
    """Narrowest of 8 / 16 / 32 bits that holds every substitution score."""
    if matrix.numel() == 0:
        return 8
    lo, hi = int(matrix.min()), int(matrix.max())
    for bits in (8, 16):
        if -(1 << (bits - 1)) <= lo and hi < (1 << (bits - 1)):
            return bits
    return 32


def pair_args(codes_a, len_a, codes_b, len_b, matrix, gap_open, gap_extend, mode) -> Args:
    dev = codes_a.device
    i32 = torch.zeros(1, dtype=torch.int32, device=dev)
    i64 = torch.zeros(1, dtype=torch.int64, device=dev)
    mat = matrix.to(device=dev, dtype=torch.int32).contiguous()
    codes_b = codes_b.to(device=dev, dtype=torch.uint8).contiguous()
    if codes_b.shape[1] == 0:
        codes_b = torch.zeros((codes_b.shape[0], 1), dtype=torch.uint8, device=dev)
    return Args(
        profile=False,
        mode=_mode(mode),
        n=len_a.to(device=dev, dtype=torch.int32).contiguous(),
        m=len_b.to(device=dev, dtype=torch.int32).contiguous(),
        codes_a=codes_a.to(device=dev, dtype=torch.uint8).contiguous(),
        codes_b=codes_b,
        b_stride=codes_b.shape[1],
        matrix=mat,
        eb=_element_bits(mat),
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
    )


def profile_args(S, s_off, n, m, open_a, close_a, a_off, open_b, close_b, b_off, ext, mode):
    dev = S.device

    def i32(t):
        t = t.to(device=dev, dtype=torch.int32).contiguous()
        return t if t.numel() else torch.zeros(1, dtype=torch.int32, device=dev)

    def i64(t):
        return t.to(device=dev, dtype=torch.int64).contiguous()

    return Args(
        profile=True,
        mode=_mode(mode),
        n=n.to(device=dev, dtype=torch.int32).contiguous(),
        m=m.to(device=dev, dtype=torch.int32).contiguous(),
        codes_a=torch.zeros((1, 1), dtype=torch.uint8, device=dev),
        codes_b=torch.zeros((1, 1), dtype=torch.uint8, device=dev),
        b_stride=1,
        matrix=torch.zeros((1, 1), dtype=torch.int32, device=dev),
        eb=32,
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
    )


def _lanes(dev: torch.device) -> int:
    """Lanes the device runs at once (a rough count: 1,024 per multiprocessor)."""
    if dev.type == "cuda":
        return torch.cuda.get_device_properties(dev).multi_processor_count * 1024
    return 1 << 30


def choose_config(n: int, m: int, n_pairs: int, lanes: int, r_max: int) -> Config:
    """The launch shape of least modelled time for pairs of about ``n x m`` cells.

    Time ~ passes * (m + q - 1) steps * (r + STEP_COST) per step * waves of lanes, where a
    pass covers ``q * r`` rows and ``waves = max(1, n_pairs * q / lanes)``.
    """
    if FORCE_CONFIG is not None:
        return FORCE_CONFIG
    best = None
    for q in Q_CHOICES:
        for r in R_CHOICES:
            if r > r_max:
                continue
            passes = max(1, -(-n // (q * r)))
            cost = passes * (m + q - 1) * (r + STEP_COST) * max(1.0, n_pairs * q / lanes)
            if best is None or cost < best[0]:
                best = (cost, q, r)
    _, q, r = best
    pb = max(1, 32 // q)
    return Config(q=q, r=r, pb=pb, num_warps=max(1, pb * q // 32))


def _budget(dev: torch.device) -> int:
    if dev.type == "cuda":
        free, _ = torch.cuda.mem_get_info(dev)
        return int(free * CUDA_BUDGET_FRACTION)
    return CPU_BUDGET


def plan(args: Args, trace: bool) -> Launch:
    """Group, sort and chunk the pairs of ``args`` into launches."""
    dev = args.n.device
    n = args.n.cpu().numpy().astype(np.int64)
    m = args.m.cpu().numpy().astype(np.int64)
    P = len(n)
    lanes = _lanes(dev)
    budget = _budget(dev)
    A = args.matrix.shape[0]
    per = 32 // args.eb
    # launch shapes by length class (factors of 4) on a GPU; one class on the CPU (the
    # interpreter pays per launch, not per lane)
    group = np.ceil(np.log2(np.maximum(n, 1)) / 2).astype(np.int64) if dev.type == "cuda" else 0 * n
    launch = Launch(packed=_packed(args, n, m))
    for g in np.unique(group):
        members = np.nonzero(group == g)[0]
        r_max = R_MAX_PROFILE if args.profile else R_MAX_TRACE if trace else max(R_CHOICES)
        cfg = choose_config(int(n[members].max()), int(np.ceil(m[members].mean())), P, lanes, r_max)
        passes = -(-n[members] // (cfg.q * cfg.r))
        sort = np.lexsort((n[members], m[members], passes))
        members, passes = members[sort], passes[sort]
        nw = -(-cfg.r // 8)
        tr_need = (-(-n[members] // cfg.r)) * m[members] * nw * 4 if trace else 0 * n[members]
        hb_need = np.where(passes > 1, m[members], 0)
        start = 0
        rows = passes * cfg.q * cfg.r  # query-profile rows a program may read
        while start < len(members):
            stop, used, width = start, 0, 0
            while stop < len(members):
                w = max(width, int(rows[stop]))
                qp = 0 if args.profile else A * max(1, -(-w // per)) * 4 * (stop - start + 1)
                need = int(tr_need[stop]) + 8 * int(hb_need[stop]) + 64
                if used + need + qp > budget:
                    break
                used, width, stop = used + need, w, stop + 1
            if stop == start:
                p = int(members[start])
                raise ResourceError(
                    f"DP of pair {p} ({n[p]} x {m[p]} cells)",
                    int(tr_need[start]) + 8 * int(hb_need[start]),
                    budget,
                    "align shorter sequences, free device memory, or use traceback=False",
                )
            idx = members[start:stop]
            launch.chunks.append(
                _chunk(idx, cfg, width, tr_need[start:stop], hb_need[start:stop], P)
            )
            start = stop
    return launch


def _packed(args: Args, n: np.ndarray, m: np.ndarray) -> bool:
    """Whether every H of the call fits a packed key (``|H| <= max|S| * min(n, m)``)."""
    if not PACKED_TRACKING or args.mode == 0 or len(n) == 0:
        return False
    scores = args.S if args.profile else args.matrix
    vmax = int(scores.abs().max()) if scores.numel() else 0
    longest = int(np.max(np.minimum(n, m)))
    return int(m.max()) < KEY_COLUMN_LIMIT and vmax * longest < KEY_SCORE_LIMIT


def _chunk(idx, cfg, width, tr_need, hb_need, P) -> Chunk:
    tr_off = np.zeros(P, np.int64)
    hb_off = np.zeros(P, np.int64)
    tr_words = np.asarray(tr_need, np.int64) // 4
    tr_off[idx] = np.concatenate([[0], np.cumsum(tr_words)[:-1]])
    hb_off[idx] = np.concatenate([[0], np.cumsum(hb_need)[:-1]])
    return Chunk(
        order=idx.astype(np.int32),
        config=cfg,
        width_a=max(1, width),
        hb_off=hb_off,
        hb_size=int(np.sum(hb_need)),
        tr_off=tr_off,
        tr_size=int(np.sum(tr_words)),
    )
