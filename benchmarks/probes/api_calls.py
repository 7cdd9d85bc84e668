"""Where the public pairwise API's time goes beside the kernels (issue #36 item 4): the pieces
of ``pairwise_scores`` / ``pairwise_traceback`` (tensors in) and ``pairwise_align`` (lists of
strings in), each timed alone, CUDA synchronised around it, median of ``--repeats``; then one
call of each under ``torch.profiler`` (host operations by their own CPU time, and how many
times the host waited for the GPU). A one-off look, not a benchmark: it prints, writes no CSV.

    python -m benchmarks.probes.api_calls [--pairs 10000] [--length 300] [--repeats 20]
    python -m benchmarks.probes.api_calls --host-only --device cpu   # host work alone
"""

from __future__ import annotations

import argparse
import statistics
import time
from itertools import repeat

import numpy as np
import torch

from benchmarks.pairwise_cpu import make_pairs

GO, GE = 10, 1
KW = dict(mode="local", matrix="BLOSUM62", gap_open=GO, gap_extend=GE, seqtype="protein")


def _sync() -> float:
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    return time.perf_counter()


def median_ms(fn, repeats: int) -> float:
    fn()
    times = []
    for _ in range(repeats):
        start = _sync()
        fn()
        times.append(_sync() - start)
    return statistics.median(times) * 1e3


def pieces(a: list[str], b: list[str], dev: torch.device, repeats: int) -> dict[str, float]:
    """Milliseconds of each piece of the three public calls on ``(a, b)``."""
    from torchmsa import encode_sequences, pairwise_align, pairwise_scores, pairwise_traceback
    from torchmsa.alphabet import detect_texts, encode_texts, get_alphabet
    from torchmsa.ops import pairwise as pw

    alphabet = get_alphabet("protein")
    scoring = pw._setup("local", "protein", "BLOSUM62", GO, GE)
    ea = encode_sequences(a, seqtype="protein", device=dev)
    eb = encode_sequences(b, seqtype="protein", device=dev)
    tensors = (ea.codes, ea.lengths, eb.codes, eb.lengths)
    args = pw._args(*tensors, scoring, "local")
    ms = {}
    ms["kernel call pairwise_score_codes"] = median_ms(
        lambda: pw.pairwise_score_codes(*args), repeats
    )
    ms["kernel call pairwise_align_codes"] = median_ms(
        lambda: pw.pairwise_align_codes(*args), repeats
    )
    ms["tensor _setup"] = median_ms(lambda: pw._setup("local", "protein", None, GO, GE), repeats)
    ms["tensor _check_tensors"] = median_ms(lambda: pw._check_tensors(*tensors, alphabet), repeats)
    ms["tensor _args (matrix to device)"] = median_ms(
        lambda: pw._args(*tensors, scoring, "local"), repeats
    )
    ms["pairwise_scores"] = median_ms(lambda: pairwise_scores(*tensors, **KW), repeats)
    ms["pairwise_traceback"] = median_ms(lambda: pairwise_traceback(*tensors, **KW), repeats)
    text_a, text_b = "".join(a), "".join(b)
    ms["list joins"] = median_ms(lambda: ("".join(a), "".join(b)), repeats)
    ms["list detect_texts"] = median_ms(lambda: detect_texts(text_a, text_b), repeats)
    ms["list encode_texts a"] = median_ms(
        lambda: encode_texts(a, alphabet, text=text_a, keep_raw=False), repeats
    )
    ca, la, res_a = pw._encode(a, alphabet, "a")
    ms["list to device (4 tensors)"] = median_ms(
        lambda: [t.to(dev) for t in (ca, la, ca, la)], repeats
    )
    kw = dict(KW, device=dev)
    ms["pairwise_align(list) score-only"] = median_ms(
        lambda: pairwise_align(a, b, traceback=False, **kw), repeats
    )
    ms["pairwise_align(list) traceback"] = median_ms(lambda: pairwise_align(a, b, **kw), repeats)
    r = pairwise_traceback(*tensors, **KW)
    ops, n_ops = r.ops.cpu().numpy(), r.n_ops.cpu().numpy()
    ms["list rows_from_ops"] = median_ms(
        lambda: pw.rows_from_ops(ops, n_ops, a, b, r.start_a.cpu(), r.start_b.cpu()), repeats
    )
    ms["list ops to host"] = median_ms(lambda: r.ops.cpu(), repeats)
    return ms


def profiled(name: str, fn) -> None:
    from torch.profiler import ProfilerActivity, profile

    fn()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        fn()
        _sync()
    ops = prof.key_averages()
    gpu_ms = sum(e.self_device_time_total for e in ops) / 1e3
    waits = {
        e.key: e.count
        for e in ops
        if e.key in ("cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaMemcpyAsync")
    }
    launches = sum(e.count for e in ops if e.key in ("cudaLaunchKernel", "cuLaunchKernel"))
    print(f"== {name}: {launches} launches, {gpu_ms:.2f} ms on the GPU, host waits {waits}")
    print(ops.table(sort_by="self_cpu_time_total", row_limit=14))


def host_profile(name: str, fn, calls: int, rows: int) -> None:
    """Host functions of ``calls`` calls of ``fn`` by their own time (cProfile)."""
    import cProfile
    import io
    import pstats

    fn()
    _sync()
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(calls):
        fn()
    _sync()
    prof.disable()
    out = io.StringIO()
    pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(rows)
    print(f"== {name}: {calls} calls under cProfile")
    print(out.getvalue())


def host_only(a: list[str], b: list[str], repeats: int) -> dict[str, float]:
    """Milliseconds of host work no kernel removes, on this machine's CPU: the Triton
    dispatcher's planning and launch set-up with its two launches stubbed out (CPU tensors),
    building the list API's result tuples, and cutting the rows' strings."""
    import torchmsa._triton.dp as tdp
    from torchmsa.ops import pairwise as pw

    scoring = pw._setup("local", "protein", "BLOSUM62", GO, GE)
    enc = [pw._encode(x, scoring.alphabet, "x") for x in (a, b)]
    (ca, la, _), (cb, lb, _) = enc
    mat = torch.from_numpy(scoring.matrix.copy())
    sizes = np.stack([la.numpy(), lb.numpy()]).astype(np.int64)
    launches = tdp.launch_fill, tdp.launch_query_profile
    tdp.launch_fill = tdp.launch_query_profile = lambda *args, **kw: None
    try:
        ms = {"dispatcher host work, launches stubbed": median_ms(
            lambda: tdp.pairwise_score(ca, la, cb, lb, mat, GO, GE, 1, budget=1 << 34,
                                       sizes=sizes), repeats)}  # fmt: skip
    finally:
        tdp.launch_fill, tdp.launch_query_profile = launches
    P = len(a)
    score, start = list(range(P)), [None] * P
    ms["result tuples (score-only)"] = median_ms(
        lambda: list(map(pw._make_result, zip(score, repeat(None), zip(start, score),
                                              zip(start, score)))), repeats)  # fmt: skip
    width = 2 * max(map(len, a))
    row_a, row_b = "A" * (P * width), "C" * (P * width)
    ends = list(range(0, P * width + 1, width))
    ms["row strings (traceback)"] = median_ms(
        lambda: [(row_a[s:e], row_b[s:e]) for s, e in zip(ends, ends[1:])], repeats
    )
    return ms


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=10_000)
    ap.add_argument("--length", type=int, default=300)
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--host-profile", type=int, default=0, help="cProfile this many calls")
    ap.add_argument("--host-only", action="store_true", help="only host_only()'s pieces")
    args = ap.parse_args(argv)
    dev = torch.device(args.device)
    pairs = make_pairs(args.pairs, args.length)
    a, b = [x for x, _ in pairs], [y for _, y in pairs]
    if args.host_only:
        for name, t in host_only(a, b, args.repeats).items():
            print(f"{name:40s} {t:9.3f} ms")
        return 0
    ms = pieces(a, b, dev, args.repeats)
    cells = sum(len(x) * len(y) for x, y in pairs)
    for name, t in ms.items():
        print(f"{name:40s} {t:9.3f} ms  ({cells / t / 1e6:8.1f} GCUPS if alone)")
    from torchmsa import encode_sequences, pairwise_align, pairwise_scores

    ea = encode_sequences(a, seqtype="protein", device=dev)
    eb = encode_sequences(b, seqtype="protein", device=dev)
    tensors = (ea.codes, ea.lengths, eb.codes, eb.lengths)
    profiled("pairwise_scores", lambda: pairwise_scores(*tensors, **KW))
    kw = dict(KW, device=dev)
    if args.host_profile:
        from torchmsa import pairwise_traceback
        from torchmsa.ops import pairwise as pw

        scoring = pw._setup("local", "protein", "BLOSUM62", GO, GE)
        raw = pw._args(*tensors, scoring, "local")
        calls = [
            ("pairwise_score_codes", lambda: pw.pairwise_score_codes(*raw)),
            ("pairwise_align_codes", lambda: pw.pairwise_align_codes(*raw)),
            ("pairwise_scores", lambda: pairwise_scores(*tensors, **KW)),
            ("pairwise_traceback", lambda: pairwise_traceback(*tensors, **KW)),
            ("pairwise_align(list) traceback", lambda: pairwise_align(a, b, **kw)),
        ]
        for name, fn in calls:
            host_profile(name, fn, args.host_profile, 22)
    profiled("pairwise_align(list) score-only", lambda: pairwise_align(a, b, traceback=False, **kw))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
