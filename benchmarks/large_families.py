"""Large families end to end: torchmsa on the GPU against FAMSA and MAFFT on the CPU cores.

    python -m benchmarks.large_families [--quick] [--cases balifam10000:PF00687,homfam:rrm]
        [--tools torchmsa-auto,torchmsa-lcs,torchmsa-fast,torchmsa-parttree,famsa,mafft-auto,...]
        [--threads 16] [--device auto] [--timeout 900] [--config NAME=VALUE]
        [--policy NAME=VALUE] [--out DIR]

Cases: the balifam10000 cases (10,006-10,142 sequences) and the largest HomFam cases (rhv
17,976, rrm 27,610, zf-CCHH 88,345 sequences); ``--quick``: balifam10000 PF00687 (10,006
sequences of 39-340 residues) only. Tools, one at a time, all in the same run:

* ``torchmsa-auto``: ``torchmsa.align(mode="auto")``, the pipeline's own choices (default
  mode with the LCS tree up to 20,000 sequences, fast mode with PartTree above);
* ``torchmsa-lcs``: default mode with single linkage on LCS distances at any size (skipped
  above 30,000 sequences: its full distance matrix needs ``8 N^2`` bytes; the same for
  ``torchmsa-fast``);
* ``torchmsa-fast``: mode ``fast`` with the full-matrix guide tree (``tree="upgma_mafft"``);
* ``torchmsa-parttree``: mode ``fast`` with a PartTree guide tree (``tree="parttree"``);
* ``famsa`` (pyfamsa), ``mafft-auto`` (``--auto``) and ``mafft-parttree`` (``--parttree``)
  on ``--threads`` cores (``benchmarks.peers``).

Each row: wall-clock seconds of the whole alignment (input file to rows), SP and TC against
the reference (large-family protocol, ``benchmarks.accuracy``), and for torchmsa the peak GPU
memory that torch allocated. A warm-up alignment of 300 sequences compiles the kernels first.
Checks before timing, exit status 1 on a mismatch: for each case, shared 6-mer counts of 64
sampled sequences against all and of 20,000 sampled pairs (Triton against numba); after each
torchmsa run, every aligned row without gaps equals its input sequence. Appends one row per
case and tool to ``large_families.csv`` in ``--out`` (``benchmarks/results``).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from pathlib import Path

import numpy as np
import torch

from benchmarks import harness
from benchmarks.harness import (
    Timer,
    add_settings_options,
    align_kwargs,
    append_rows,
    markdown_table,
    parsed_settings,
    run_metadata,
    score,
    settings_columns,
)
from benchmarks.peers import PEERS, PeerFailed, PeerNotInstalled, run_peer
from torchmsa.errors import TorchMSAError
from torchmsa.io import read_sequences

CASES = [
    ("balifam10000", "PF00687"),
    ("balifam10000", "PF00037"),
    ("balifam10000", "PF00505"),
    ("balifam10000", "PF05746"),
    ("balifam10000", "PF13393"),
    ("balifam10000", "PF00202"),
    ("homfam", "rhv"),
    ("homfam", "rrm"),
    ("homfam", "zf-CCHH"),
]
QUICK = [("balifam10000", "PF00687")]
TOOLS = [
    "torchmsa-auto",
    "torchmsa-lcs",
    "torchmsa-fast",
    "torchmsa-parttree",
    "famsa",
    "mafft-auto",
    "mafft-parttree",
]
# a full-matrix guide tree holds N x N float64 distances: 6.2 GB at 28,000, 62 GB at 88,000
FULL_TREE_MAX_N = 30_000
TORCHMSA = {
    "torchmsa-auto": ("auto", "auto"),
    "torchmsa-lcs": ("default", "lcs"),
    "torchmsa-fast": ("fast", "upgma_mafft"),
    "torchmsa-parttree": ("fast", "parttree"),
}


class Mismatch(RuntimeError):
    """A check before or after timing failed."""


def case_files(dataset: str, case: str) -> tuple[Path, Path, Path | None]:
    return harness.case_files(harness.DATA_DIR / dataset, case)


def check_counts(path: Path, device: str) -> None:
    """Triton shared counts of a sample equal the numba ones (sample rows, sample pairs)."""
    from torchmsa.alphabet import PROTEIN
    from torchmsa.ops.kmer import kmer_ids, pair_counts, reduced_map, shared_counts
    from torchmsa.sequences import SequenceBatch

    batch = SequenceBatch.from_input(path, "protein")
    red = reduced_map(PROTEIN)
    ids, n = kmer_ids(batch.codes.to(device), batch.lengths.to(device), red, 6, "triton")
    cpu_ids, cpu_n = kmer_ids(batch.codes, batch.lengths, red, 6, "cpu")
    rng = np.random.default_rng(0)
    rows = torch.from_numpy(np.sort(rng.choice(len(batch), min(64, len(batch)), replace=False)))
    got = shared_counts(ids[rows.to(device)], n[rows.to(device)], ids, n, "triton")
    want = shared_counts(cpu_ids[rows], cpu_n[rows], cpu_ids, cpu_n, "cpu")
    p = torch.from_numpy(rng.integers(0, len(batch), 20_000))
    q = torch.from_numpy(rng.integers(0, len(batch), 20_000))
    got_pairs = pair_counts(ids, n, ids, n, p.to(device), q.to(device), "triton")
    want_pairs = pair_counts(cpu_ids, cpu_n, cpu_ids, cpu_n, p, q, "cpu")
    if not (torch.equal(got.cpu(), want) and torch.equal(got_pairs.cpu(), want_pairs)):
        raise Mismatch(f"{path.name}: Triton and CPU shared 6-mer counts differ")


def run_torchmsa(tool: str, path: Path, device: str, kwargs: dict):
    import torchmsa

    mode, tree = TORCHMSA[tool]
    cuda = device != "cpu" and torch.cuda.is_available()
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    with Timer(cuda=cuda) as t:
        aln = torchmsa.align(str(path), mode=mode, tree=tree, device=device, **kwargs)
    peak = torch.cuda.max_memory_allocated() / 2**30 if cuda else math.nan
    residues = {r.name: r.seq.upper() for r in read_sequences(path)}
    for name, row in zip(aln.names, aln.rows):
        if row.replace("-", "").upper() != residues[name]:
            raise Mismatch(f"{path.name}: torchmsa row {name!r} is not its input sequence")
    meta = dict(getattr(aln, "metadata", None) or {})
    return list(aln.names), list(aln.rows), t.seconds, peak, meta


def run_other(tool: str, path: Path, threads: int, timeout: float | None):
    if tool not in PEERS:
        raise PeerNotInstalled(f"unknown tool {tool!r}")
    res = run_peer(tool, path, threads, timeout)
    return res.names, res.rows, res.seconds


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default="", help="dataset:case,... (default: all of CASES)")
    ap.add_argument("--tools", default=",".join(TOOLS))
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--device", default="auto")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds per peer run")
    ap.add_argument("--quick", action="store_true", help="balifam10000 PF00687 only")
    ap.add_argument("--out", default=None, help="results folder (default benchmarks/results)")
    add_settings_options(ap)
    args = ap.parse_args(argv)
    settings = parsed_settings(ap, args)
    args.kw, args.columns = align_kwargs(*settings), settings_columns(*settings)
    cases = [tuple(c.split(":", 1)) for c in args.cases.split(",") if c] or (
        QUICK if args.quick else CASES
    )
    tools = [t for t in args.tools.split(",") if t]
    device = "cuda" if args.device == "auto" and torch.cuda.is_available() else args.device
    if device == "auto":
        device = "cpu"
    torch.set_num_threads(args.threads)
    rows: list[dict] = []
    try:
        files = {c: case_files(*c) for c in cases}
        missing = [str(f[0]) for f in files.values() if not f[0].exists()]
        if missing:
            sys.exit(f"error: input files not found: {missing}")
        if device != "cpu":
            for (dataset, case), (inp, _, _) in files.items():
                check_counts(inp, device)
                print(f"{dataset}/{case}: GPU shared 6-mer counts checked", flush=True)
        if any(t in TORCHMSA for t in tools):
            _warm_up(files[cases[0]][0], device, tools, args.kw)
        for (dataset, case), (inp, ref, core) in files.items():
            n_seqs = sum(1 for _ in read_sequences(inp))
            for tool in tools:
                rows.append(_one(tool, dataset, case, n_seqs, inp, ref, core, device, args))
    except Mismatch as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    path = append_rows("large_families", rows, run_metadata(device), args.out)
    cols = ["case", "tool", "seconds", "sp", "tc", "peak_gib", "error"]
    print(markdown_table(rows, cols))
    print(f"appended {len(rows)} rows to {path}")
    return 0


def _warm_up(path: Path, device: str, tools: list[str], kwargs: dict) -> None:
    import torchmsa

    records = read_sequences(path)[:300]
    for tool in tools:
        if tool in TORCHMSA:
            mode, tree = TORCHMSA[tool]
            seqs = [(r.name, r.seq) for r in records]
            torchmsa.align(seqs, mode=mode, tree=tree, device=device, **kwargs)


def _full_tree(tool: str) -> bool:
    return TORCHMSA[tool][1] in ("upgma_mafft", "lcs")


def _one(tool, dataset, case, n_seqs, inp, ref, core, device, args) -> dict:
    row = {
        "dataset": dataset,
        "case": case,
        "tool": tool,
        "mode": TORCHMSA[tool][0] if tool in TORCHMSA else "",
        **(args.columns if tool in TORCHMSA else {}),
        "n_seqs": n_seqs,
        "threads": args.threads,
        "seconds": math.nan,
        "sp": math.nan,
        "tc": math.nan,
        "peak_gib": math.nan,
        "choices": "",
        "error": "",
    }
    try:
        if tool in TORCHMSA and n_seqs > FULL_TREE_MAX_N and _full_tree(tool):
            raise PeerFailed(
                f"skipped: a full-matrix guide tree of {n_seqs} sequences needs "
                f"{8 * n_seqs**2 / 2**30:.0f} GiB of distances"
            )
        if tool in TORCHMSA:
            names, aligned, seconds, peak, meta = run_torchmsa(tool, inp, device, args.kw)
            row["peak_gib"] = round(peak, 3)
            row["choices"] = " ".join(f"{k}={meta[k]}" for k in ("mode", "tree") if k in meta)
        else:
            names, aligned, seconds = run_other(tool, inp, args.threads, args.timeout)
        row["seconds"] = round(seconds, 3)
        sp, tc = score(names, aligned, ref, core)
        row.update(sp=round(sp, 6), tc=round(tc, 6))
    except Mismatch:
        raise
    except (PeerFailed, PeerNotInstalled, TorchMSAError) as exc:
        row["error"] = str(exc)[:300]
    except Exception as exc:  # one tool failing on one case must not end the run
        row["error"] = f"{type(exc).__name__}: {exc}"[:300]
    print(f"{case:10s} {tool:18s} {row['seconds']:9.2f} s  {row['error'] or row['tc']}", flush=True)
    return row


if __name__ == "__main__":
    sys.exit(main())
