"""One long global pair in strips (decision 0060): a forward pass over the whole GPU keeps each
strip's last column with the crossings of its paths, the crossings of the end cell's path with
every strip's input column follow from them, and the strips' paths are traced back in parallel,
each in its own rectangle. Memory: ``16 (n + 1)`` bytes per strip of ``W`` columns on the device,
``(n + S) W`` bytes of direction bits on the host.

The result is ``cpu/dp.py``'s global alignment, tie rule included (tests compare the two).
"""

from __future__ import annotations

import numpy as np
import torch

from torchmsa.cpu import strip_global as cpu_global
from torchmsa.errors import ResourceError
from torchmsa.ops.backend import resolve_backend

__all__ = ["LONG_GLOBAL_CELLS", "STRIP_WIDTH", "global_pair", "strip_width"]

STRIP_WIDTH = 256  # columns per strip: tracebacks of (n + S) W cells, checkpoints S (n + 1) 16 B
LONG_GLOBAL_CELLS = 1 << 28  # pairs of at least this many cells take the strips on a GPU
# ... while a batch holds at most this many of them per multiprocessor: the batched kernel runs
# one block a pair, so about 4 pairs a multiprocessor fill the GPU (one-block pairs at 2.7
# GCUPS against the strips' 114 GCUPS for one pair: the strips win below about 40 pairs)
LONG_GLOBAL_PAIRS = 0.25


def strip_width(n: int, m: int, available: int, width: int | None = None) -> int:
    """The narrowest width from ``width`` (default :data:`STRIP_WIDTH`) up, doubling, whose
    checkpoints and traceback bits take at most ``available`` bytes.

    Raises:
        ResourceError: not even one strip of all ``m`` columns fits.
    """
    W = max(1, width or STRIP_WIDTH)
    while True:
        S = -(-m // W)
        need = S * 16 * (n + 1) + (n + S) * W
        if need <= available or W >= m:
            break
        W *= 2
    if need > available:
        raise ResourceError(
            f"the strips of a global alignment of {n} x {m} residues ({S} strips of {W} columns)",
            need,
            available,
            "raise the memory budget",
        )
    return W


def global_pair(
    q, s, mat_np: np.ndarray, go: int, ge: int, available: int, width=None, backend="auto",
    traceback: bool = True,
):  # fmt: skip
    """The global alignment of ``q`` (rows) and ``s`` (columns), codes on one device (Triton
    on CUDA, numba on the CPU): ``(score, ops)``, ``ops`` a ``uint8`` numpy array in order.

    Arguments:
        q, s: ``uint8 [n]``, ``uint8 [m]`` codes (both ``>= 1`` long).
        mat_np: ``int32 [A, A]`` scores; go, ge: gap costs.
        available: bytes the checkpoints may take (they live on the codes' device).
        width: the strip width to start from (``None``: :data:`STRIP_WIDTH`).
        backend: ``"auto"`` (Triton on CUDA, numba on the CPU), ``"triton"`` or ``"cpu"``.
        traceback: ``False``: the score only (``ops`` is ``None``).
    """
    dev = q.device
    n, m = q.shape[0], s.shape[0]
    W = strip_width(n, m, available, width)
    S = -(-m // W)
    ckpt = torch.empty((S, 4, n + 1), dtype=torch.int32, device=dev)
    col0 = torch.from_numpy(cpu_global.first_column(n, go, ge)).to(dev)
    triton = resolve_backend(backend, dev) == "triton"
    mat = torch.from_numpy(mat_np).to(dev)
    lo, hi = torch.zeros(1, dtype=torch.int32), torch.full((1,), S, dtype=torch.int32)
    slot = torch.zeros(1, dtype=torch.int64)
    if triton:
        from torchmsa._triton import strip as triton_strip

        args = (q, s, mat, go, ge, W, lo.to(dev), hi.to(dev), col0[None], slot.to(dev), ckpt)
        shape = triton_strip.GLOBAL_SHAPE
        triton_strip.global_strip_fill(*args, shape=shape if n > shape[0] * shape[1] else None)
    else:
        args = (q.cpu().numpy(), s.cpu().numpy(), mat_np, go, ge, W, lo.numpy(), hi.numpy())
        out = ckpt.cpu().numpy()  # the store itself when the codes are on the CPU
        cpu_global.global_strip_fill(*args, col0[None].cpu().numpy(), slot.numpy(), out)
        ckpt = torch.from_numpy(out).to(dev)
    score = int(ckpt[S - 1, 0, n])
    if not traceback:
        return score, None
    if triton:
        cross = triton_strip.crossings(ckpt, n).cpu().numpy()
    else:
        cross = cpu_global.crossings(np.ascontiguousarray(out[:, 2:4]), n)
    # each strip's input column, rows r_in .. r_out: column 0, else the strip before's last
    r_in, r_out = cross[:-1, 0], cross[1:, 0]
    cnt = r_out - r_in + 1
    off = np.concatenate([[0], np.cumsum(cnt)])
    strip = np.repeat(np.arange(S), cnt)
    row = np.arange(off[-1]) - np.repeat(off[:-1], cnt) + np.repeat(r_in, cnt)
    flat = torch.from_numpy((strip - 1) * 4 * (n + 1) + row).to(dev)
    first = torch.from_numpy(strip == 0).to(dev)
    row_t = torch.from_numpy(row).to(dev)
    h_in = torch.where(first, col0[0][row_t], ckpt.view(-1)[flat.clamp(min=0)])
    e_in = torch.where(first, col0[1][row_t], ckpt.view(-1)[(flat + n + 1).clamp(min=0)])
    both = torch.stack([h_in, e_in]).cpu().numpy()
    ops = cpu_global.strip_tracebacks(
        q.cpu().numpy(), s.cpu().numpy(), mat_np, go, ge, W, cross, both[0], both[1], off
    )
    return score, ops
