"""Where an alignment's time goes: synchronised wall clock per pipeline stage, on one device.

    python -m benchmarks.stages [--cases balifam10000:PF00202:default,...] [--device cuda]
        [--cpu-level-cells 0,131072,...] [--host-cells -1,4194304,...] [--name stages]
        [--out DIR]

Each case is aligned once untimed (compiles land in the on-disk caches), then once with a
timer around the stages (``torch.cuda.synchronize`` before and after each, so a stage's time
includes its kernels). Stages nest: ``progressive._level`` holds ``profile_align`` and
``batched_column_scores``; ``pipeline._first_tree`` holds the first tree (and ``lcs_lengths``
when it is an LCS tree). For cases of 5,000 to 20,000 sequences the guide-tree steps are also
taken apart: LCS lengths, their distances and single linkage; the k-mer distance matrix checked
on the host (``build_tree``'s loop) or on the device (``tree_from_tensor``), its copy to the
host, and the clustering. ``--cpu-level-cells`` times each case under several values of
``progressive.CPU_LEVEL_CELLS`` (on a GPU, levels of at most that many DP cells run on the CPU)
and ``--host-cells`` under several values of ``refine.HOST_CELLS`` (on a GPU, refinement's edge
evaluations of at most that many cells per host thread run in numba on the CPU); either checks
that the alignment stays the same.
"""

from __future__ import annotations

import argparse
import collections
import time

import numpy as np
import torch

from benchmarks.common import DATA_DIR, run_metadata, write_results

DEFAULT_CASES = (
    "balibase3:BB12014:default,balibase3:BB20010:accurate,balifam1000:PF13393:default,"
    "balifam10000:PF00202:default,balifam10000:PF13393:default"
)
STAGES = (
    ("torchmsa.pipeline", "_first_tree"),
    ("torchmsa.ops.lcs", "lcs_lengths"),
    ("torchmsa.pipeline", "_alignment_distances"),
    ("torchmsa.pipeline", "_progressive_jobs"),
    ("torchmsa.progressive", "_level"),
    ("torchmsa.progressive", "_kid_profiles"),
    ("torchmsa.progressive", "_merge"),
    ("torchmsa.progressive", "profile_align"),
    ("torchmsa.progressive", "batched_column_scores"),
    ("torchmsa.parttree", "parttree"),
    ("torchmsa.tree", "tree_from_tensor"),
    ("torchmsa.tree", "build_tree"),
    ("torchmsa.consistency", "local_library"),
    ("torchmsa.refine", "refine"),
    ("torchmsa.refine", "evaluate_partitions"),
    ("torchmsa.refine", "_Host.evaluate"),
    ("torchmsa.pipeline", "_accurate_group"),
    ("torchmsa.progressive", "progressive_align"),
)
TREE_PARTS_MAX_N = 20_000  # the full-matrix trees' steps need 8 N^2 bytes of distances


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


class StageClock:
    """Wraps module functions with synchronised timers while it is active."""

    def __init__(self, device: torch.device):
        self.device, self.seconds, self.calls = device, collections.Counter(), collections.Counter()
        self._saved = []

    def __enter__(self):
        import importlib

        for mod_name, name in STAGES:
            mod = importlib.import_module(mod_name)
            owner_name, _, fn = name.rpartition(".")
            owner = getattr(mod, owner_name) if owner_name else mod
            orig = getattr(owner, fn)
            label = f"{mod_name.split('.')[-1]}.{name}"
            setattr(owner, fn, self._timed(orig, label))
            self._saved.append((owner, fn, orig))
        return self

    def __exit__(self, *exc):
        for mod, fn, orig in reversed(self._saved):
            setattr(mod, fn, orig)

    def _timed(self, orig, label):
        def run(*args, **kwargs):
            _sync(self.device)
            t = time.perf_counter()
            try:
                return orig(*args, **kwargs)
            finally:
                _sync(self.device)
                self.seconds[label] += time.perf_counter() - t
                self.calls[label] += 1

        return run


def _input(dataset: str, case: str):
    path = DATA_DIR / dataset / f"{case}.in.fasta"
    return path if path.exists() else path.with_name(f"{case}.in.fasta.gz")


def _clock(device, fn):
    _sync(device)
    t = time.perf_counter()
    out = fn()
    _sync(device)
    return time.perf_counter() - t, out


def tree_parts(path, device: torch.device) -> list[dict]:
    """The LCS and k-mer guide trees' steps, timed one by one."""
    from torchmsa.cpu import tree as cpu_tree
    from torchmsa.ops.kmer import kmer_distances, shared_kmer_counts
    from torchmsa.ops.lcs import lcs_distances, lcs_lengths
    from torchmsa.sequences import SequenceBatch
    from torchmsa.tree import build_tree, tree_from_tensor

    batch = SequenceBatch.from_input(path, "auto", device)
    rows = []

    def add(step, fn):
        seconds, out = _clock(device, fn)
        rows.append({"stage": f"tree: {step}", "seconds": round(seconds, 4), "calls": 1})
        return out

    lens = batch.lengths.to(device)
    common = add("LCS lengths", lambda: lcs_lengths(batch.codes, lens))
    lcs_dist = add("LCS distances", lambda: lcs_distances(common, lens))
    add("LCS tree (tree_from_tensor, single)", lambda: tree_from_tensor(lcs_dist, "single"))
    counts = add("shared 6-mer counts", lambda: shared_kmer_counts(batch))
    own = torch.diagonal(counts)
    dist = add("distances", lambda: kmer_distances(counts, own, own))
    host = add("copy to host", lambda: dist.to("cpu", copy=True).numpy())
    add("check on the host", lambda: cpu_tree.check_distances(host))
    off = ~torch.eye(dist.shape[0], dtype=torch.bool, device=device)
    add("check on the device", lambda: bool(((dist != dist.T) & off).any()))
    add("clustering", lambda: cpu_tree.linkage(host, cpu_tree.MAFFT, overwrite=True))
    a = add("build_tree (host check, copies)", lambda: build_tree(dist, "upgma_mafft"))
    b = add("tree_from_tensor", lambda: tree_from_tensor(dist, "upgma_mafft"))
    if not np.array_equal(a.children, b.children):
        raise RuntimeError("tree_from_tensor and build_tree gave different trees")
    return rows


def main(argv=None) -> int:
    import torchmsa

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default=DEFAULT_CASES, help="dataset:case:mode,...")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--name", default="stages")
    ap.add_argument(
        "--cpu-level-cells",
        default=None,
        help="comma list of progressive.CPU_LEVEL_CELLS values to time each case under (the "
        "alignments must not change)",
    )
    ap.add_argument(
        "--host-cells",
        default=None,
        help="comma list of refine.HOST_CELLS values to time each case under (the alignments "
        "must not change)",
    )
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    device = torch.device(args.device)
    rows = []
    from torchmsa import progressive, refine

    default_cells, default_host = progressive.CPU_LEVEL_CELLS, refine.HOST_CELLS
    default_pair = progressive.CPU_PAIR_CELLS
    sweep = [(None, None)]
    if args.cpu_level_cells is not None:
        sweep = [(int(c), None) for c in args.cpu_level_cells.split(",")]
    if args.host_cells is not None:
        sweep = [(c, int(h)) for c, _ in sweep for h in args.host_cells.split(",")]
    for spec in args.cases.split(","):
        dataset, case, mode = spec.split(":")
        path = _input(dataset, case)
        first = None
        for cells, host in sweep:
            progressive.CPU_LEVEL_CELLS = default_cells if cells is None else cells
            progressive.CPU_PAIR_CELLS = default_pair if cells is None else min(cells, default_pair)
            refine.HOST_CELLS = default_host if host is None else host
            torchmsa.align(path, device=device, mode=mode)
            with StageClock(device) as clock:
                wall, aln = _clock(
                    device, lambda p=path, m=mode: torchmsa.align(p, device=device, mode=m)
                )
            if first is None:
                first = aln.codes.cpu()
            elif not torch.equal(first, aln.codes.cpu()):
                raise RuntimeError(f"{spec}: {cells}, {host} cells changed the alignment")
            base = {"dataset": dataset, "case": case, "mode": mode, "n": len(aln.names)}
            base["width"] = aln.codes.shape[1]
            base["cpu_level_cells"] = progressive.CPU_LEVEL_CELLS
            base["host_cells"] = refine.HOST_CELLS
            rows.append({**base, "stage": "whole alignment", "seconds": round(wall, 4), "calls": 1})
            for label, seconds in clock.seconds.most_common():
                rows.append({**base, "stage": label, "seconds": round(seconds, 4)})
                rows[-1]["calls"] = clock.calls[label]
            print(f"== {spec} cells {cells}, host {host}: {wall:.2f} s", flush=True)
        progressive.CPU_LEVEL_CELLS, refine.HOST_CELLS = default_cells, default_host
        progressive.CPU_PAIR_CELLS = default_pair
        if 5000 <= len(aln.names) <= TREE_PARTS_MAX_N:
            rows += [{**base, **r} for r in tree_parts(path, device)]
    header = (
        f"Stage times on `{device}`, one alignment per case after an untimed one; stages nest "
        "(see the module docstring). `calls`: how often the stage ran.\n"
    )
    write_results(args.name, rows, header, args.out, run_metadata(str(device)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
