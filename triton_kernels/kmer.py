"""k-mer ids and shared k-mer counts on the GPU (Triton): the twin of ``torchmsa/cpu/kmer.py``.

``kmer_ids`` and ``pair_counts`` take and return what their CPU twins do and give the same
integers. Shared counts of all pairs are computed in tiles (``gemm_tile``, ``lists_tile``) that
``torchmsa/ops/kmer_stream.py`` plans and assembles (the twin of ``cpu.kmer.shared_counts``),
in two formulations, both over *occurrence keys*: the o-th copy (o = 0, 1, ...) of k-mer x in
a sequence is the key ``(x, o)``, so that ``sum_x min(count_a(x), count_b(x))`` is the number
of keys two sequences share, and each key present anywhere in the call gets a column of a
binary indicator matrix ``X [N, K]`` (``kmer_stream`` builds the columns and the strips of X):

* ``matrix``: ``counts = X_a @ X_b^T``, int8 tensor-core products with int32 accumulation
  (exact: 0/1 operands, sums at most the number of k-mers of a sequence);
* ``lists``: the seed-002 formulation, each sequence of a as its sorted key list, looked up in
  the rows of ``X_b^T [K, Nb]`` (one coalesced row of references per key); four references
  share an int32 word, whose bytes count at most 255 steps before they are flushed.

``pair_counts`` counts arbitrary pairs (PartTree's groups) by merging two sorted id lists per
pair, one lane per pair. Nothing is accumulated with atomics, so results are deterministic.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from torchmsa import constants
from torchmsa.errors import ArgumentError, check_codes

__all__ = [
    "PAD",
    "GEMM_CONFIGS",
    "kmer_ids",
    "pair_counts",
    "gemm_tile",
    "lists_tile",
    "mirror_lower",
]

PAD = constants.PAD
# the kernels' copies of the shared values
PAD_ID: tl.constexpr = tl.constexpr(constants.PAD)
NOT_COUNTED: tl.constexpr = tl.constexpr(constants.NOT_COUNTED)
# BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, num_warps, num_stages; the first entry is the default
# (benchmarks/kmer_gpu.py --sweep times them all); the interpreter pays per operation
GEMM_CONFIGS = [
    (128, 128, 128, 8, 8, 4),
    (128, 256, 128, 8, 8, 3),
    (256, 128, 128, 8, 8, 3),
    (128, 128, 256, 8, 8, 3),
    (64, 128, 128, 8, 4, 4),
]
INTERPRETER_GEMM = (16, 16, 64, 1, 1, 1)
LISTS_BLOCK = (32, 32)  # BLOCK_M sequences of a, BLOCK_W words (4 references each) of b
PAIRS_BLOCK = 128
IDS_BLOCK = 128
MIRROR_BLOCK = 64


def _interpreted(t: torch.Tensor) -> bool:
    return t.device.type != "cuda"


@triton.jit(do_not_specialize=["W", "stride_c", "stride_i"])
def _kmer_ids_fwd_kernel(
    codes,
    lengths,
    reduced,
    ids,
    W,
    stride_c,
    stride_i,
    K: tl.constexpr,
    BASE: tl.constexpr,
    BLOCK: tl.constexpr,
):
    # program (s, block of window starts)
    i_s = tl.program_id(0).to(tl.int64)
    o_p = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    n = tl.load(lengths + i_s)
    m_p = o_p + K <= n
    ok = m_p
    v = tl.zeros([BLOCK], dtype=tl.int32)
    for j in tl.static_range(K):
        c = tl.load(codes + i_s * stride_c + o_p + j, mask=m_p, other=0).to(tl.int32)
        g = tl.load(reduced + c, mask=m_p, other=NOT_COUNTED).to(tl.int32)
        ok = ok & (g != NOT_COUNTED)
        v = v * BASE + tl.where(g == NOT_COUNTED, 0, g)
    tl.store(ids + i_s * stride_i + o_p, tl.where(ok, v, PAD_ID), mask=o_p < W)


def kmer_ids(codes, lengths, reduced, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Sorted k-mer id lists, as :func:`torchmsa.cpu.kmer.kmer_ids`, on the device of ``codes``.

    Arguments:
        codes: ``uint8 [N, L]`` residue codes.
        lengths: ``int32 [N]`` sequence lengths.
        reduced: ``uint8 [A + 1]`` group of each code (255 = not counted).
        k: k-mer length.

    Returns:
        ``(ids int32 [N, max(1, L - k + 1)], n int32 [N])``, rows ascending then :data:`PAD`.
    """
    dev = codes.device
    red = reduced.detach().cpu()
    if red.dtype != torch.uint8 or red.dim() != 1:
        raise ArgumentError(f"`reduced` must be a 1-D uint8 map; got {red.dtype} {red.shape}")
    check_codes(codes, lengths)
    groups = red[red != constants.NOT_COUNTED]
    base = int(groups.max()) + 1 if groups.numel() else 1
    if k < 1 or base**k >= PAD:
        raise ArgumentError(
            f"Invalid value for `k` argument: {k!r}; use 1 <= k with {base} ** k < 2**31 - 1"
        )
    lengths = lengths.to(device=dev, dtype=torch.int32).contiguous()
    if codes.numel() and int(codes.max()) >= red.shape[0]:
        raise ArgumentError(
            f"a residue code ({int(codes.max())}) lies outside the reduced map of "
            f"{red.shape[0]} entries; the map needs one entry per code and the gap code"
        )
    codes = codes.contiguous()
    n_seq, width = codes.shape[0], max(1, codes.shape[1] - k + 1)
    ids = torch.empty((n_seq, width), dtype=torch.int32, device=dev)
    if n_seq:
        grid = (n_seq, triton.cdiv(width, IDS_BLOCK))
        _kmer_ids_fwd_kernel[grid](
            codes,
            lengths,
            red.to(dev),
            ids,
            width,
            codes.stride(0),
            ids.stride(0),
            K=int(k),
            BASE=base,
            BLOCK=IDS_BLOCK,
        )
    ids = torch.sort(ids, dim=1).values
    return ids, (ids != PAD).sum(1, dtype=torch.int32)


@triton.jit(do_not_specialize=["M", "N", "stride_o"])  # K, strides a/b: padded
def _kmer_gemm_fwd_kernel(
    xa,
    xb,
    out,
    M,
    N,
    K,
    stride_a,
    stride_b,
    stride_o,
    TRIANGLE: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
):
    # xa int8 [>= M rounded up to BLOCK_M, K], xb int8 [>= N rounded up to BLOCK_N, K]: zero
    # padded rows, K a multiple of BLOCK_K, so the loop loads without masks
    pid = tl.program_id(0)
    num_m = tl.cdiv(M, BLOCK_M)
    num_n = tl.cdiv(N, BLOCK_N)
    per_group = GROUP_M * num_n
    first_m = (pid // per_group) * GROUP_M
    size_m = min(num_m - first_m, GROUP_M)
    pid_m = first_m + (pid % per_group) % size_m
    pid_n = (pid % per_group) // size_m
    if TRIANGLE:
        # all pairs of one strip: blocks wholly below the diagonal are mirrored later
        if pid_m * BLOCK_M > pid_n * BLOCK_N + BLOCK_N - 1:
            return
    o_m = pid_m.to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    o_n = pid_n.to(tl.int64) * BLOCK_N + tl.arange(0, BLOCK_N)
    o_k = tl.arange(0, BLOCK_K)
    p_a = xa + o_m[:, None] * stride_a + o_k[None, :]  # [BM, BK]
    p_b = xb + o_n[None, :] * stride_b + o_k[:, None]  # [BK, BN]
    b_acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.int32)
    for _ in range(0, K, BLOCK_K):
        b_a = tl.load(p_a)
        b_b = tl.load(p_b)
        b_acc = tl.dot(b_a, b_b, b_acc, out_dtype=tl.int32)
        p_a += BLOCK_K
        p_b += BLOCK_K
    m_o = (o_m[:, None] < M) & (o_n[None, :] < N)
    tl.store(out + o_m[:, None] * stride_o + o_n[None, :], b_acc, mask=m_o)


def gemm_tile(xa, xb, out, m: int, n: int, triangle: bool = False, config=None) -> None:
    """``out[:m, :n] = xa[:m] @ xb[:n]^T`` for binary int8 strips (the ``matrix`` method).

    Arguments:
        xa: ``int8 [Ma, K]`` rows zero-padded to a multiple of 256, ``K`` a multiple of 256.
        xb: ``int8 [Mb, K]``, padded the same way.
        out: ``int32 [>= m, >= n]`` with unit column stride.
        m, n: the rows of ``xa`` and ``xb`` that hold sequences.
        triangle: ``xa`` is ``xb`` and only ``out[r, c]`` for ``r <= c`` is needed (blocks
            below the diagonal are skipped; :func:`mirror_lower` fills them).
        config: an entry of :data:`GEMM_CONFIGS` (default: the first; the interpreter uses
            small blocks).
    """
    if config is None:
        config = INTERPRETER_GEMM if _interpreted(xa) else GEMM_CONFIGS[0]
    bm, bn, bk, gm, warps, stages = config
    if m == 0 or n == 0:
        return
    grid = (triton.cdiv(m, bm) * triton.cdiv(n, bn),)
    _kmer_gemm_fwd_kernel[grid](
        xa,
        xb,
        out,
        m,
        n,
        xa.shape[1],
        xa.stride(0),
        xb.stride(0),
        out.stride(0),
        TRIANGLE=triangle,
        BLOCK_M=bm,
        BLOCK_N=bn,
        BLOCK_K=bk,
        GROUP_M=gm,
        num_warps=warps,
        num_stages=stages,
    )


@triton.jit(do_not_specialize=["M", "NW", "N", "stride_c", "stride_x", "stride_o"])
def _kmer_lists_fwd_kernel(
    cols,
    n_keys,
    xt,
    out,
    M,
    NW,
    N,
    stride_c,
    stride_x,
    stride_o,
    TRIANGLE: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_W: tl.constexpr,
):
    # cols int32 [M, W]: each sequence's sorted key columns; xt int32 [K, NW]: X_b^T with
    # the 0/1 bytes of references 4w .. 4w + 3 in word w (little-endian)
    pid_m = tl.program_id(0)
    pid_w = tl.program_id(1)
    if TRIANGLE:
        if pid_m * BLOCK_M > (pid_w + 1) * BLOCK_W * 4 - 1:
            return
    o_m = pid_m.to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    o_w = pid_w.to(tl.int64) * BLOCK_W + tl.arange(0, BLOCK_W)
    m_m = o_m < M
    m_w = o_w < NW
    b_n = tl.load(n_keys + o_m, mask=m_m, other=0)
    steps = tl.max(b_n, axis=0)
    b_0 = tl.zeros((BLOCK_M, BLOCK_W), dtype=tl.int32)
    b_1 = tl.zeros((BLOCK_M, BLOCK_W), dtype=tl.int32)
    b_2 = tl.zeros((BLOCK_M, BLOCK_W), dtype=tl.int32)
    b_3 = tl.zeros((BLOCK_M, BLOCK_W), dtype=tl.int32)
    for j0 in range(0, steps, 255):
        # each byte of b_acc grows by at most 1 a step: no carry within 255 steps
        b_acc = tl.zeros((BLOCK_M, BLOCK_W), dtype=tl.int32)
        for j in range(j0, tl.minimum(j0 + 255, steps)):
            m_j = m_m & (j < b_n)
            b_c = tl.load(cols + o_m * stride_c + j, mask=m_j, other=0).to(tl.int64)  # [BM]
            p_x = xt + b_c[:, None] * stride_x + o_w[None, :]  # [BM, BW]
            b_acc += tl.load(p_x, mask=m_j[:, None] & m_w[None, :], other=0)
        b_0 += b_acc & 255
        b_1 += (b_acc >> 8) & 255
        b_2 += (b_acc >> 16) & 255
        b_3 += (b_acc >> 24) & 255
    p_o = out + o_m[:, None] * stride_o + 4 * o_w[None, :]
    tl.store(p_o, b_0, mask=m_m[:, None] & (4 * o_w[None, :] < N))
    tl.store(p_o + 1, b_1, mask=m_m[:, None] & (4 * o_w[None, :] + 1 < N))
    tl.store(p_o + 2, b_2, mask=m_m[:, None] & (4 * o_w[None, :] + 2 < N))
    tl.store(p_o + 3, b_3, mask=m_m[:, None] & (4 * o_w[None, :] + 3 < N))


def lists_tile(cols, n_keys, xt, out, n: int, triangle: bool = False) -> None:
    """``out[p, q] = sum_j xt[cols[p, j], q]`` over ``j < n_keys[p]`` (the ``lists`` method).

    Arguments:
        cols: ``int32 [M, W]`` key columns of the sequences of a, ascending.
        n_keys: ``int32 [M]`` keys per sequence.
        xt: ``int8 [K, NB]`` indicator of b transposed, ``NB`` a multiple of 4.
        out: ``int32 [>= M, >= n]`` with unit column stride.
        n: the columns of ``xt`` that hold sequences.
        triangle: ``cols`` and ``xt`` describe the same sequences and only ``out[r, c]`` for
            ``r <= c`` is needed (see :func:`gemm_tile`).
    """
    m = cols.shape[0]
    if m == 0 or n == 0:
        return
    bm, bw = (16, 4) if _interpreted(cols) else LISTS_BLOCK
    words = xt.view(torch.int32)
    grid = (triton.cdiv(m, bm), triton.cdiv(triton.cdiv(n, 4), bw))
    _kmer_lists_fwd_kernel[grid](
        cols,
        n_keys,
        words,
        out,
        m,
        words.shape[1],
        n,
        cols.stride(0),
        words.stride(0),
        out.stride(0),
        TRIANGLE=triangle,
        BLOCK_M=bm,
        BLOCK_W=bw,
    )


@triton.jit(do_not_specialize=["T", "stride_o"])
def _kmer_mirror_fwd_kernel(out, T, stride_o, BLOCK: tl.constexpr):
    # out[r, c] = out[c, r] for r > c, block (I, J) with I >= J from block (J, I)
    pid_i = tl.program_id(0)
    pid_j = tl.program_id(1)
    if pid_i < pid_j:
        return
    o_r = pid_i.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    o_c = pid_j.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    m_o = (o_r[:, None] < T) & (o_c[None, :] < T)
    lower = o_r[:, None] > o_c[None, :]
    b_src = tl.load(out + o_c[None, :] * stride_o + o_r[:, None], mask=m_o & lower, other=0)
    tl.store(out + o_r[:, None] * stride_o + o_c[None, :], b_src, mask=m_o & lower)


def mirror_lower(out, t: int) -> None:
    """Copy the strict upper triangle of ``out[:t, :t]`` onto the lower one, in place."""
    if t > 1:
        grid = (triton.cdiv(t, MIRROR_BLOCK), triton.cdiv(t, MIRROR_BLOCK))
        _kmer_mirror_fwd_kernel[grid](out, t, out.stride(0), BLOCK=MIRROR_BLOCK)


@triton.jit(do_not_specialize=["P", "stride_a", "stride_b"])
def _kmer_pairs_fwd_kernel(
    ids_a, len_a, ids_b, len_b, p_idx, q_idx, out, P, stride_a, stride_b, BLOCK: tl.constexpr
):
    # one lane per pair: a merge walk of the two sorted lists, equal heads counted once
    o = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    m = o < P
    p = tl.load(p_idx + o, mask=m, other=0).to(tl.int64)
    q = tl.load(q_idx + o, mask=m, other=0).to(tl.int64)
    na = tl.load(len_a + p, mask=m, other=0)
    nb = tl.load(len_b + q, mask=m, other=0)
    i = tl.zeros([BLOCK], dtype=tl.int32)
    j = tl.zeros([BLOCK], dtype=tl.int32)
    c = tl.zeros([BLOCK], dtype=tl.int32)
    steps = tl.max(na + nb, axis=0)
    for _ in range(0, steps):
        act = (i < na) & (j < nb)
        x = tl.load(ids_a + p * stride_a + i, mask=act, other=0)
        y = tl.load(ids_b + q * stride_b + j, mask=act, other=0)
        c += (act & (x == y)).to(tl.int32)
        i += (act & (x <= y)).to(tl.int32)
        j += (act & (y <= x)).to(tl.int32)
    tl.store(out + o, c, mask=m)


def pair_counts(ids_a, len_a, ids_b, len_b, p, q) -> torch.Tensor:
    """Shared counts of the pairs ``(a[p[t]], b[q[t]])``, as :func:`torchmsa.cpu.kmer.pair_counts`.

    Pairs are sorted by their work (list lengths) so that a program's lanes finish together.

    Returns:
        ``int32 [P]`` on the device of ``ids_a``.
    """
    dev = ids_a.device
    p = torch.as_tensor(p, device=dev).long()
    q = torch.as_tensor(q, device=dev).long()
    len_a = len_a.to(device=dev, dtype=torch.int32).contiguous()
    len_b = len_b.to(device=dev, dtype=torch.int32).contiguous()
    out = torch.empty(p.shape[0], dtype=torch.int32, device=dev)
    if p.numel() == 0:
        return out
    order = torch.argsort(len_a[p] + len_b[q], stable=True)
    sorted_out = torch.empty_like(out)
    grid = (triton.cdiv(p.numel(), PAIRS_BLOCK),)
    _kmer_pairs_fwd_kernel[grid](
        ids_a,
        len_a,
        ids_b,
        len_b,
        p[order].contiguous(),
        q[order].contiguous(),
        sorted_out,
        p.numel(),
        ids_a.stride(0),
        ids_b.stride(0),
        BLOCK=PAIRS_BLOCK,
    )
    out[order] = sorted_out
    return out
