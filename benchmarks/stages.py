"""Where an alignment's time goes: wall time per pipeline stage, from torch.profiler events.

    python -m benchmarks.stages [--cases balifam10000:PF00202:default,...] [--device cuda]
        [--variant LABEL:policy.NAME=VALUE,...] [--config NAME=VALUE] [--policy NAME=VALUE]
        [--out DIR]

Each case (``dataset:case:mode``) is aligned once untimed (compiles land in the on-disk caches),
then once under ``torch.profiler.profile``, the whole call timed with CUDA synchronised on both
ends. The pipeline marks its stages with ``torch.profiler.record_function`` ranges named
``torchmsa.<stage>`` (:data:`STAGES`); per stage this reports the CPU wall time of its ranges
(``seconds``: summed over its calls, nested stages included in their parents'), the calls,
and on CUDA the device time of the kernels launched inside them (``device_seconds``). Stages
nest: ``torchmsa.align`` holds every other; ``progressive_pass`` holds its levels.

``--variant`` (repeatable) times each case under other settings, e.g.
``--variant numba:policy.cpu_level_cells=0,policy.cpu_pair_cells=0``; placement settings
must not change the alignment, and a variant that does is an error unless it changes
``config.`` settings. Appends one row per case, variant and stage to ``stages.csv`` in
``--out`` (``benchmarks/results``).
"""

from __future__ import annotations

import argparse
import time
from collections import Counter, defaultdict

import torch

from benchmarks.harness import (
    DATA_DIR,
    Variant,
    add_settings_options,
    append_rows,
    markdown_table,
    parse_variant,
    parsed_settings,
    run_metadata,
)

DEFAULT_CASES = (
    "balibase3:BB12014:default,balibase3:BB20010:accurate,balifam1000:PF13393:default,"
    "balifam10000:PF00202:default,balifam10000:PF13393:default"
)
STAGES = (
    "torchmsa.align",
    "torchmsa.encode",
    "torchmsa.first_tree",
    "torchmsa.alignment_tree",
    "torchmsa.local_library",
    "torchmsa.terminal_trims",
    "torchmsa.progressive_pass",
    "torchmsa.progressive_level",
    "torchmsa.refine",
    "torchmsa.refine_round",
    "torchmsa.assemble",
)


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _input(dataset: str, case: str):
    path = DATA_DIR / dataset / f"{case}.in.fasta"
    return path if path.exists() else path.with_name(f"{case}.in.fasta.gz")


def stage_times(events) -> dict[str, dict[str, float]]:
    """Per ``torchmsa.*`` range name: summed CPU seconds, calls and device seconds.

    Arguments:
        events: the profiler's events (``prof.events()``): anything with ``name``,
            ``cpu_time_total`` and ``device_time_total`` (microseconds).
    """
    out: dict[str, dict[str, float]] = defaultdict(lambda: {"seconds": 0.0, "calls": 0})
    for evt in events:
        if not evt.name.startswith("torchmsa."):
            continue
        row = out[evt.name]
        row["seconds"] += evt.cpu_time_total / 1e6
        row["calls"] += 1
        device_us = getattr(evt, "device_time_total", 0.0) or 0.0
        if device_us:
            row["device_seconds"] = row.get("device_seconds", 0.0) + device_us / 1e6
    return dict(out)


def profile_align(path, device: torch.device, mode: str, kwargs: dict):
    """One alignment under the profiler: (synchronised wall seconds, stage times, alignment)."""
    from torch.profiler import ProfilerActivity, profile

    import torchmsa

    activities = [ProfilerActivity.CPU]
    if device.type == "cuda":
        activities.append(ProfilerActivity.CUDA)
    with profile(activities=activities) as prof:
        _sync(device)
        start = time.perf_counter()
        aln = torchmsa.align(path, device=device, mode=mode, **kwargs)
        _sync(device)
        wall = time.perf_counter() - start
    return wall, stage_times(prof.events()), aln


def main(argv=None) -> int:
    import torchmsa

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default=DEFAULT_CASES, help="dataset:case:mode,...")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument(
        "--variant",
        action="append",
        default=[],
        metavar="LABEL:KIND.NAME=VALUE,...",
        help="also time each case under these settings (repeatable; KIND: config, policy, budget)",
    )
    ap.add_argument("--out", default=None)
    add_settings_options(ap)
    args = ap.parse_args(argv)
    device = torch.device(args.device)
    base = Variant("base", *parsed_settings(ap, args))
    variants = [base] + [parse_variant(v, base) for v in args.variant]
    meta = run_metadata(str(device))
    rows, missing = [], Counter()
    for spec in args.cases.split(","):
        dataset, case, mode = spec.split(":")
        path = _input(dataset, case)
        first = None
        for variant in variants:
            kwargs = variant.kwargs()
            torchmsa.align(path, device=device, mode=mode, **kwargs)
            wall, stages, aln = profile_align(path, device, mode, kwargs)
            codes = aln.codes.cpu()
            if first is None:
                first = codes
            elif not torch.equal(first, codes) and variant.config == base.config:
                raise RuntimeError(f"{spec}: variant {variant.label} changed the alignment")
            head = {"dataset": dataset, "case": case, "mode": mode, **variant.columns()}
            head.update(n=len(aln.names), width=codes.shape[1])
            rows.append({**head, "stage": "whole alignment", "seconds": wall, "calls": 1})
            for name in STAGES:
                if name in stages:
                    rows.append({**head, "stage": name, **stages[name]})
                else:
                    missing[name] += 1
            print(f"== {spec} {variant.label}: {wall:.2f} s", flush=True)
    if missing.get("torchmsa.align"):
        print("warning: no torchmsa.* profiler ranges: this torchmsa does not mark its stages")
    path = append_rows("stages", rows, meta, args.out)
    print(markdown_table(rows, ["case", "mode", "variant", "stage", "seconds", "calls"]))
    print(f"appended {len(rows)} rows to {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
