"""The consistency transformation of a library (ProbCons, T-Coffee's library extension): a
residue pair of x and y weighs what the direct alignment of x and y says of it and what every
third sequence z says, through the residue of z that x's residue is aligned to in x-z and that
is aligned to y's residue in z-y:

    w'_xy(i, j) = (direct * W * w_xy(i, j) + sum over z, k of w_xz(i, k) w_zy(k, j))
                  / ((direct + N - 2) * W)

with ``W = weight_max``, rounded half up, in integers (so exact on every device and thread
count). A pair the other sequences confirm keeps its weight; one only x and y see drops to
``direct / (direct + N - 2)`` of it, and pairs x and y's own alignment missed but their
neighbours agree on are added. ProbCons' transformation is the same mean over all
sequences, ``direct = 2`` for z = x and z = y.
"""

from __future__ import annotations

import numpy as np
import torch

from torchmsa.consistency.library import Library
from torchmsa.cpu.extend import extend_entries
from torchmsa.stages import stage

__all__ = ["extend_library"]


def extend_library(lib: Library, lengths, direct: int, weight_max: int) -> Library:
    """``lib`` after one consistency transformation (the module's formula) over sequences of
    ``lengths`` (``[N]``, the library's residue numbering); distances and spans are kept.

    It runs on the host (numba) whatever the library's device: ``N^3 L / 2`` steps for a
    library of one partner per residue, and the entries go back to the library's device."""
    dev = lib.x.device
    lens = np.asarray(torch.as_tensor(lengths).cpu(), dtype=np.int64)
    cols = [
        t.cpu().numpy().astype(np.int64, copy=False) for t in (lib.x, lib.i, lib.y, lib.j, lib.w)
    ]
    with stage("extend_library"):
        x, i, y, j, w = extend_entries(*cols, lens, direct, weight_max)
    out = [torch.from_numpy(a).to(dev) for a in (x, i, y, j, w)]
    return Library(*out, lib.dist, lib.spans)
