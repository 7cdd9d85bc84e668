"""Decision 0060: one 10^5 x 10^5 global pair (``benchmarks.long_pairwise.pair``) on the GPU,
split into its phases (strip fill, crossings, gathering the input columns, tracebacks) for
strip widths, launch shapes and sync distances, then the public ``pairwise_align`` call.
Each setting runs twice; the second is printed.

    python -m benchmarks.probes.global_strips [--n 100000]
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import torch

from benchmarks.long_pairwise import pair


def _now() -> float:
    torch.cuda.synchronize()
    return time.perf_counter()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100000)
    args = ap.parse_args(argv)
    import torchmsa
    from torchmsa._triton import strip as ts
    from torchmsa.alphabet import PROTEIN, encode
    from torchmsa.cpu import strip_global as cg
    from torchmsa.scoring import get_scoring

    dev = torch.device("cuda")
    mat_np = np.array(get_scoring("protein").matrix, np.int32)
    mat = torch.from_numpy(mat_np).to(dev)
    a, b = pair(args.n, args.n)
    q = torch.from_numpy(encode(a, PROTEIN)[0]).to(dev)
    s = torch.from_numpy(encode(b, PROTEIN)[0]).to(dev)
    n, m = q.numel(), s.numel()
    col0 = torch.from_numpy(cg.first_column(n, 10, 1)).to(dev)
    for shape in [(32, 16, 1), (32, 8, 1), (32, 4, 1)]:
        for W in (256, 1024):
            for sync in (8, 16, 32):
                S = -(-m // W)
                ck = torch.empty((S, 4, n + 1), dtype=torch.int32, device=dev)
                lo = torch.zeros(1, dtype=torch.int32, device=dev)
                slot = torch.zeros(1, dtype=torch.int64, device=dev)
                for _ in range(2):
                    t0 = _now()
                    ts.global_strip_fill(
                        q, s, mat, 10, 1, W, lo, lo + S, col0[None], slot, ck, shape=shape,
                        sync=sync,
                    )  # fmt: skip
                    t1 = _now()
                    cross = ts.crossings(ck, n).cpu().numpy()
                    t2 = _now()
                    cnt = cross[1:, 0] - cross[:-1, 0] + 1
                    off = np.concatenate([[0], np.cumsum(cnt)])
                    strip = np.repeat(np.arange(S), cnt)
                    row = (
                        np.arange(off[-1])
                        - np.repeat(off[:-1], cnt)
                        + np.repeat(cross[:-1, 0], cnt)
                    )
                    flat = torch.from_numpy((strip - 1) * 4 * (n + 1) + row).to(dev)
                    first = torch.from_numpy(strip == 0).to(dev)
                    row_t = torch.from_numpy(row).to(dev)
                    h_in = torch.where(first, col0[0][row_t], ck.view(-1)[flat.clamp(min=0)])
                    e_in = torch.where(
                        first, col0[1][row_t], ck.view(-1)[(flat + n + 1).clamp(min=0)]
                    )
                    both = torch.stack([h_in, e_in]).cpu().numpy()
                    t3 = _now()
                    cg.strip_tracebacks(
                        q.cpu().numpy(), s.cpu().numpy(), mat_np, 10, 1, W, cross, both[0],
                        both[1], off,
                    )  # fmt: skip
                    t4 = _now()
                phases = dict(fill=t1 - t0, cross=t2 - t1, gather=t3 - t2, trace=t4 - t3)
                out = dict(
                    shape=shape, W=W, sync=sync, **{k: round(v, 4) for k, v in phases.items()}
                )
                print(
                    json.dumps(dict(out, fill_gcups=round(n * m / (t1 - t0) / 1e9, 1))), flush=True
                )
                del ck
    for _ in range(3):
        t0 = _now()
        torchmsa.pairwise_align(a, b, mode="global", device="cuda")
        t1 = _now()
    print(json.dumps(dict(api_s=round(t1 - t0, 4), gcups=round(n * m / (t1 - t0) / 1e9, 1))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
