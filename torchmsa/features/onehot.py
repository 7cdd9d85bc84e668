"""Exact match counts between rows of codes, as one-hot matrix products.

``same[i, j] = sum_c [class(a[i, c]) == class(b[j, c]) < K]`` is the product of two ``[n, c*K]``
one-hot matrices. The product's dtype is chosen per device: ``int8`` on the CPU (``torch._int_mm``,
int32 sums, exact; float32 where torch lacks it), ``float16`` on CUDA (tensor cores). Floating
dtypes are exact while no sum exceeds the integers they hold, so columns go in chunks of at most
2048 (float16) or 256 (bfloat16), each chunk's counts added in int64.
"""

from __future__ import annotations

import torch

from torchmsa.errors import ArgumentError

__all__ = [
    "product_dtype",
    "column_chunk",
    "class_table",
    "one_hot_flat",
    "product",
    "match_counts",
]

# the largest count a product in each dtype holds exactly (every partial sum is at most the total)
_EXACT = {torch.int8: 1 << 30, torch.float16: 2048, torch.bfloat16: 256, torch.float32: 1 << 24}
_MAX_CHUNK = 2048


def _has_int_mm() -> bool:
    return hasattr(torch, "_int_mm")


def product_dtype(device: torch.device, dtype: torch.dtype | None = None) -> torch.dtype:
    """The products' dtype: ``dtype``, else float16 on CUDA and int8 (float32 where torch has
    no int8 product) on the CPU."""
    if dtype is None:
        if device.type == "cuda":
            return torch.float16
        return torch.int8 if _has_int_mm() else torch.float32
    if dtype not in _EXACT or (dtype == torch.int8 and (device.type != "cpu" or not _has_int_mm())):
        raise ArgumentError(
            f"Invalid value for `compute_dtype` argument: {dtype!r} on {device.type}; use "
            f"torch.float16, torch.bfloat16, torch.float32, torch.int8 (CPU only) or None"
        )
    return dtype


def column_chunk(dtype: torch.dtype, width: int) -> int:
    """Columns per product: at most 2048, and few enough for exact counts in ``dtype``."""
    return max(1, min(_MAX_CHUNK, _EXACT[dtype], width))


def class_table(codes: torch.Tensor, counted: torch.Tensor) -> tuple[torch.Tensor, int]:
    """``(lut int64 [256], K)``: each code present in ``codes`` and ``counted`` (bool [256])
    gets a class 0..K-1; every other code gets K (not counted)."""
    present = torch.bincount(codes.reshape(-1).long(), minlength=256)[:256] > 0
    present &= counted.to(codes.device)
    k = int(present.sum())
    lut = torch.full((256,), k, dtype=torch.long, device=codes.device)
    lut[present] = torch.arange(k, device=codes.device)
    return lut, k


def one_hot_flat(codes: torch.Tensor, lut: torch.Tensor, k: int, dtype: torch.dtype):
    """``[n, c * K]`` one-hot rows (class-minor); uncounted codes are all-zero."""
    n, c = codes.shape
    idx = lut[codes.long()]  # [n, c]
    flat = torch.where(idx < k, idx + torch.arange(c, device=codes.device) * k, c * k)
    out = torch.zeros((n, c * k + 1), dtype=dtype, device=codes.device)
    out.scatter_(1, flat, 1)
    return out[:, : c * k]


def product(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """``x @ y.T`` (``[n, m]``), exact counts: int32 from int8, else the float dtype."""
    if x.dtype == torch.int8:
        return torch._int_mm(x, y.T)
    return x @ y.T


def match_counts(a, b, lut, k: int, dtype: torch.dtype, chunk: int) -> torch.Tensor:
    """``int64 [n, m]``: columns where rows of ``a`` and ``b`` hold the same counted class."""
    total = torch.zeros((a.shape[0], b.shape[0]), dtype=torch.int64, device=a.device)
    if k == 0:
        return total
    for c0 in range(0, a.shape[1], chunk):
        ha = one_hot_flat(a[:, c0 : c0 + chunk], lut, k, dtype)
        hb = one_hot_flat(b[:, c0 : c0 + chunk], lut, k, dtype)
        total += product(ha, hb).long()
    return total
