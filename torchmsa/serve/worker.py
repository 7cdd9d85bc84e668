"""The worker: one per GPU (or one on a CPU-only host), also behind ``torchmsa batch``.

:meth:`Worker.run_once` claims every job waiting at that moment and

1. completes at once the jobs whose alignment is stored (placement ``"cache"``), and runs
   identical jobs (one job key) once, completing them all from the one result;
2. with ``share_trees``, builds each job's first guide tree from the store's distance cache
   (:mod:`torchmsa.serve.share`) and hands it to ``torchmsa.align_many`` (its
   ``first_trees`` keyword), which then builds no tree of its own (off by default: decision
   0036, the cache's lookups cost more than the 6-mer distances they save);
3. splits the rest with the cost model (:mod:`torchmsa.serve.costs`): GPU-worthy jobs run as
   one ``torchmsa.align_many`` batch per options set on the device, in this thread, while the
   small ones run on CPU worker processes (a ``ProcessPoolExecutor`` with the spawn context,
   started once and kept warm) at the same time. On a CPU-only host every job goes to the CPU
   side; ``cpu_workers=0`` runs that side in this process (one ``align_many`` batch).

Results are what ``torchmsa.align`` returns for the same input and options (``batch ==
single``, tested). A batch that raises is rerun job by job, so one bad job fails alone.
"""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing
import os
import socket
import threading
import time

from torchmsa.records import Record
from torchmsa.serve.costs import CostModel, cells, split
from torchmsa.serve.jobs import align_kwargs, run_job, run_jobs
from torchmsa.serve.share import shared_first_tree, tree_method

__all__ = ["Worker", "watch_parent"]

PARENT_CHECK_S = 0.25
_TINY = ("MKVLAAGIVALLLAAGCSSAKEE", "MKVLSAGLVALLLSAGCSSAKDE", "MRVLAAGIVALLAGCSSAKEE")


def watch_parent(parent: int, every: float = PARENT_CHECK_S) -> None:
    """Exit this process (``os._exit``) as soon as ``parent`` is no longer its parent: a
    daemon thread that checks ``os.getppid()`` every ``every`` seconds."""
    if os.getppid() != parent:
        os._exit(3)

    def loop() -> None:
        while True:
            time.sleep(every)
            if os.getppid() != parent:
                os._exit(3)

    threading.Thread(target=loop, name="torchmsa-parent-watch", daemon=True).start()


class Worker:
    """Runs a store's queued jobs (see the module docstring).

    Arguments:
        store: the :class:`~torchmsa.serve.store.Store`.
        device: ``"auto"`` (CUDA if available, else the CPU), ``"cpu"``, ``"cuda:N"``.
        cpu_workers: CPU worker processes for the CPU side (0: in this process).
        poll: seconds :meth:`run_forever` waits when the queue is empty.
        name: this worker's name in the store (default ``host/pid/device``).
        max_batch: jobs claimed at most per :meth:`run_once`.
        costs: a :class:`~torchmsa.serve.costs.CostModel` (default: measured at the first
            run on a GPU, the fitted rule on a CPU-only host).
        share_trees: build k-mer first trees from the store's distance cache (default
            ``False``: each job builds its own and the cache is not filled; see decision
            0036 for why).
    """

    def __init__(
        self,
        store,
        *,
        device="auto",
        cpu_workers: int = 1,
        poll: float = 0.05,
        name: str | None = None,
        max_batch: int = 64,
        costs: CostModel | None = None,
        share_trees: bool = False,
    ):
        from torchmsa.ops.backend import resolve_device

        self.store = store
        self.device = str(resolve_device(device))
        self.gpu = self.device.startswith("cuda")
        self.cpu_workers = max(0, int(cpu_workers))
        self.poll = poll
        self.name = name or f"{socket.gethostname()}/{os.getpid()}/{self.device}"
        self.max_batch = max_batch
        self.costs = costs
        self.share_trees = bool(share_trees)
        self._pool: cf.ProcessPoolExecutor | None = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"Worker({self.name!r}, device={self.device!r}, cpu_workers={self.cpu_workers})"

    def close(self) -> None:
        """Stop the CPU worker processes."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def warm_up(self) -> float:
        """Get ready before the first job comes: measure the cost model (on a GPU), start
        the CPU worker processes and have each align a tiny family (imports, numba's
        compiled code). Seconds taken. :meth:`run_once` does what is left undone."""
        t0 = time.perf_counter()
        self._model()
        if self.cpu_workers:
            pool = self._cpu_pool()
            tiny = [Record(f"w{i}", f"w{i}", s) for i, s in enumerate(_TINY)]
            payload = (tiny, {"mode": "default"}, "protein", None)
            futures = [pool.submit(run_job, payload, 1) for _ in range(self.cpu_workers)]
            for fut in futures:
                fut.result()
        return time.perf_counter() - t0

    def _threads(self) -> int:
        """Threads of one CPU worker process."""
        return max(1, (os.cpu_count() or 1) // max(1, self.cpu_workers))

    def _model(self) -> CostModel:
        if self.costs is None:
            self.costs = (
                CostModel.measure(self.device, cpu_threads=self._threads())
                if self.gpu
                else CostModel.rule()
            )
        return self.costs

    def _cpu_pool(self) -> cf.ProcessPoolExecutor:
        if self._pool is None:
            ctx = multiprocessing.get_context("spawn")
            # each CPU worker process exits when this one is gone (a killed server)
            self._pool = cf.ProcessPoolExecutor(
                self.cpu_workers,
                mp_context=ctx,
                initializer=watch_parent,
                initargs=(os.getpid(),),
            )
        return self._pool

    def run_forever(self, stop: threading.Event) -> None:
        """:meth:`run_once` until ``stop`` is set (waiting ``poll`` s when idle)."""
        try:
            while not stop.is_set():
                if self.run_once() == 0:
                    stop.wait(self.poll)
        finally:
            self.close()

    def run_once(self) -> int:
        """Claim the waiting jobs, run them, return how many finished (done or failed)."""
        with self._lock:
            claimed = self.store.claim(self.name, self.max_batch)
            if not claimed:
                return 0
            return self._run(claimed)

    def _run(self, claimed) -> int:
        t_claim = time.time()
        finished = 0
        leaders: dict[str, list] = {}
        for info in claimed:
            key = self.store.job_key(info.id)
            res = self.store.cached(key)
            if res is not None:
                timings = {"queued": t_claim - info.created, "run": 0.0}
                self.store.complete(
                    info.id,
                    res,
                    timings,
                    {"alignment": True},
                    "cache",
                    "the same sequences and options were aligned before",
                    worker=self.name,
                )
                finished += 1
                continue
            leaders.setdefault(key, []).append(info)
        work = []
        for infos in leaders.values():
            lead = infos[0]
            try:
                records = self.store.input(lead.id, lead.owner)
                alphabet = _alphabet(self.store, lead.id)
                align_kwargs(lead.options, alphabet)
                work.append(_Work(lead, infos[1:], records, alphabet))
            except Exception as exc:  # noqa: BLE001 - a job's own error, recorded on the job
                finished += self._fail(infos, exc)
        for w in work:
            self._share(w)
        model = self._model()
        lanes = self.cpu_workers if self.cpu_workers else 1
        items = [(w.lead.id, cells(len(w.records), w.longest, w.mode)) for w in work]
        placed = split(items, model, lanes)
        for w in work:
            w.place = placed[w.lead.id]
            self.store.progress(w.lead.id, 0.1, w.place.where, w.place.reason)
        cpu = [w for w in work if w.place.where == "cpu-worker"]
        gpu = [w for w in work if w.place.where == "gpu-batch"]
        futures = {}
        if cpu and self.cpu_workers:
            pool = self._cpu_pool()
            threads = self._threads()
            for w in cpu:
                futures[pool.submit(run_job, w.payload(), threads)] = w
        if gpu:
            finished += self._batch(gpu, self.device)
        if cpu and not self.cpu_workers:
            finished += self._batch(cpu, "cpu")
        for fut in cf.as_completed(futures):
            w = futures[fut]
            try:
                finished += self._done(w, fut.result())
            except Exception as exc:  # noqa: BLE001
                finished += self._fail([w.lead, *w.followers], exc)
        return finished

    def _share(self, w) -> None:
        if not self.share_trees:
            return
        method = tree_method(w.records, w.lead.options, w.alphabet)
        if method is None:
            return
        t0 = time.perf_counter()
        hashes = self.store.hashes(w.lead.id)
        tree, stats = shared_first_tree(self.store, w.records, hashes, w.alphabet, method)
        w.tree = tree
        w.shared.update(stats)
        w.shared["tree_from_cache"] = tree is not None
        w.timings["first_tree"] = time.perf_counter() - t0

    def _batch(self, group: list, device: str) -> int:
        finished = 0
        by_options: dict[tuple, list] = {}
        for w in group:
            by_options.setdefault((repr(sorted(w.lead.options.items())), w.alphabet), []).append(w)
        for ws in by_options.values():
            trees = [w.tree for w in ws] if any(w.tree is not None for w in ws) else None
            try:
                results = run_jobs([w.payload()[:3] for w in ws], device, trees)
            except Exception as exc:  # noqa: BLE001 - one bad job fails alone
                if len(ws) > 1:
                    for w in ws:
                        finished += self._batch([w], device)
                else:
                    finished += self._fail([ws[0].lead, *ws[0].followers], exc)
                continue
            for w, res in zip(ws, results):
                w.shared["batch_jobs"] = len(ws)
                finished += self._done(w, res)
        return finished

    def _done(self, w, res) -> int:
        now = time.time()
        run = res.metadata.get("batch_seconds", res.metadata.get("seconds", 0.0))
        for k, info in enumerate([w.lead, *w.followers]):
            timings = dict(w.timings, queued=w.claimed - info.created, run=run)
            timings["total"] = now - info.created
            shared = dict(w.shared, alignment=k > 0)
            if k > 0:
                shared["ran_with"] = w.lead.id
            self.store.complete(
                info.id, res, timings, shared, w.place.where, w.place.reason, worker=self.name
            )
        return 1 + len(w.followers)

    def _fail(self, infos, exc: Exception) -> int:
        msg = f"{type(exc).__name__}: {exc}"
        for info in infos:
            self.store.fail(info.id, msg, worker=self.name)
        return len(infos)


def _alphabet(store, job_id: str) -> str:
    from sqlalchemy import select

    from torchmsa.serve.schema import jobs

    with store.transaction(read=True) as conn:
        return conn.execute(select(jobs.c.alphabet).where(jobs.c.id == job_id)).scalar_one()


class _Work:
    """One distinct job to run, the identical ones riding along, and what is known of it."""

    def __init__(self, lead, followers, records, alphabet):
        from torchmsa.pipeline.modes import resolve_mode
        from torchmsa.serve.jobs import check_options

        self.lead, self.followers = lead, followers
        self.records, self.alphabet = records, alphabet
        self.longest = max((len(r.seq) for r in records), default=0)
        _, config = check_options(lead.options)
        distinct = len({r.seq.upper() for r in records})
        self.mode = resolve_mode(config.mode, distinct, self.longest, config=config.auto)
        self.claimed = lead.started or time.time()
        self.tree = None
        self.place = None
        self.shared: dict = {"sequences": len(records)}
        self.timings: dict = {}

    def payload(self) -> tuple:
        return (self.records, self.lead.options, self.alphabet, self.tree)
