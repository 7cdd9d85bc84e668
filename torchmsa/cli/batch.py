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

Under torchrun (``torchrun --nproc-per-node 4 -m torchmsa batch DIR -o OUT``; on several
hosts the same command with ``--nnodes``; ``--distributed off`` declines) rank 0 lists the
inputs, skips those done before, reads the rest and cuts them into chunks by estimated cost,
costliest first, that the ranks claim as they become free (decision 0063); each rank aligns
what it claims on its own GPU (``cuda:LOCAL_RANK``) or the CPU with a store of its own
(``--data DIR`` keeps ``DIR/rank-N``; ``--db`` is refused), and rank 0 writes every output
as the results arrive, so inputs and outputs need only be on its host and an interrupted
run resumes as above. The outputs are those of one process. Each rank logs one line of the
files it ran and how long it took; rank 0 prints the failures and the summary; every rank
exits with the same status.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

from torchmsa.cli.common import add_distributed, add_scoring, number
from torchmsa.errors import ArgumentError, TorchMSAError

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
    add_distributed(p, "split the files")
    p.add_argument(
        "--rank-timeout",
        type=number,
        default=600.0,
        metavar="S",
        help="under torchrun: seconds a rank waits for a silent one before it stops (default 600)",
    )
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


def _done_before(src: Path, out: Path) -> bool:
    return out.exists() and src.exists() and out.stat().st_mtime >= src.stat().st_mtime


def _align(batches, args, device, data_dir: str | None, report) -> None:
    """Align the items of ``batches`` (lists of ``(index, source, text or None)``: ``None``
    reads the source) through one store and worker, a batch once the one before is done
    (under torchrun each batch is a chunk this rank claimed); ``report((index, placement,
    text, None))`` for each alignment as it is done, ``report((index, None, None, error))``
    for each failure."""
    from torchmsa.serve.store import Store
    from torchmsa.serve.worker import Worker

    options = _options(args)
    tmp = None if (data_dir or args.db) else tempfile.TemporaryDirectory(prefix="torchmsa-")
    store = Store.open(args.db, data_dir=data_dir or tmp.name)
    try:
        store.requeue_at_start()
        pending: dict[str, int] = {}
        feed = iter(batches)

        def top_up() -> None:  # the next batch, once the last one is done
            while not pending:
                items = next(feed, None)
                if items is None:
                    return
                for index, src, text in items:
                    try:
                        text = _read(Path(src)) if text is None else text
                        info = store.submit(text, options, "batch")
                    except (OSError, ValueError) as exc:
                        report((index, None, None, " ".join(str(exc).split())))
                        continue
                    pending[info.id] = index

        top_up()
        worker = Worker(store, device=device, cpu_workers=args.cpu_workers)
        try:
            while pending:
                for job_id in list(pending):
                    info = store.job(job_id, "batch")
                    if info.state in ("done", "failed"):
                        index = pending.pop(job_id)
                        if info.state == "failed":
                            report((index, None, None, info.error))
                        else:
                            text = store.result(job_id, args.format, "batch")
                            report((index, info.placement, text, None))
                if pending and worker.run_once() == 0:
                    time.sleep(0.05)
                top_up()
        finally:
            worker.close()
    finally:
        store.close()
        if tmp is not None:
            tmp.cleanup()


def _summary(done: int, skipped: int, failed: dict, files: list, seconds: float, ranks=1) -> int:
    for index in sorted(failed):
        print(f"torchmsa: error: {files[index]}: {failed[index]}", file=sys.stderr)
    where = f" on {ranks} ranks" if ranks > 1 else ""
    print(
        f"torchmsa batch: {done} aligned, {skipped} skipped (done before), {len(failed)} failed, "
        f"{seconds:.1f} s{where}",
        file=sys.stderr,
        flush=True,
    )
    return 1 if failed else 0


def run(args) -> int:
    from torchmsa.distributed.world import wanted

    world = wanted({"auto": "auto", "on": True, "off": False}[args.distributed])
    if world is not None:
        return _run_ranks(args, world)
    files = _checked_inputs(args)
    say = (lambda *a: None) if args.quiet else (lambda *a: print(*a, file=sys.stderr))
    t0 = time.perf_counter()
    failed: dict[int, str] = {}
    done, skipped, items = 0, 0, []
    outs = [output_path(f, args.outdir, args.format) for f in files]
    for index, src in enumerate(files):
        if _done_before(src, outs[index]):
            skipped += 1
            say(f"skipped {src} (done: {outs[index]})")
        else:
            items.append((index, str(src), None))

    def report(record) -> None:
        nonlocal done
        index, placement, text, error = record
        if error is not None:
            failed[index] = error
            return
        _write(outs[index], text)
        done += 1
        say(f"aligned {files[index]} -> {outs[index]} ({placement})")

    _align([items], args, args.device, args.data, report)
    return _summary(done, skipped, failed, files, time.perf_counter() - t0)


def _checked_inputs(args) -> list[Path]:
    files = find_inputs(args.input)
    if args.outdir and len({output_path(f, args.outdir, args.format) for f in files}) < len(files):
        raise ArgumentError("two inputs share a name; their outputs in --outdir would collide")
    return files


def _cost_rule(args):
    """``(n, longest) -> cost`` under the options (the defaults' rule when they are invalid:
    every job then fails alike)."""
    from torchmsa.distributed.partition import cost_rule
    from torchmsa.serve.jobs import check_options

    try:
        _, config = check_options(_options(args))
    except ValueError:
        config = None
    return cost_rule(config)


def _leader_plan(args, ranks: int, say):
    """Rank 0's plan: the inputs, their outputs, what was done before or cannot be read, and
    the rest in chunks for the ranks to claim (``{"items": [(index, source, text)], "cost":
    cells}``, costliest first: :func:`torchmsa.distributed.claims.guided`)."""
    from torchmsa.distributed.claims import guided
    from torchmsa.distributed.partition import text_shape

    files = _checked_inputs(args)
    outs = [output_path(f, args.outdir, args.format) for f in files]
    cost_of = _cost_rule(args)
    items, costs, failed, skipped = [], [], {}, 0
    for index, src in enumerate(files):
        if _done_before(src, outs[index]):
            skipped += 1
            say(f"skipped {src} (done: {outs[index]})")
            continue
        try:
            text = _read(src)
        except (OSError, ValueError) as exc:
            failed[index] = " ".join(str(exc).split())
            continue
        n, longest = text_shape(text)
        items.append((index, str(src), text))
        costs.append(cost_of(n, longest))
    chunks = [
        {"items": [items[k] for k in chunk], "cost": sum(costs[k] for k in chunk)}
        for chunk in guided(costs, ranks)
    ]
    return files, outs, failed, skipped, chunks


def _run_ranks(args, world) -> int:
    """``torchmsa batch`` as one rank of several (see the module docstring)."""
    from torchmsa.distributed.claims import Claims
    from torchmsa.distributed.many import compact
    from torchmsa.distributed.session import session
    from torchmsa.pipeline.placement import thread_cap

    if args.db:
        raise ArgumentError(
            "--db under torchrun: the ranks would share one queue; give --data DIR (each rank "
            "keeps DIR/rank-N) or neither"
        )
    say = (lambda *a: None) if args.quiet else (lambda *a: print(*a, file=sys.stderr))
    t0 = time.perf_counter()
    with session(world, args.device, timeout_s=args.rank_timeout, keep=False) as s:
        plan, chunks = None, None
        if s.leader:
            try:
                *plan, chunks = _leader_plan(args, s.size, say)
            except (TorchMSAError, ValueError, OSError) as exc:
                chunks = exc  # every rank stops with rank 0's error
            say(f"torchmsa batch: {s.tag}: planned in {time.perf_counter() - t0:.1f} s")
        claims = Claims(s, chunks)  # rank 0's texts now live in its store until claimed
        chunks = None
        files, outs, failed, skipped = plan if s.leader else (None, None, {}, 0)
        done = 0

        def deliver(record) -> None:  # rank 0, the courier's thread
            nonlocal done
            index, placement, text, error, rank = record
            if error is None:
                try:
                    _write(outs[index], text)
                except ValueError as exc:
                    error = str(exc)
            if error is not None:
                failed[index] = error
                return
            done += 1
            say(f"aligned {files[index]} -> {outs[index]} ({placement}, rank {rank})")

        def work(report) -> None:
            t1, ok, bad = time.perf_counter(), 0, 0

            def mine(record) -> None:
                nonlocal ok, bad
                ok, bad = ok + (record[3] is None), bad + (record[3] is not None)
                report((*record, s.rank))

            data = None if args.data is None else str(Path(args.data) / f"rank-{s.rank}")
            # the host's cores shared between its ranks: this process's numba and torch
            # threads, and numba's in the CPU worker processes it starts
            cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
            threads = max(1, (cores or os.cpu_count() or 1) // max(1, world.local_size))
            os.environ.setdefault("NUMBA_NUM_THREADS", str(threads))
            indices, cost = [], 0.0

            def claimed():
                nonlocal cost
                for chunk in claims:
                    indices.extend(i for i, _, _ in chunk["items"])
                    cost += chunk["cost"]
                    yield chunk["items"]

            with thread_cap(threads):
                _align(claimed(), args, str(s.device), data, mine)
            # one write: the ranks share a standard error, and print's text and its newline
            # are two writes, between which another rank's line once fell (CI)
            sys.stderr.write(
                f"torchmsa batch: {s.tag}: ran {len(indices)} files in {claims.claimed} "
                f"chunks of {claims.count} ({compact(indices)}; est. {cost:.3g} cells), "
                f"{ok} aligned, {bad} failed, {time.perf_counter() - t1:.1f} s\n"
            )
            sys.stderr.flush()

        s.run(work, deliver if s.leader else None)
        claims.close()  # every rank is past claiming: s.run returns once all are done
        status = 0
        if s.leader:
            seconds = time.perf_counter() - t0
            status = _summary(done, skipped, failed, files, seconds, s.size)
        return s.broadcast(status)
