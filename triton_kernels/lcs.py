"""LCS lengths of all pairs on the GPU (Triton): the twin of ``torchmsa/cpu/lcs.py``.

The same bit-parallel recurrence, with 32-bit words, in word-major order: a program holds one
sequence b and ``BLOCK_A`` shorter sequences a (one per lane) and runs word w of every a's bit
vector over all of b's residues before word w + 1. The carry that word w passes to word w + 1 at
residue q of b is kept as bit q of a carry row (``[BLOCK_A, CHUNKS]`` words in registers), so
no word ever waits for another inside the residue loop. Sequences are sorted by length first,
so that a lane's a is never longer than b and the lanes of a program have similar lengths.

``M[c]`` is stored as ``int32 [A, W, N]`` (code, word, sequence), so the lanes of a program read
consecutive words. Only pairs a < b (in sorted order) are computed; the other half is the
mirror, and the diagonal is each sequence's length.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from torchmsa.errors import ResourceError, check_codes

__all__ = ["lcs_lengths", "lcs_rows", "sorted_masks", "BLOCK_A"]

BLOCK_A = 128
INTERPRETER_BLOCK_A = 8


@triton.jit
def _popcount(x):
    x = x - ((x >> 1) & 0x55555555)
    x = (x & 0x33333333) + ((x >> 2) & 0x33333333)
    x = (x + (x >> 4)) & 0x0F0F0F0F
    return (x * 0x01010101) >> 24


@triton.jit(do_not_specialize=["N", "W", "stride_c", "stride_o", "row0"])
def _lcs_fwd_kernel(
    codes,
    lengths,
    masks,
    out,
    N,
    W,
    stride_c,
    stride_o,
    row0,
    BLOCK_A: tl.constexpr,
    CHUNKS: tl.constexpr,
):
    # program (sequence b = row0 + its first id, block of sequences a); lanes hold the a < b
    # of the block; b's row of ``out`` is its first id
    i_r = tl.program_id(0).to(tl.int64)
    i_b = i_r + row0
    o_a = tl.program_id(1).to(tl.int64) * BLOCK_A + tl.arange(0, BLOCK_A)
    m_a = o_a < i_b
    len_a = tl.load(lengths + o_a, mask=m_a, other=0)
    len_b = tl.load(lengths + i_b)
    n_words = (tl.max(len_a, axis=0) + 31) // 32
    n_chunks = (len_b + 31) // 32
    b_lim = tl.where(m_a, len_b, 0)  # residues of b each lane reads
    o_ch = tl.arange(0, CHUNKS)
    b_carry = tl.zeros([BLOCK_A, CHUNKS], dtype=tl.int32)  # carries into word w, bit per q
    b_total = tl.zeros([BLOCK_A], dtype=tl.int32)
    for w in range(0, n_words):
        b_v = tl.full([BLOCK_A], 0xFFFFFFFF, dtype=tl.uint32)
        p_m = masks + w * N + o_a
        for ch in range(0, n_chunks):
            m_ch = (o_ch == ch)[None, :]
            b_cin = tl.sum(tl.where(m_ch, b_carry, 0), axis=1).to(tl.uint32, bitcast=True)
            b_cout = tl.zeros([BLOCK_A], dtype=tl.uint32)
            for k in tl.static_range(32):
                q = ch * 32 + k
                c = tl.load(codes + i_b * stride_c + tl.minimum(q, len_b - 1)).to(tl.int64)
                b_m = tl.load(p_m + c * W * N, mask=q < b_lim, other=0)
                b_m = b_m.to(tl.uint32, bitcast=True)
                b_u = b_v & b_m
                b_s = b_v + b_u
                b_t = b_s + ((b_cin >> k) & 1)
                b_c = ((b_s < b_v) | (b_t < b_s)).to(tl.uint32)
                b_cout = b_cout | (b_c << k)
                b_v = b_t | (b_v & ~b_m)
            b_carry = tl.where(m_ch, b_cout.to(tl.int32, bitcast=True)[:, None], b_carry)
        n_bits = len_a - w * 32
        b_keep = tl.where(n_bits >= 32, -1, (1 << tl.minimum(tl.maximum(n_bits, 0), 31)) - 1)
        b_total += _popcount(~b_v & b_keep.to(tl.uint32, bitcast=True)).to(tl.int32)
    tl.store(out + i_r * stride_o + o_a, b_total, mask=m_a)


def _masks(codes: torch.Tensor, lengths: torch.Tensor, n_codes: int, n_words: int):
    """``int32 [n_codes, n_words, N]``: bit p % 32 of word p // 32 set where ``a[p] == c``."""
    n, width = codes.shape
    pos = torch.arange(width, device=codes.device)
    seq, p = torch.nonzero(pos[None, :] < lengths[:, None], as_tuple=True)
    c = codes[seq, p].long()
    flat = (c * n_words + p // 32) * n + seq
    acc = torch.zeros(n_codes * n_words * n, dtype=torch.int64, device=codes.device)
    acc.index_put_((flat,), torch.bitwise_left_shift(torch.ones_like(p), p % 32), accumulate=True)
    acc = torch.where(acc >= 1 << 31, acc - (1 << 32), acc)  # distinct bits: the sum is the OR
    return acc.to(torch.int32).view(n_codes, n_words, n)


def lcs_lengths(
    codes: torch.Tensor,
    lengths: torch.Tensor,
    block_a: int | None = None,
    *,
    budget: int | None = None,
):
    """``int32 [N, N]`` LCS lengths of every pair, as :func:`torchmsa.cpu.lcs.lcs_lengths`.

    Arguments:
        codes: ``uint8 [N, L]`` residue codes on a CUDA device (or the CPU under Triton's
            interpreter).
        lengths: ``int [N]`` sequence lengths on the same device.
        block_a: sequences of a per program (default :data:`BLOCK_A`; small in the
            interpreter).
        budget: bytes the call may use (``torchmsa.ops.lcs`` passes ``MemoryBudget``'s
            figure); ``None``: the memory free on a GPU, no limit for CPU tensors.

    Raises:
        ResourceError: the bit masks and the ``N x N`` outputs do not fit ``budget``.
    """
    check_codes(codes, lengths)
    n, dev = codes.shape[0], codes.device
    if n == 0:
        return torch.zeros(0, 0, dtype=torch.int32, device=dev)
    longest = int(lengths.max())
    n_words = max(1, -(-longest // 32))
    n_codes = int(codes.max()) + 1
    need = 4 * n_codes * n_words * n + 16 * n * n
    if budget is None and dev.type == "cuda":
        budget, _ = torch.cuda.mem_get_info(dev)
    if budget is not None and need > budget:
        raise ResourceError(
            f"LCS lengths of {n} sequences of up to {longest} residues",
            need,
            budget,
            "use tree='upgma_mafft' or 'parttree', or fewer sequences",
        )
    order, s_codes, s_lens, masks, n_words = sorted_masks(codes, lengths)
    low = torch.zeros(n, n, dtype=torch.int32, device=dev)
    block = block_a or (BLOCK_A if dev.type == "cuda" else INTERPRETER_BLOCK_A)
    grid = (n, triton.cdiv(n, block))
    _lcs_fwd_kernel[grid](
        s_codes,
        s_lens,
        masks,
        low,
        n,
        n_words,
        s_codes.stride(0),
        low.stride(0),
        0,
        BLOCK_A=block,
        CHUNKS=triton.next_power_of_2(n_words),
        num_warps=max(1, min(4, block // 32)),
    )
    low += low.T.clone()
    low.diagonal().copy_(s_lens)
    inv = torch.empty_like(order)
    inv[order] = torch.arange(n, device=dev)
    return low.index_select(0, inv).index_select(1, inv)  # back to input order


def sorted_masks(codes: torch.Tensor, lengths: torch.Tensor):
    """``(order, codes, lengths int32, masks, n_words)`` of the sequences sorted by length
    (stable), as :func:`lcs_rows` reads them."""
    check_codes(codes, lengths)
    order = torch.argsort(lengths.to(torch.int64), stable=True)
    s_codes = codes[order].contiguous()
    s_lens = lengths.to(torch.int64)[order].to(torch.int32).contiguous()
    n_words = max(1, -(-int(s_lens[-1]) // 32)) if len(s_lens) else 1
    n_codes = int(s_codes.max()) + 1 if s_codes.numel() else 1
    return order, s_codes, s_lens, _masks(s_codes, s_lens.long(), n_codes, n_words), n_words


def lcs_rows(s_codes, s_lens, masks, n_words: int, r0: int, r1: int, block_a: int | None = None):
    """``int32 [r1 - r0, r1]`` on the device: row t holds the LCS of sorted sequence ``r0 + t``
    with every sorted sequence before it (the rest of the row is 0); the inputs are
    :func:`sorted_masks`'s."""
    n, dev = s_codes.shape[0], s_codes.device
    out = torch.zeros(r1 - r0, r1, dtype=torch.int32, device=dev)
    if r1 <= r0:
        return out
    block = block_a or (BLOCK_A if dev.type == "cuda" else INTERPRETER_BLOCK_A)
    _lcs_fwd_kernel[(r1 - r0, triton.cdiv(r1, block))](
        s_codes,
        s_lens,
        masks,
        out,
        n,
        n_words,
        s_codes.stride(0),
        out.stride(0),
        r0,
        BLOCK_A=block,
        CHUNKS=triton.next_power_of_2(n_words),
        num_warps=max(1, min(4, block // 32)),
    )
    return out
