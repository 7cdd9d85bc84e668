"""Affine-gap DP on the GPU (Triton): the launchers twin ``torchmsa/cpu/dp.py``.

``pairwise_score``, ``pairwise_align`` and ``profile_align`` take and return what their CPU
twins do (same dtypes and shapes), on the inputs' device, and give bit-identical results: the
same recurrence, boundary conditions and tie rule (see ``cpu/dp.py``). The kernels live in
``dp_fill.py`` (wavefront forward pass, optional direction bits) and ``dp_traceback.py``; the
batch planning (length sorting, launch shapes, memory) in ``dp_plan.py``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from torchmsa._triton import dp_plan
from torchmsa._triton.dp_fill import launch_fill
from torchmsa._triton.dp_query import launch_query_profile
from torchmsa._triton.dp_traceback import launch_ops_forward, launch_traceback
from torchmsa._triton.host import to_device

__all__ = ["pairwise_score", "pairwise_align", "profile_align", "prepare"]

TB = 32  # pairs per traceback program (one lane each)
OPS_BLOCK = 256  # ops per program of the forward copy
QP_WORDS = 64  # query-profile words per program


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _query_profile(args: dp_plan.Args, order: torch.Tensor, width: int):
    """``(int32 [len(order), A, WPR], WPR)``: the query profiles (see ``dp_query.py``) of the
    pairs ``order`` with ``width`` rows, scores shifted by ``+ gap_open`` (the fill kernel's
    lanes keep ``H - gap_open``)."""
    per = 32 // args.eb
    A = args.matrix.shape[0]
    wpr = max(1, _cdiv(width, per))
    qp = torch.empty((len(order), A, wpr), dtype=torch.int32, device=order.device)
    launch_query_profile(
        (len(order), _cdiv(wpr, QP_WORDS)),
        args.codes_a, args.codes_a.shape[1], args.n, order, args.matrix, args.gap_open, qp, A,
        wpr, EB=args.eb, BW=QP_WORDS,
    )  # fmt: skip
    return qp, wpr


def prepare(
    args: dp_plan.Args,
    trace: bool,
    *,
    budget: int | None = None,
    force_config: dp_plan.Config | None = None,
    packed_tracking: bool = True,
):
    """Outputs and kernel launches for every chunk of the plan (options as ``dp_plan.plan``).

    Returns:
        ``(fill_out int32 [P, 3], tb_out int32 [P, 3] or None, launches)``: calling each of
        ``launches`` in order fills the two outputs and returns the compiled kernel (the
        benchmark times them alone and reads their register counts). A chunk's buffers are
        allocated when its fill runs and dropped after its traceback, so only one chunk's
        buffers exist at a time.
    """
    launch = dp_plan.plan(
        args, trace, budget=budget, force_config=force_config, packed_tracking=packed_tracking
    )
    dev = args.n.device
    P = args.n.shape[0]
    fill_out = torch.empty((P, 3), dtype=torch.int32, device=dev)
    tb_out = torch.empty((P, 3), dtype=torch.int32, device=dev) if trace else None
    tmp = torch.empty_like(args.ops) if trace else None  # backward ops, shared by the chunks
    calls: list[Callable[[], object]] = []
    for chunk in launch.chunks:
        calls += _chunk_calls(args, launch, chunk, fill_out, tb_out, tmp)
    return fill_out, tb_out, calls


def _chunk_calls(args, launch, chunk, fill_out, tb_out, tmp):
    """``[fill]`` or ``[fill, traceback]`` launches of one chunk (``tmp`` given: traceback)."""
    dev = args.n.device
    cfg = chunk.config
    trace = tmp is not None
    # one copy to the device: pair index, direction-bit and horizontal-buffer offsets by slot,
    # rows padded to an even length so that each starts 16-byte aligned (Triton compiles a
    # kernel variant per pointer alignment: an odd count would compile a second one)
    count = len(chunk.order)
    meta = np.zeros((3, count + count % 2), np.int64)
    meta[:, :count] = chunk.order, chunk.tr_off, chunk.hb_off
    meta = to_device(meta, dev)
    order, tr_off, hb_off = meta[0], meta[1], meta[2]
    tune = {} if cfg.maxnreg is None else {"maxnreg": cfg.maxnreg}
    bits = {}

    def fill():
        if args.profile:
            sc, sc_off, wpr, a_count, eb = args.S, args.s_off, 1, 1, 32
        else:
            sc, wpr = _query_profile(args, order[:count], chunk.width_a)
            sc_off, a_count, eb = order, args.matrix.shape[0], args.eb
        hb_h = torch.empty(max(1, chunk.hb_size), dtype=torch.int32, device=dev)
        hb_f = torch.empty_like(hb_h)
        tr = torch.empty(max(1, chunk.tr_size if trace else 1), dtype=torch.int32, device=dev)
        bits["tr"] = tr
        return launch_fill(
            (_cdiv(count, cfg.pb),),
            sc, sc_off, args.codes_b, args.b_stride, args.n, args.m,
            args.open_a, args.close_a, args.res_a, args.a_off, args.open_b, args.close_b,
            args.res_b, args.b_off,
            args.gap_open, args.ext, hb_h, hb_f, hb_off, tr, tr_off, order, fill_out,
            count, wpr, a_count,
            MODE=args.mode, PROFILE=args.profile, TRACE=trace, Q=cfg.q, R=cfg.r, PB=cfg.pb,
            EB=eb, PACKED=launch.packed, num_warps=cfg.num_warps, **tune,
        )  # fmt: skip

    def traceback():
        tr = bits.pop("tr")
        kernel = launch_traceback(
            (_cdiv(count, TB),),
            tr, tr_off, args.n, args.m, fill_out, tmp, args.ops_off, tb_out, order, count,
            MODE=args.mode, R=cfg.r, TB=TB, num_warps=1,
        )  # fmt: skip
        launch_ops_forward(
            (count, _cdiv(max(1, chunk.longest), OPS_BLOCK)),
            tmp, args.ops, args.ops_off, args.n, args.m, tb_out, order, BLOCK=OPS_BLOCK,
            num_warps=2,
        )  # fmt: skip
        return kernel

    return [fill, traceback] if trace else [fill]


def _run(args: dp_plan.Args, trace: bool, options: dict):
    fill_out, tb_out, calls = prepare(args, trace, **options)
    for call in calls:
        call()
    return fill_out, tb_out


def _info(fill_out: torch.Tensor, tb_out: torch.Tensor) -> torch.Tensor:
    """``(score, n_ops, start_i, start_j, end_i, end_j)`` from the two kernels' outputs."""
    cols = [fill_out[:, 0], tb_out[:, 0], tb_out[:, 1], tb_out[:, 2], fill_out[:, 1:]]
    return torch.cat([c.reshape(len(fill_out), -1) for c in cols], dim=1).contiguous()


def pairwise_score(
    codes_a,
    len_a,
    codes_b,
    len_b,
    matrix,
    gap_open,
    gap_extend,
    mode,
    *,
    budget: int | None = None,
    force_config: dp_plan.Config | None = None,
    packed_tracking: bool = True,
    sizes=None,
):
    """Scores of pairs ``(codes_a[p, :len_a[p]], codes_b[p, :len_b[p]])``.

    Arguments:
        codes_a, codes_b: ``uint8 [P, La]``, ``uint8 [P, Lb]`` residue codes.
        len_a, len_b: ``int32 [P]`` lengths.
        matrix: ``int32 [A, A]`` substitution scores (on the host, it is read there and copied
            without waiting for the device).
        gap_open, gap_extend: ``int`` costs.
        mode: ``GLOBAL``, ``LOCAL`` or ``SEMIGLOBAL``.
        budget: bytes the call may plan for (``torchmsa.ops`` passes ``MemoryBudget``'s
            figure); ``None``: the memory free on a GPU, no limit for CPU tensors.
        force_config, packed_tracking: launch options (tests, benchmarks): see
            ``dp_plan.plan``; results do not depend on them.
        sizes: ``int64 [2, P]``, ``len_a`` and ``len_b`` on the host where the caller has
            them (else copied from the device: one wait).

    Returns:
        ``int32 [P, 3]`` on the inputs' device: score, end_i, end_j.
    """
    args = dp_plan.pair_args(
        codes_a, len_a, codes_b, len_b, matrix, gap_open, gap_extend, mode, sizes=sizes
    )
    if args.n.shape[0] == 0:
        return torch.empty((0, 3), dtype=torch.int32, device=args.n.device)
    options = dict(budget=budget, force_config=force_config, packed_tracking=packed_tracking)
    fill_out, _ = _run(args, False, options)
    return fill_out


def pairwise_align(
    codes_a,
    len_a,
    codes_b,
    len_b,
    matrix,
    gap_open,
    gap_extend,
    mode,
    *,
    budget: int | None = None,
    force_config: dp_plan.Config | None = None,
    packed_tracking: bool = True,
    sizes=None,
):
    """Alignments of pairs (arguments as :func:`pairwise_score`).

    Returns:
        ``(info int32 [P, 6], ops uint8 [P, La + Lb])`` on the inputs' device; info is
        ``(score, n_ops, start_i, start_j, end_i, end_j)`` and ``ops[p, :n_ops]`` the pair's
        ops in order.
    """
    args = dp_plan.pair_args(
        codes_a, len_a, codes_b, len_b, matrix, gap_open, gap_extend, mode, sizes=sizes
    )
    P, dev = args.n.shape[0], args.n.device
    width = codes_a.shape[1] + codes_b.shape[1]
    args.ops = torch.zeros((P, max(1, width)), dtype=torch.uint8, device=dev)
    args.ops_off = torch.arange(P, dtype=torch.int64, device=dev) * args.ops.shape[1]
    if P == 0:
        return torch.empty((0, 6), dtype=torch.int32, device=dev), args.ops[:, :width]
    options = dict(budget=budget, force_config=force_config, packed_tracking=packed_tracking)
    fill_out, tb_out = _run(args, True, options)
    return _info(fill_out, tb_out), args.ops[:, :width]


def profile_align(
    S,
    s_off,
    n,
    m,
    open_a,
    close_a,
    a_off,
    open_b,
    close_b,
    b_off,
    ext,
    mode,
    res_a=None,
    res_b=None,
    *,
    budget: int | None = None,
    force_config: dp_plan.Config | None = None,
    packed_tracking: bool = True,
):
    """Many profile-profile alignments from packed buffers.

    Arguments:
        S: ``int32 [sum(n*m)]`` row-major score matrices, pair p's at ``s_off[p]``.
        s_off: ``int64 [P]``.
        n, m: ``int32 [P]`` column counts of each pair's two profiles.
        open_a, close_a: ``int32 [sum(n+1)]`` boundary gap costs of the first profiles, pair
            p's at ``a_off[p]`` (``int64 [P]``).
        open_b, close_b, b_off: the same for the second profiles.
        ext: ``int`` gap extension cost.
        mode: ``GLOBAL``, ``LOCAL`` or ``SEMIGLOBAL``.
        res_a, res_b: ``int32`` residue factors of the columns (as in ``cpu/dp.py``), laid out
            as ``open_a`` and ``open_b``; ``None``: every factor ``RES_ONE``.
        budget: bytes the call may plan for (``torchmsa.ops`` passes ``MemoryBudget``'s
            figure); ``None``: the memory free on a GPU, no limit for CPU tensors.
        force_config, packed_tracking: launch options (tests, benchmarks): see
            ``dp_plan.plan``; results do not depend on them.
        sizes: ``int64 [2, P]``, ``len_a`` and ``len_b`` on the host where the caller has
            them (else copied from the device: one wait).

    Returns:
        ``(info int32 [P, 6], ops uint8 [sum(n+m)], ops_off int64 [P])`` on the inputs'
        device; pair p's ops are ``ops[ops_off[p] : ops_off[p] + info[p, 1]]``.
    """
    dev = S.device
    args = dp_plan.profile_args(
        S, s_off, n, m, open_a, close_a, a_off, open_b, close_b, b_off, ext, mode, res_a, res_b
    )
    host = args.sizes.sum(0)
    total = int(host.sum())
    ops_off = to_device(np.cumsum(host) - host, dev)
    args.ops = torch.zeros(max(1, total), dtype=torch.uint8, device=dev)
    args.ops_off = ops_off
    if args.n.numel() == 0:
        return torch.empty((0, 6), dtype=torch.int32, device=dev), args.ops[:total], ops_off
    options = dict(budget=budget, force_config=force_config, packed_tracking=packed_tracking)
    fill_out, tb_out = _run(args, True, options)
    return _info(fill_out, tb_out), args.ops[:total], ops_off
