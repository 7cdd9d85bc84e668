"""The persistent store of a torchmsa service: the job queue, inputs, results and the shared
caches, on SQLite (the default, one file in a data folder, WAL mode) or PostgreSQL (psycopg 3;
several hosts' workers then share one queue and one cache), through SQLAlchemy Core.

Guarantees: :meth:`Store.submit` writes the job and its input in one transaction before it
returns; :meth:`Store.claim` moves queued jobs to running atomically (``BEGIN IMMEDIATE`` on
SQLite, ``FOR UPDATE SKIP LOCKED`` on PostgreSQL), so two workers never take one job;
:meth:`Store.complete` writes the result and the job's new state in one transaction;
:meth:`Store.requeue_running` puts back the jobs a killed server held. Job ids come from
``secrets.token_urlsafe(16)``; every read and delete takes an ``owner`` and never shows
another owner's job.

Beyond the contract: ``Store.open(..., max_bytes=, max_seqs=)`` (limits raising
:class:`~torchmsa.serve.jobs.LimitError`); :attr:`JobInfo.placement_reason`; ``complete``
also takes a :class:`~torchmsa.serve.jobs.Result`; :meth:`Store.input`,
:meth:`Store.cached`, :meth:`Store.evict`, :meth:`Store.stats`, :attr:`Store.engine`.
A job whose key has a stored alignment is done when ``submit`` returns (placement
``"cache"``).
"""

from __future__ import annotations

import contextlib
import json
import secrets
import socket
import threading
import time
import zlib
from pathlib import Path
from typing import NamedTuple

from sqlalchemy import delete, insert, select, update

from torchmsa.errors import ArgumentError
from torchmsa.records import Record
from torchmsa.serve import cache
from torchmsa.serve.engine import READ, default_data_dir, make_engine, write_lock
from torchmsa.serve.jobinfo import JobInfo, info_of_row
from torchmsa.serve.jobs import JobNotDone, JobNotFound, Result, options_json, prepare
from torchmsa.serve.limits import MAX_BYTES, MAX_SEQS
from torchmsa.serve.schema import SCHEMA_VERSION, inputs, jobs, meta, metadata

__all__ = ["JobInfo", "Staged", "Store", "STATES", "default_data_dir", "new_job_id"]

STATES = ("queued", "running", "done", "failed", "deleted")
EVICT_EVERY_S = 2.0  # the least time between two evictions after complete()


def new_job_id() -> str:
    """A random job id (``secrets.token_urlsafe(16)``) that does not start with ``-``, which a
    command line would take for an option (``torchmsa status -abc...``)."""
    while (job_id := secrets.token_urlsafe(16)).startswith("-"):
        pass
    return job_id


class Staged(NamedTuple):
    """A job checked and ready to insert (:meth:`Store.staged`)."""

    row: dict
    stored: dict  # its ``inputs`` row
    t0: float  # when its checks began (a cached job's ``timings["total"]``)


class Store:
    """Jobs, inputs, results and the shared caches in one database (see the module docstring).

    Thread- and process-safe: each call runs in its own transaction on a pooled connection;
    on SQLite, writers queue on :func:`~torchmsa.serve.engine.write_lock` (threads and
    processes, handed over at once) and readers take no lock.
    """

    def __init__(self, engine, *, cap_bytes: int, max_bytes: int, max_seqs: int, url: str):
        self.engine = engine
        self.cap_bytes = cap_bytes
        self.max_bytes = max_bytes
        self.max_seqs = max_seqs
        self.url = url
        self._evict_lock = threading.Lock()
        self._evicted = 0.0
        self._lock = write_lock(url)  # writers queue here, see torchmsa.serve.engine
        metadata.create_all(engine)
        with engine.begin() as conn:
            have = conn.execute(select(meta.c.value).where(meta.c.name == "schema")).scalar()
            if have is None:
                cache.insert_ignore(conn, meta, [{"name": "schema", "value": str(SCHEMA_VERSION)}])
            elif int(have) != SCHEMA_VERSION:
                raise ArgumentError(
                    f"the store at {url!r} has schema version {have}, this torchmsa reads "
                    f"{SCHEMA_VERSION}; use a new --data folder or database"
                )

    @classmethod
    def open(
        cls,
        url: str | None = None,
        *,
        data_dir: str | Path | None = None,
        cap_bytes: int = 2 << 30,
        max_bytes: int = MAX_BYTES,
        max_seqs: int = MAX_SEQS,
    ) -> Store:
        """Open (creating it if need be) a store.

        Arguments:
            url: ``None`` (SQLite ``store.sqlite`` in ``data_dir``), ``"sqlite:///path"`` or
                ``"postgresql://user@host:port/db"`` (driven by psycopg 3).
            data_dir: the folder of the default SQLite store (default: $TORCHMSA_DATA, else
                ~/.cache/torchmsa).
            cap_bytes: the caches' size cap; least recently used entries go first.
            max_bytes, max_seqs: a submission's size and sequence-count limits.
        """
        engine, url = make_engine(url, data_dir)
        return cls(engine, cap_bytes=cap_bytes, max_bytes=max_bytes, max_seqs=max_seqs, url=url)

    def __repr__(self) -> str:
        return f"Store({self.url!r})"

    def close(self) -> None:
        self.engine.dispose()
        if hasattr(self._lock, "close"):
            self._lock.close()

    @contextlib.contextmanager
    def transaction(self, read: bool = False):
        """A connection in a transaction, committed at the end of the block: a writer (it
        queues on the store's write lock first) or, with ``read=True``, a reader (on SQLite
        it neither waits for nor holds up writers; it must not write)."""
        if read:
            with self.engine.connect() as conn:
                conn.execution_options(**{READ: True})
                with conn.begin():
                    yield conn
            return
        with self._lock, self.engine.begin() as conn:
            yield conn

    # ---- jobs ------------------------------------------------------------------------------

    def submit(self, fasta: str, options: dict | None = None, owner: str | None = None) -> JobInfo:
        """Check and persist a job (and its input) before returning it; a job whose
        alignment is stored already comes back done (:meth:`staged`, then :meth:`insert`)."""
        return self.insert([self.staged(fasta, options, owner)])[0]

    def staged(self, fasta: str, options: dict | None = None, owner: str | None = None) -> Staged:
        """A job checked and ready to insert, nothing written: the checks of
        :func:`~torchmsa.serve.jobs.prepare` (options checked once per options set), its row
        and its compressed input. Raises as :meth:`submit` does."""
        t0 = time.perf_counter()
        prep = prepare(fasta, options, max_bytes=self.max_bytes, max_seqs=self.max_seqs)
        names = [r.name for r in prep.records]
        descs = [r.description for r in prep.records]
        resid = [r.seq for r in prep.records]
        records = zlib.compress(json.dumps([names, descs, resid]).encode(), 1)
        job_id = new_job_id()
        row = {
            "id": job_id,
            "owner": owner,
            "state": "queued",
            "created": time.time(),
            "started": None,
            "finished": None,
            "n_seqs": len(prep.records),
            "mode": prep.options.get("mode", "auto"),
            "options": options_json(prep.options),
            "progress": 0.0,
            "timings": "{}",
            "shared": "{}",
            "placement": None,
            "placement_reason": None,
            "error": None,
            "worker": None,
            "job_key": prep.key,
            "alphabet": prep.alphabet,
            "input_bytes": len(fasta.encode("utf-8")),
        }
        stored = {"job_id": job_id, "records": records, "hashes": "\n".join(prep.hashes).encode()}
        return Staged(row, stored, t0)

    def insert(self, staged: list[Staged]) -> list[JobInfo]:
        """Persist staged jobs in one short transaction (group commit: ``POST /jobs`` requests
        that arrive together share it): the stored alignments of their keys are looked up
        and touched together (a job whose alignment is stored is done at once), and the jobs
        are inserted with their inputs. The :class:`JobInfo` are built from the rows written."""
        if not staged:
            return []
        with self.transaction() as conn:
            now = time.time()
            stored = cache.touch_results(conn, [st.row["job_key"] for st in staged], now)
            rows = []
            for st in staged:
                row = dict(st.row)
                if row["job_key"] in stored:
                    row.update(
                        state="done",
                        started=now,
                        finished=now,
                        progress=1.0,
                        timings=json.dumps({"total": time.perf_counter() - st.t0}),
                        shared=json.dumps({"alignment": True}),
                        placement="cache",
                        placement_reason="the same sequences and options were aligned before",
                    )
                rows.append(row)
            conn.execute(insert(jobs), rows)
            conn.execute(insert(inputs), [st.stored for st in staged])
        return [info_of_row(row) for row in rows]

    def job(self, job_id: str, owner: str | None = None) -> JobInfo | None:
        """The job, or ``None`` when there is none of that id for ``owner``."""
        with self.transaction(read=True) as conn:
            row = conn.execute(
                select(jobs).where((jobs.c.id == str(job_id)) & self._owned(owner))
            ).first()
        return None if row is None else info_of_row(row)

    def jobs(self, owner: str | None = None, states=None, limit: int = 100) -> list[JobInfo]:
        """``owner``'s jobs, newest first (deleted ones only when ``states`` asks)."""
        states = [states] if isinstance(states, str) else list(states or [])
        query = select(jobs).where(self._owned(owner))
        if states:
            query = query.where(jobs.c.state.in_(states))
        else:
            query = query.where(jobs.c.state != "deleted")
        query = query.order_by(jobs.c.created.desc()).limit(max(1, int(limit)))
        with self.transaction(read=True) as conn:
            return [info_of_row(r) for r in conn.execute(query)]

    def input(self, job_id: str, owner: str | None = None) -> list[Record]:
        """A job's records (names, descriptions, residues without gaps)."""
        with self.transaction(read=True) as conn:
            return self._records(conn, job_id, owner)

    def _records(self, conn, job_id: str, owner=None, check_owner: bool = True) -> list[Record]:
        query = select(inputs.c.records).join(jobs, jobs.c.id == inputs.c.job_id)
        query = query.where(inputs.c.job_id == job_id)
        if check_owner:
            query = query.where(self._owned(owner))
        blob = conn.execute(query).scalar()
        if blob is None:
            raise JobNotFound(
                f"no job {job_id!r}; check the id (jobs of other users are not shown)"
            )
        names, descs, resid = json.loads(zlib.decompress(blob))
        return [Record(n, d, r) for n, d, r in zip(names, descs, resid)]

    def hashes(self, job_id: str) -> list[str]:
        """A job's sequence hashes, input order."""
        with self.transaction(read=True) as conn:
            blob = conn.execute(select(inputs.c.hashes).where(inputs.c.job_id == job_id)).scalar()
        return [] if not blob else bytes(blob).decode().split("\n")

    def result(self, job_id: str, fmt: str = "fasta", owner: str | None = None) -> str:
        """A finished job's alignment in a write format (:data:`torchmsa.io.WRITE_FORMATS`),
        or ``"newick"`` for its guide tree (``""`` for one sequence)."""
        from torchmsa.io import WRITE_FORMATS, format_alignment

        if fmt != "newick" and fmt not in WRITE_FORMATS:
            raise ArgumentError(
                f"Invalid value for `format`: {fmt!r}; use one of "
                f"{', '.join(WRITE_FORMATS)} or newick"
            )
        with self.transaction() as conn:
            row = conn.execute(
                select(jobs.c.state, jobs.c.job_key, jobs.c.error).where(
                    (jobs.c.id == str(job_id)) & self._owned(owner)
                )
            ).first()
            if row is None or row.state == "deleted":
                raise JobNotFound(
                    f"no job {job_id!r}; check the id (jobs of other users are not shown)"
                )
            if row.state != "done":
                why = f": {row.error}" if row.state == "failed" else "; ask again when it is done"
                raise JobNotDone(f"job {job_id!r} is {row.state}, it has no result{why}")
            res = cache.get_result(conn, row.job_key)
            records = self._records(conn, job_id, owner)
        if res is None:
            raise JobNotFound(f"the result of job {job_id!r} is gone; submit the job again")
        names = [r.name for r in records]
        if fmt == "newick":
            return res.newick(names)
        return format_alignment(names, res.rows, fmt, [r.description for r in records])

    def delete(self, job_id: str, owner: str | None = None) -> bool:
        """Forget a job, its input and (unless another job shares it) its result."""
        with self.transaction() as conn:
            row = conn.execute(
                select(jobs.c.state, jobs.c.job_key).where(
                    (jobs.c.id == str(job_id)) & self._owned(owner)
                )
            ).first()
            if row is None or row.state == "deleted":
                return False
            conn.execute(
                update(jobs)
                .where(jobs.c.id == job_id)
                .values(state="deleted", finished=time.time())
            )
            conn.execute(delete(inputs).where(inputs.c.job_id == job_id))
            others = conn.execute(
                select(jobs.c.id).where(
                    (jobs.c.job_key == row.job_key) & (jobs.c.state != "deleted")
                )
            ).first()
            if others is None:
                conn.execute(delete(cache.results).where(cache.results.c.job_key == row.job_key))
        return True

    @staticmethod
    def _owned(owner):
        return jobs.c.owner.is_(None) if owner is None else jobs.c.owner == owner

    # ---- the worker's side -------------------------------------------------------------------

    def claim(self, worker: str, limit: int) -> list[JobInfo]:
        """Move up to ``limit`` queued jobs, oldest first, to running for ``worker``. A job
        whose key another job is running stays queued (it will come from the cache)."""
        busy = select(jobs.c.job_key).where(jobs.c.state == "running")
        query = (
            select(jobs.c.id)
            .where((jobs.c.state == "queued") & jobs.c.job_key.not_in(busy))
            .order_by(jobs.c.created)
            .limit(max(1, int(limit)))
            .with_for_update(skip_locked=True, of=jobs)
        )
        now = time.time()
        with self.transaction() as conn:
            ids = list(conn.execute(query).scalars())
            if not ids:
                return []
            conn.execute(
                update(jobs)
                .where(jobs.c.id.in_(ids) & (jobs.c.state == "queued"))
                .values(state="running", started=now, worker=worker, progress=0.05)
            )
            rows = conn.execute(select(jobs).where(jobs.c.id.in_(ids)).order_by(jobs.c.created))
            return [info_of_row(r) for r in rows]

    def job_key(self, job_id: str) -> str | None:
        with self.transaction(read=True) as conn:
            return conn.execute(select(jobs.c.job_key).where(jobs.c.id == job_id)).scalar()

    def cached(self, key: str) -> Result | None:
        """The stored alignment of a job key, if any."""
        with self.transaction() as conn:
            return cache.get_result(conn, key)

    def progress(self, job_id: str, value: float, placement: str | None = None, reason=None):
        values = {"progress": float(value)}
        if placement is not None:
            values.update(placement=placement, placement_reason=reason)
        with self.transaction() as conn:
            conn.execute(
                update(jobs)
                .where((jobs.c.id == job_id) & (jobs.c.state == "running"))
                .values(**values)
            )

    def complete(
        self,
        job_id: str,
        aln,
        timings: dict,
        shared: dict,
        placement: str,
        reason=None,
        *,
        worker: str | None = None,
    ) -> None:
        """Store a job's alignment and mark it done, in one transaction (a deleted job
        stays deleted and keeps no result). With ``worker``, only while that worker holds
        the job (running): a worker outliving a killed server writes nothing."""
        res = aln if isinstance(aln, Result) else Result.of(aln)
        with self.transaction() as conn:
            row = conn.execute(
                select(jobs.c.state, jobs.c.job_key, jobs.c.worker).where(jobs.c.id == job_id)
            ).first()
            if row is None or row.state == "deleted":
                return
            if worker is not None and (row.state != "running" or row.worker != worker):
                return
            cache.put_result(conn, row.job_key, res)
            conn.execute(
                update(jobs)
                .where(jobs.c.id == job_id)
                .values(
                    state="done",
                    finished=time.time(),
                    progress=1.0,
                    timings=json.dumps(timings),
                    shared=json.dumps(shared),
                    placement=placement,
                    placement_reason=reason,
                    error=None,
                )
            )
        if time.monotonic() - self._evicted >= EVICT_EVERY_S:
            self.evict()

    def fail(self, job_id: str, error: str, *, worker: str | None = None) -> None:
        """Mark a job failed with ``error`` (one line); with ``worker``, only while that
        worker holds it."""
        where = (jobs.c.id == job_id) & (jobs.c.state != "deleted")
        if worker is not None:
            where = where & (jobs.c.state == "running") & (jobs.c.worker == worker)
        with self.transaction() as conn:
            conn.execute(
                update(jobs)
                .where(where)
                .values(state="failed", finished=time.time(), error=" ".join(str(error).split()))
            )

    def requeue_running(self, worker: str | None = None, host: str | None = None) -> int:
        """Put the running jobs back in the queue: every one, ``worker``'s (a worker process
        that died or was stopped), or those of the workers on ``host`` (their names start
        with ``host/``)."""
        where = jobs.c.state == "running"
        if worker is not None:
            where = where & (jobs.c.worker == worker)
        if host is not None:
            where = where & jobs.c.worker.startswith(f"{host}/", autoescape=True)
        with self.transaction() as conn:
            return conn.execute(
                update(jobs)
                .where(where)
                .values(state="queued", started=None, worker=None, progress=0.0)
            ).rowcount

    def requeue_at_start(self) -> int:
        """What a starting server or ``torchmsa batch`` puts back in the queue: on SQLite (one
        host) every running job, which a killed predecessor held; on PostgreSQL only this
        host's, since other hosts' workers may still be running theirs."""
        if self.url.startswith("sqlite"):
            return self.requeue_running()
        return self.requeue_running(host=socket.gethostname())

    # ---- caches ------------------------------------------------------------------------------

    def evict(self) -> dict[str, int]:
        """Bring the caches under ``cap_bytes`` (least recently used first). :meth:`complete`
        calls it at most every :data:`EVICT_EVERY_S` seconds (it sums the caches' sizes)."""
        self._evicted = time.monotonic()
        with self._evict_lock, self.transaction() as conn:
            return cache.evict(conn, self.cap_bytes)

    def stats(self) -> dict:
        """Jobs per state and the caches' sizes in bytes."""
        from sqlalchemy import func

        with self.transaction(read=True) as conn:
            states = dict(
                conn.execute(select(jobs.c.state, func.count()).group_by(jobs.c.state)).all()
            )
            return {"jobs": states, "cache_bytes": cache.cache_bytes(conn)}
