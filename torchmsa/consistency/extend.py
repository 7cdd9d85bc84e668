"""The consistency transformation of a library (ProbCons, T-Coffee's library extension): a
residue pair of x and y weighs what the direct alignment of x and y says of it and what the
third sequences say, each z through the residue k of z that x's residue is aligned to in x-z
and that is aligned to y's residue in z-y. With ``share = s`` (a fraction) and ``W =
weight_max``:

    w'_xy(i, j) = (1 - s) w_xy(i, j) + s * mean over z != x, y of  sum_k w_xz(i, k) w_zy(k, j) / W

rounded half up, in integers (so exact on every device and thread count). A pair the other
sequences confirm keeps its weight; one only x and y see keeps ``1 - s`` of it; pairs that x
and y's own alignment missed but the third sequences agree on are added. ProbCons' mean over
all sequences is ``s = (N - 2) / N``.
"""

from __future__ import annotations

import numpy as np
import torch

from torchmsa.config import MemoryBudget
from torchmsa.consistency.library import ENTRY_BYTES, Library
from torchmsa.cpu.extend import extend_entries
from torchmsa.stages import stage

__all__ = ["extend_library"]


def extend_library(
    lib: Library,
    lengths,
    share: tuple[int, int],
    weight_max: int,
    budget: MemoryBudget | None = None,
) -> Library:
    """``lib`` after one consistency transformation (the module's formula, ``share`` as
    numerator and denominator) over sequences of ``lengths`` (``[N]``, the library's residue
    numbering); distances and spans are kept. A transformed library that would not fit
    ``budget`` on the library's device raises :class:`~torchmsa.errors.ResourceError`.

    It runs on the host (numba) whatever the library's device: ``N^3 L / 2`` steps for a
    library of one partner per residue, and the entries go back to the library's device."""
    dev = lib.x.device
    lens = np.asarray(torch.as_tensor(lengths).cpu(), dtype=np.int64)
    n = lens.shape[0]
    if n < 3:
        return lib
    num, den = share
    a, b = (den - num) * (n - 2) * weight_max, num
    cols = [
        t.cpu().numpy().astype(np.int64, copy=False) for t in (lib.x, lib.i, lib.y, lib.j, lib.w)
    ]
    with stage("extend_library"):
        budget = MemoryBudget() if budget is None else budget
        most = budget.limit(dev) // ENTRY_BYTES
        x, i, y, j, w = extend_entries(
            *cols, lens, a, b, den * (n - 2) * weight_max, most, ENTRY_BYTES
        )
    out = [torch.from_numpy(t).to(dev) for t in (x, i, y, j, w)]
    return Library(*out, lib.dist, lib.spans)
