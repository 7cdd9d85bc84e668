"""Adding sequences to an alignment and merging two alignments: torchmsa against MAFFT.

    python -m benchmarks.add_merge [--dataset balibase3] [--cases BB] [--limit N]
        [--device auto] [--threads T] [--timeout S] [--out DIR]
    python -m benchmarks.add_merge --timing [--n-ref 1000] [--n-add 10000] [--length 300]
        [--device cuda] [--quick]

Accuracy (default): every selected case's reference alignment is split by a fixed shuffle of
its rows. For ``add`` two thirds of the rows (at least two) form the existing part, realigned
from their unaligned sequences by ``torchmsa.align``, and the rest are added to it by
``torchmsa.add`` and by ``mafft --add``; for ``merge`` the rows are split in halves, each half
realigned by ``torchmsa.align``, and the two merged by ``torchmsa.merge`` and by ``mafft
--merge`` (a two-line subMSA table). Both tools get the same realigned parts; the results are
scored against the whole reference (SP and TC over its core columns). Cases of fewer than 4
sequences are skipped. Rows go to ``add_merge.csv`` (``variant``: ``add`` or ``merge``).

Timing (``--timing``): a synthetic family (a random root, 20% substitutions and indels) of
``--n-ref`` sequences is aligned by ``torchmsa.align`` (fast mode, not timed), then
``--n-add`` more are added with ``torchmsa.add`` twice (timed, with CUDA synchronised:
``add-timing-first`` pays what the process has not compiled or loaded yet, from the disk caches
as found; ``add-timing-again`` is in-process warm), and the reference columns are checked to
be unchanged (``caches``: how full the compile caches were at the start, so a run after
``torchmsa warmup`` shows it). Then the same add as fresh processes (``add-process``):
``torchmsa align --add`` with the caches the calls above filled, and ``mafft --add --thread
T`` beside it (its reference rows checked the same way; past ``--timeout`` it is killed and
its row says so). ``--quick``: 50 + 200 sequences of 60 residues, for a
CPU smoke run.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks.harness import (
    DATA_DIR,
    RESULTS_DIR,
    Timer,
    append_rows,
    case_files,
    load_cases,
    markdown_table,
    run_metadata,
    score,
    select_cases,
    set_threads,
)
from benchmarks.peers import PeerFailed

AA = "ACDEFGHIKLMNPQRSTVWY"


def read_reference(path: Path) -> tuple[list[str], list[str]]:
    from torchmsa.io import read_alignment

    records = read_alignment(str(path))
    return [r.name for r in records], [r.seq.upper() for r in records]


def split(names: list[str], case: str, fraction: float) -> tuple[list[int], list[int]]:
    """A fixed shuffle of the rows (seeded by the case name), cut at ``fraction``."""
    order = list(range(len(names)))
    random.Random(case).shuffle(order)
    cut = min(len(order) - 1, max(2, round(fraction * len(order))))
    return sorted(order[:cut]), sorted(order[cut:])


def realign(names, rows, idx, device):
    import torchmsa

    seqs = {names[i]: rows[i].replace("-", "") for i in idx}
    return torchmsa.align(seqs, device=device)


def write_fasta(path: Path, names, rows) -> Path:
    path.write_text("".join(f">{n}\n{r}\n" for n, r in zip(names, rows)))
    return path


def mafft(argv: list[str], out: Path, timeout) -> tuple[list[str], list[str], float]:
    """``argv`` run to ``out``; past ``timeout`` seconds its whole process group is killed
    (``mafft`` is a shell script: killing the script alone leaves its workers running)."""
    with Timer() as t, open(out, "w") as fh:
        proc = subprocess.Popen(argv, stdout=fh, stderr=subprocess.PIPE, start_new_session=True)
        try:
            _, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            raise PeerFailed(f"mafft did not finish in {timeout:g} s (killed)") from None
    if proc.returncode != 0:
        raise PeerFailed(f"mafft exited with {proc.returncode}: {err[-300:]!r}")
    names, rows = read_reference(out)
    return names, rows, t.seconds


def run_case(case, args, work: Path) -> list[dict]:
    from torchmsa.addmerge import add, merge

    inp, ref, core = case_files(args.data / args.dataset, case["case"])
    names, rows = read_reference(ref)
    if len(names) < 4:
        return []
    exe = shutil.which("mafft")
    if exe is None:
        raise SystemExit("error: mafft is not installed (apt-get install mafft)")
    out = []
    base = {"dataset": args.dataset, "case": case["case"], "ref_set": case["ref_set"]}
    # add: two thirds existing, a third added
    keep, new = split(names, case["case"], 2 / 3)
    existing = realign(names, rows, keep, args.device)
    new_seqs = {names[i]: rows[i].replace("-", "") for i in new}
    with Timer() as t:
        res = add(existing, new_seqs, device=args.device)
    sp, tc = score(res.names, res.rows, ref, core)
    out.append({**base, "tool": "torchmsa", "variant": "add", "sp": sp, "tc": tc, "s": t.seconds})
    ex_path = write_fasta(work / "existing.fa", existing.names, existing.rows)
    new_path = write_fasta(work / "new.fa", list(new_seqs), list(new_seqs.values()))
    argv = [exe, "--add", str(new_path), "--thread", str(args.threads), "--quiet", str(ex_path)]
    out.append(_peer(base, "add", argv, work / "mafft_add.fa", ref, core, args.timeout))
    # merge: halves
    half_a, half_b = split(names, case["case"] + "/merge", 0.5)
    aln_a = realign(names, rows, half_a, args.device)
    aln_b = realign(names, rows, half_b, args.device)
    with Timer() as t:
        res = merge(aln_a, aln_b, device=args.device)
    sp, tc = score(res.names, res.rows, ref, core)
    out.append({**base, "tool": "torchmsa", "variant": "merge", "sp": sp, "tc": tc, "s": t.seconds})
    both = write_fasta(work / "both.fa", aln_a.names + aln_b.names, aln_a.rows + aln_b.rows)
    na, nb = len(aln_a), len(aln_b)
    table = work / "table"
    table.write_text(
        " ".join(str(i + 1) for i in range(na))
        + "\n"
        + " ".join(str(na + i + 1) for i in range(nb))
        + "\n"
    )
    argv = [exe, "--merge", str(table), "--thread", str(args.threads), "--quiet", str(both)]
    out.append(_peer(base, "merge", argv, work / "mafft_merge.fa", ref, core, args.timeout))
    return out


def _peer(base, variant, argv, out_path, ref, core, timeout) -> dict:
    row = {**base, "tool": "mafft", "variant": variant}
    try:
        names, rows, seconds = mafft(argv, out_path, timeout)
    except (PeerFailed, OSError, ValueError, subprocess.TimeoutExpired) as exc:
        return {**row, "error": str(exc)}
    sp, tc = score(names, rows, ref, core)
    return {**row, "sp": sp, "tc": tc, "s": seconds}


def accuracy(args) -> None:
    cases = select_cases(load_cases(args.data / args.dataset), args.cases, args.limit)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for case in cases:
            got = run_case(case, args, Path(tmp))
            rows += got
            for r in got:
                print(
                    f"{r['case']:<10} {r['variant']:<6} {r['tool']:<9} "
                    f"SP {r.get('sp', float('nan')):.4f} TC {r.get('tc', float('nan')):.4f}",
                    file=sys.stderr,
                )
    append_rows("add_merge", rows, run_metadata(args.device), args.out)
    summary = []
    for variant in ("add", "merge"):
        for tool in ("torchmsa", "mafft"):
            got = [r for r in rows if r["variant"] == variant and r["tool"] == tool and "sp" in r]
            if got:
                summary.append(
                    {
                        "variant": variant,
                        "tool": tool,
                        "cases": len(got),
                        "SP": round(sum(r["sp"] for r in got) / len(got), 4),
                        "TC": round(sum(r["tc"] for r in got) / len(got), 4),
                        "s": round(sum(r["s"] for r in got), 2),
                    }
                )
    print(markdown_table(summary))


def family(n: int, length: int, seed: int, prefix: str) -> dict[str, str]:
    rng = random.Random(seed)
    root = "".join(rng.choice(AA) for _ in range(length))
    out = {}
    for i in range(n):
        s = []
        for c in root:
            r = rng.random()
            if r < 0.05:
                continue
            s.append(rng.choice(AA) if r < 0.2 else c)
            if rng.random() < 0.03:
                s.append(rng.choice(AA))
        out[f"{prefix}{i}"] = "".join(s)
    return out


def timing(args) -> None:
    import torch

    import torchmsa
    from torchmsa.addmerge import add

    caches = cache_state()
    n_ref, n_add, length = (50, 200, 60) if args.quick else (args.n_ref, args.n_add, args.length)
    fam = family(n_ref + n_add, length, 7, "s")
    names = list(fam)
    ref = torchmsa.align({k: fam[k] for k in names[:n_ref]}, device=args.device, mode="fast")
    new = {k: fam[k] for k in names[n_ref:]}
    cuda = torch.device(ref.codes.device).type == "cuda" or str(args.device).startswith("cuda")
    rows = []
    # the first call pays what this process has not compiled or loaded yet (Triton's and
    # numba's disk caches as found); the second is the in-process-warm figure
    for variant in ("add-timing-first", "add-timing-again"):
        with Timer(cuda=cuda) as t:
            out = add(ref, new, device=args.device)
        kept = [j for j in range(out.width) if any(r[j] != "-" for r in out.rows[:n_ref])]
        same = ["".join(r[j] for j in kept) for r in out.rows[:n_ref]] == ref.rows
        rows.append(
            {
                "dataset": "synthetic",
                "case": f"ref{n_ref}-add{n_add}-len{length}",
                "tool": "torchmsa",
                "variant": variant,
                "s": t.seconds,
                "width": out.width,
                "reference_kept": same,
                "caches": caches,
            }
        )
        print(rows[-1], flush=True)
    rows += _process_timing(ref, new, n_ref, args)
    append_rows("add_merge", rows, run_metadata(args.device), args.out)
    print(markdown_table(rows))


def _process_timing(ref, new: dict, n_ref: int, args) -> list[dict]:
    """The same add as whole fresh processes, as a user runs it: ``torchmsa align --add`` (the
    disk caches as the in-process calls left them) and ``mafft --add`` beside it."""
    case = f"ref{n_ref}-add{len(new)}-len{args.length if not args.quick else 60}"
    out = []
    with tempfile.TemporaryDirectory(prefix="torchmsa-add-") as tmp:
        work = Path(tmp)
        ref_path = write_fasta(work / "ref.fasta", ref.names, ref.rows)
        new_path = write_fasta(work / "new.fasta", list(new), list(new.values()))
        ours = [sys.executable, "-m", "torchmsa", "align", "--add", str(new_path), str(ref_path)]
        ours += ["-o", str(work / "ours.fasta"), "--device", str(args.device), "-q"]
        ours += ["--threads", str(args.threads)]
        theirs = ["mafft", "--add", str(new_path), "--thread", str(args.threads), str(ref_path)]
        for tool, argv in (("torchmsa", ours), ("mafft-add", theirs)):
            row = {"dataset": "synthetic", "case": case, "tool": tool, "variant": "add-process"}
            if tool == "mafft-add" and shutil.which("mafft") is None:
                out.append({**row, "note": "mafft is not installed"})
                continue
            try:
                if tool == "torchmsa":
                    with Timer() as t:
                        proc = subprocess.run(
                            argv, cwd=tmp, capture_output=True, text=True, timeout=args.timeout
                        )
                    if proc.returncode:
                        raise PeerFailed(f"exit {proc.returncode}: {proc.stderr[-300:]}")
                    names, rows_ = read_reference(work / "ours.fasta")
                    seconds = t.seconds
                else:
                    names, rows_, seconds = mafft(argv, work / "theirs.fasta", args.timeout)
            except (PeerFailed, subprocess.TimeoutExpired) as exc:
                out.append({**row, "note": str(exc)[:300]})
                continue
            kept = [j for j in range(len(rows_[0])) if any(r[j] != "-" for r in rows_[:n_ref])]
            same = ["".join(r[j] for j in kept).upper() for r in rows_[:n_ref]] == [
                r.upper() for r in ref.rows
            ]
            out.append({**row, "s": seconds, "width": len(rows_[0]), "reference_kept": same})
            print(out[-1], flush=True)
    return out


def cache_state() -> str:
    """How full the on-disk compile caches were when the timing started: the number of
    entries in Triton's cache folder and of numba's index files (``*.nbi``). Called after
    ``import torchmsa``, which has set both folders' variables from ``TORCHMSA_CACHE_DIR``."""
    import torchmsa  # noqa: F401  (torchmsa.runtime: the cache folders)

    triton = os.environ.get("TRITON_CACHE_DIR") or os.path.expanduser("~/.triton/cache")
    numba = os.environ.get("NUMBA_CACHE_DIR", "")
    n_triton = len(os.listdir(triton)) if os.path.isdir(triton) else 0
    n_numba = len(list(Path(numba).rglob("*.nbi"))) if os.path.isdir(numba) else 0
    numba_text = f"{n_numba} numba indexes" if numba else "numba's in the package folders"
    return f"{n_triton} triton entries, {numba_text}"


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dataset", default="balibase3")
    p.add_argument("--cases", default="", help="comma list of case names / prefixes / sets")
    p.add_argument("--limit", type=int, default=None, help="this many cases, evenly spaced")
    p.add_argument("--device", default="auto")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--timeout", type=float, default=600)
    p.add_argument("--timing", action="store_true", help="the 10,000-into-1,000 timing case")
    p.add_argument("--n-ref", type=int, default=1000)
    p.add_argument("--n-add", type=int, default=10000)
    p.add_argument("--length", type=int, default=300)
    p.add_argument("--quick", action="store_true", help="tiny sizes (CPU smoke run)")
    p.add_argument("--out", default=str(RESULTS_DIR))
    args = p.parse_args(argv)
    args.data = DATA_DIR
    args.cases = [t for t in args.cases.split(",") if t]
    set_threads(args.threads)
    if args.timing:
        timing(args)
    else:
        accuracy(args)


if __name__ == "__main__":
    main()
