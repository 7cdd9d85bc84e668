"""Identical sequences (issue #43): N copies of one protein, each run in a fresh process.

    python -m benchmarks.duplicates [--n 1000] [--length 300] [--modes default,accurate]
        [--repeats 3] [--threads 2] [--out DIR]

Per mode and repeat, two fresh processes on the CPU:

* ``api``: ``torchmsa.align(FILE, device="cpu", mode=MODE)``; ``s`` is the call alone (timed
  inside the process), ``process_s`` the whole process (imports included), ``peak_mib`` its
  peak resident memory;
* ``cli``: ``python -m torchmsa align FILE -o OUT --mode MODE``; ``process_s`` and
  ``peak_mib`` as above.

The output is checked: every row of the alignment equals the input sequence (no gaps). Targets
(issue #43): default mode <= 2 s, accurate mode <= 1 GB. One row per run in
``duplicates.csv`` in ``--out`` (``benchmarks/results``).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.harness import append_rows, markdown_table, run_metadata

_API = (
    "import sys, time\n"
    "import torchmsa\n"
    "t0 = time.perf_counter()\n"
    "aln = torchmsa.align(sys.argv[1], device='cpu', mode=sys.argv[2])\n"
    "s = time.perf_counter() - t0\n"
    "seq = open(sys.argv[1]).read().split()[1]\n"
    "ok = aln.width == len(seq) and all(r == seq for r in aln.rows)\n"
    "print(s, ok)\n"
)


def _run(cmd: list[str], env: dict, tmp: Path) -> tuple[float, float, str]:
    """(wall seconds, peak MiB, stdout) of one child process, reaped with ``os.wait4`` for
    its own resource usage."""
    out_path, err_path = tmp / "stdout", tmp / "stderr"
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        tail = err_path.read_text(errors="replace")[-500:]
        raise RuntimeError(f"{cmd[:4]} failed ({proc.returncode}): {tail}")
    return wall, usage.ru_maxrss / 1024, out_path.read_text()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=1000)
    p.add_argument("--length", type=int, default=300)
    p.add_argument("--modes", default="default,accurate")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    rng = np.random.default_rng(0)
    seq = "".join(np.array(list("ACDEFGHIKLMNPQRSTVWY"))[rng.integers(0, 20, args.length)])
    env = dict(os.environ, NUMBA_NUM_THREADS=str(args.threads), OMP_NUM_THREADS=str(args.threads))
    rows = []
    with tempfile.TemporaryDirectory(prefix="dups-") as tmp:
        path = Path(tmp) / "dups.fasta"
        path.write_text("".join(f">s{i}\n{seq}\n" for i in range(args.n)))
        for mode in args.modes.split(","):
            for _ in range(args.repeats):
                api = [sys.executable, "-c", _API, str(path), mode]
                wall, peak, out = _run(api, env, Path(tmp))
                s, ok = out.split()
                if ok != "True":
                    raise RuntimeError(f"{mode}: the rows are not the input sequence")
                rows.append({"case": f"{args.n}x{args.length}", "tool": "api", "mode": mode,
                             "s": float(s), "process_s": wall, "peak_mib": peak})  # fmt: skip
                cmd = [sys.executable, "-m", "torchmsa", "align", str(path), "-o",
                       str(Path(tmp) / "out.fasta"), "--mode", mode]  # fmt: skip
                wall, peak, _ = _run(cmd, env, Path(tmp))
                rows.append({"case": f"{args.n}x{args.length}", "tool": "cli", "mode": mode,
                             "process_s": wall, "peak_mib": peak})  # fmt: skip
    print(markdown_table(rows))
    path = append_rows("duplicates", rows, run_metadata("cpu"), args.out)
    print(f"appended {len(rows)} rows to {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
