"""Decision 0059 on one GPU: ranks simulated by threads (``tests/test_local_ranks.py``'s
``over_ranks``), every rank on ``cuda:0``, against one process (same hits?); then the phases
of one process's 10240 x 10^8 best-100 call on pre-encoded codes (the first pass alone, the
whole call) and the subject's encoding. Run from the checkout (it imports the tests' helper).

    python -m benchmarks.probes.local_ranks
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np
import torch

from benchmarks.ssca import make_pair


def _now() -> float:
    torch.cuda.synchronize()
    return time.perf_counter()


def main() -> int:
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
    from test_local_ranks import over_ranks

    from torchmsa.alphabet import PROTEIN, encode
    from torchmsa.ops.backend import budget_bytes
    from torchmsa.ops.local import local_topk_codes
    from torchmsa.ops.local_strips import LocalPlan, StripDP, plan_layout
    from torchmsa.scoring import get_scoring

    dev = torch.device("cuda")
    mat = get_scoring("protein").matrix
    for n, m, k in [(1024, 10**6, 50), (512, 10**7, 100)]:
        p = make_pair(n, m, planted=50, seed=1)
        q = torch.from_numpy(encode(p.query, PROTEIN)[0]).to(dev)
        s = torch.from_numpy(encode(p.subject, PROTEIN)[0]).to(dev)
        one = local_topk_codes(q, s, mat, 10, 1, k=k)
        for size in (2, 4):

            def call(r, q=q, s=s, k=k):
                r.device = dev
                return local_topk_codes(q, s, mat, 10, 1, k=k, ranks=r)

            got, ranks = over_ranks(size, call)
            same = all(
                not isinstance(g, Exception)
                and all(torch.equal(x, y) for x, y in zip(g[:7], one[:7]))
                for g in got
            )
            log = [line for r in ranks for line in r.lines]
            print(json.dumps(dict(n=n, m=m, k=k, ranks=size, same=same, log=log)), flush=True)
    p = make_pair(10240, 10**8, planted=50, seed=0)
    t0 = time.perf_counter()
    codes = encode(p.subject, PROTEIN)[0]
    enc = time.perf_counter() - t0
    q = torch.from_numpy(encode(p.query, PROTEIN)[0]).to(dev)
    s = torch.from_numpy(codes).to(dev)
    mat_t = torch.from_numpy(np.array(mat, np.int32)).to(dev)
    for _ in range(2):
        t0 = _now()
        plan, chunk = plan_layout(
            q.numel(), s.numel(), LocalPlan(), "triton", dev, budget_bytes(None, dev)
        )
        dp = StripDP(q, s, mat_t, 10, 1, plan, chunk, "triton")
        dp.first_pass()
        first = _now() - t0
        del dp
        t0 = _now()
        local_topk_codes(q, s, mat, 10, 1, k=100)
        whole = _now() - t0
    print(
        json.dumps(
            dict(encode_s=round(enc, 3), first_pass_s=round(first, 3), whole_s=round(whole, 3))
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
