"""``torchmsa batch``: many sequence files aligned through the service's machinery (a store, a
worker, the shared caches), without a server.

Inputs: a folder (its sequence files: ``.fa .fasta .fas .faa .fna .seq`` and ``.gz`` of them;
earlier outputs ``*.aln.*`` are left out) or a manifest (a text file of paths, one a line,
relative to the manifest; ``#`` starts a comment). Each ``NAME.fasta`` gives
``NAME.aln.fasta`` (the extension follows ``--format``) beside it or in ``-o OUTDIR``, written
atomically. A rerun skips the inputs whose output is newer than they are, so an interrupted
batch resumes; with ``--data DIR`` the store (and its caches) persists too, else it lives in
a temporary folder. A file that cannot be aligned is reported and the others finish; the exit
status is then 1.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from torchmsa.cli.common import add_scoring
from torchmsa.errors import ArgumentError

__all__ = ["add_parser", "run", "find_inputs", "output_path"]

SUFFIXES = (".fa", ".fasta", ".fas", ".faa", ".fna", ".seq")
EXTENSIONS = {"fasta": "fasta", "clustal": "aln", "stockholm": "sto", "phylip": "phy", "a3m": "a3m"}


def add_parser(sub) -> None:
    p = sub.add_parser(
        "batch",
        help="align many files through one store and worker (resumable)",
        description=__doc__.split("\n\n", 1)[1],
    )
    p.add_argument("input", help="a folder of sequence files, or a manifest listing them")
    p.add_argument("-o", "--outdir", help="write results here (default: beside each input)")
    p.add_argument("--format", default="fasta", choices=list(EXTENSIONS), help="output format")
    p.add_argument(
        "--mode", default=None, choices=["auto", "fast", "default", "accurate"], help="as align"
    )
    p.add_argument(
        "--tree",
        default=None,
        choices=["auto", "upgma", "upgma_mafft", "nj", "single", "lcs", "parttree"],
        help="guide tree method, as align",
    )
    p.add_argument("--config", metavar="NAME=VALUE", action="append", default=[], help="as align")
    p.add_argument("--data", help="the store's folder (default: a temporary one)")
    p.add_argument("--db", help="a store URL instead (postgresql://USER@HOST/DB)")
    p.add_argument(
        "--cpu-workers",
        type=int,
        default=1,
        help="CPU worker processes beside the GPU batch (0: in this process; default 1)",
    )
    p.add_argument("-q", "--quiet", action="store_true", help="only the summary and failures")
    add_scoring(p, "BLOSUM62 / NUC.4.4")
    p.set_defaults(func=run)


def _is_input(path: Path) -> bool:
    name = path.name.lower()
    if name.endswith(".gz"):
        name = name[:-3]
    return path.is_file() and name.endswith(SUFFIXES) and ".aln." not in name


def find_inputs(source: str) -> list[Path]:
    """The sequence files of a folder (sorted) or of a manifest (its order)."""
    path = Path(source).expanduser()
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if _is_input(p))
        if not files:
            raise ArgumentError(
                f"no sequence files in {source!r} (looked for {', '.join(SUFFIXES)}, .gz too)"
            )
        return files
    if not path.is_file():
        raise ArgumentError(f"cannot read {source!r}: no such folder or manifest file")
    files = []
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            item = Path(line).expanduser()
            files.append(item if item.is_absolute() else path.parent / item)
    if not files:
        raise ArgumentError(f"the manifest {source!r} lists no files; give one path a line")
    return files


def output_path(src: Path, outdir: str | None, fmt: str) -> Path:
    """Where the alignment of ``src`` goes: ``NAME.aln.<ext>`` beside it or in ``outdir``."""
    name = src.name
    if name.lower().endswith(".gz"):
        name = name[:-3]
    stem = name.rsplit(".", 1)[0] if "." in name else name
    folder = Path(outdir).expanduser() if outdir else src.parent
    return folder / f"{stem}.aln.{EXTENSIONS[fmt]}"


def _options(args) -> dict:
    opts = {
        "mode": args.mode,
        "tree": args.tree,
        "matrix": args.matrix,
        "gap_open": args.gap_open,
        "gap_extend": args.gap_extend,
        "seqtype": None if args.seqtype == "auto" else args.seqtype,
        "config": list(args.config) or None,
    }
    return {k: v for k, v in opts.items() if v is not None}


def _read(src: Path) -> str:
    from torchmsa.io.sources import read_text

    return read_text(str(src))[1]


def _write(target: Path, text: str) -> None:
    from torchmsa.cli.common import emit

    target.parent.mkdir(parents=True, exist_ok=True)
    emit(text, str(target))


def run(args) -> int:
    from torchmsa.serve.store import Store
    from torchmsa.serve.worker import Worker

    files = find_inputs(args.input)
    if args.outdir and len({output_path(f, args.outdir, args.format) for f in files}) < len(files):
        raise ArgumentError("two inputs share a name; their outputs in --outdir would collide")
    options = _options(args)
    say = (lambda *a: None) if args.quiet else (lambda *a: print(*a, file=sys.stderr))
    tmp = None if (args.data or args.db) else tempfile.TemporaryDirectory(prefix="torchmsa-")
    store = Store.open(args.db, data_dir=args.data or tmp.name)
    failed, done, skipped = [], 0, 0
    t0 = time.perf_counter()
    try:
        store.requeue_at_start()
        pending: dict[str, tuple[Path, Path]] = {}
        for src in files:
            out = output_path(src, args.outdir, args.format)
            if out.exists() and src.exists() and out.stat().st_mtime >= src.stat().st_mtime:
                skipped += 1
                say(f"skipped {src} (done: {out})")
                continue
            try:
                info = store.submit(_read(src), options, owner="batch")
            except (OSError, ValueError) as exc:
                failed.append((src, " ".join(str(exc).split())))
                continue
            pending[info.id] = (src, out)
        worker = Worker(store, device=args.device, cpu_workers=args.cpu_workers)
        try:
            while pending:
                for job_id in list(pending):
                    info = store.job(job_id, "batch")
                    if info.state in ("done", "failed"):
                        src, out = pending.pop(job_id)
                        if info.state == "failed":
                            failed.append((src, info.error))
                            continue
                        _write(out, store.result(job_id, args.format, "batch"))
                        done += 1
                        say(f"aligned {src} -> {out} ({info.placement})")
                if pending and worker.run_once() == 0:
                    time.sleep(0.05)
        finally:
            worker.close()
    finally:
        store.close()
        if tmp is not None:
            tmp.cleanup()
    for src, why in failed:
        print(f"torchmsa: error: {src}: {why}", file=sys.stderr)
    print(
        f"torchmsa batch: {done} aligned, {skipped} skipped (done before), {len(failed)} failed, "
        f"{time.perf_counter() - t0:.1f} s",
        file=sys.stderr,
    )
    return 1 if failed else 0
