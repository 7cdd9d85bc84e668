"""The shared caches inside a store: stored alignments by job key, sequences' k-mer ids by
sequence hash, and pair distances by the two hashes; their size and the least-recently-used
eviction that keeps them under the store's cap.

Every function takes an open SQLAlchemy connection inside a transaction; inserts of shared
rows ignore a row that another worker wrote first (``ON CONFLICT DO NOTHING``), so several
workers, on several hosts with PostgreSQL, may fill the caches at once.
"""

from __future__ import annotations

import json
import time
import zlib

import numpy as np
from sqlalchemy import delete, func, select, update

from torchmsa.serve.jobs import Result
from torchmsa.serve.schema import distances, jobs, results, sequences

__all__ = [
    "insert_ignore",
    "put_result",
    "get_result",
    "touch_results",
    "put_sequences",
    "get_sequences",
    "get_kmer_counts",
    "put_distances",
    "get_distances",
    "cache_bytes",
    "evict",
]

DISTANCE_ROW_BYTES = 160  # about what one distances row costs (two hashes, kind, value, index)
_CHUNK = 500  # hashes per IN list


def insert_ignore(conn, table, rows: list[dict]) -> None:
    """Insert ``rows``, skipping those whose primary key exists already."""
    if not rows:
        return
    if conn.dialect.name == "postgresql":
        from sqlalchemy.dialects.postgresql import insert
    else:
        from sqlalchemy.dialects.sqlite import insert
    conn.execute(insert(table).on_conflict_do_nothing(), rows)


def put_result(conn, key: str, res: Result) -> None:
    rows = zlib.compress("\n".join(res.rows).encode())
    tree = None
    if res.children is not None:
        tree = zlib.compress(json.dumps([res.children, res.lengths]).encode())
    meta = json.dumps(res.metadata)
    size = len(rows) + len(tree or b"") + len(meta) + 200
    now = time.time()
    insert_ignore(
        conn,
        results,
        [
            {
                "job_key": key,
                "alphabet": res.alphabet,
                "rows": rows,
                "tree": tree,
                "meta": meta,
                "size": size,
                "created": now,
                "last_used": now,
            }
        ],
    )


def touch_results(conn, keys, now: float | None = None, chunk: int = 500) -> set[str]:
    """Record a use of the stored alignments of ``keys``; the keys that have one (two
    statements per ``chunk`` of keys)."""
    stamp = time.time() if now is None else now
    keys = list(dict.fromkeys(keys))
    found: set[str] = set()
    for i in range(0, len(keys), chunk):
        part = keys[i : i + chunk]
        query = select(results.c.job_key).where(results.c.job_key.in_(part))
        hits = [k for (k,) in conn.execute(query)]
        if hits:
            conn.execute(update(results).where(results.c.job_key.in_(hits)).values(last_used=stamp))
        found.update(hits)
    return found


def get_result(conn, key: str, touch: bool = True) -> Result | None:
    row = conn.execute(select(results).where(results.c.job_key == key)).first()
    if row is None:
        return None
    if touch:
        conn.execute(update(results).where(results.c.job_key == key).values(last_used=time.time()))
    children = lengths = None
    if row.tree is not None:
        children, lengths = json.loads(zlib.decompress(row.tree))
    text = zlib.decompress(row.rows).decode()
    return Result(text.split("\n"), row.alphabet, children, lengths, json.loads(row.meta))


def put_sequences(conn, items: dict[str, tuple[str, int, np.ndarray]]) -> None:
    """``items``: hash -> (alphabet, length, sorted k-mer ids ``int32``)."""
    now = time.time()
    rows = []
    for h, (alphabet, length, ids) in items.items():
        blob = zlib.compress(np.ascontiguousarray(ids, dtype=np.int32).tobytes(), 1)
        rows.append(
            {
                "hash": h,
                "alphabet": alphabet,
                "length": int(length),
                "n_kmers": int(ids.shape[0]),
                "kmers": blob,
                "size": len(blob) + 200,
                "last_used": now,
            }
        )
    insert_ignore(conn, sequences, rows)


def _chunks(items: list, size: int = _CHUNK):
    for i in range(0, len(items), size):
        yield items[i : i + size]


def get_sequences(conn, hashes: list[str]) -> dict[str, np.ndarray]:
    """The cached k-mer ids of those of ``hashes`` that are stored (their use is recorded)."""
    out = {}
    now = time.time()
    for part in _chunks(sorted(set(hashes))):
        for row in conn.execute(
            select(sequences.c.hash, sequences.c.kmers).where(sequences.c.hash.in_(part))
        ):
            out[row.hash] = np.frombuffer(zlib.decompress(row.kmers), dtype=np.int32)
        conn.execute(update(sequences).where(sequences.c.hash.in_(part)).values(last_used=now))
    return out


def get_kmer_counts(conn, hashes: list[str]) -> dict[str, int]:
    """The number of counted k-mers of those of ``hashes`` that are stored."""
    out = {}
    for part in _chunks(sorted(set(hashes))):
        query = select(sequences.c.hash, sequences.c.n_kmers).where(sequences.c.hash.in_(part))
        out.update((row.hash, row.n_kmers) for row in conn.execute(query))
    return out


def put_distances(conn, kind: str, pairs: dict[tuple[str, str], float]) -> None:
    """``pairs``: ``(a, b)`` with ``a < b`` -> distance."""
    now = time.time()
    rows = [
        {"a": a, "b": b, "kind": kind, "value": v, "last_used": now} for (a, b), v in pairs.items()
    ]
    for part in _chunks(rows, 5000):
        insert_ignore(conn, distances, part)


def get_distances(conn, kind: str, hashes: list[str]) -> dict[tuple[str, str], float]:
    """Every stored distance of ``kind`` between two of ``hashes``, keyed ``(a, b)``, a < b."""
    wanted = sorted(set(hashes))
    out: dict[tuple[str, str], float] = {}
    now = time.time()
    for pa in _chunks(wanted):
        for pb in _chunks(wanted):
            if pb[-1] <= pa[0]:
                continue
            cond = (distances.c.kind == kind) & distances.c.a.in_(pa) & distances.c.b.in_(pb)
            for row in conn.execute(
                select(distances.c.a, distances.c.b, distances.c.value).where(cond)
            ):
                out[(row.a, row.b)] = row.value
            conn.execute(update(distances).where(cond).values(last_used=now))
    return out


def cache_bytes(conn) -> dict[str, int]:
    """Bytes held by each cache (distances estimated per row)."""
    res = conn.execute(select(func.coalesce(func.sum(results.c.size), 0))).scalar_one()
    seq = conn.execute(select(func.coalesce(func.sum(sequences.c.size), 0))).scalar_one()
    dist = conn.execute(select(func.count()).select_from(distances)).scalar_one()
    return {"results": int(res), "sequences": int(seq), "distances": int(dist) * DISTANCE_ROW_BYTES}


def evict(conn, cap_bytes: int) -> dict[str, int]:
    """Drop the least recently used cache rows until the caches fit in ``cap_bytes``.

    Results that a live job (not deleted) refers to are kept: a user's result never goes.
    Returns the rows dropped per cache.
    """
    dropped = {"results": 0, "sequences": 0, "distances": 0}
    sizes = cache_bytes(conn)
    over = sum(sizes.values()) - cap_bytes
    if over <= 0:
        return dropped
    # distances first (cheapest to recompute), oldest use first, in slices
    while over > 0 and sizes["distances"] > 0:
        n = max(1, min(50_000, over // DISTANCE_ROW_BYTES + 1))
        cut = conn.execute(
            select(distances.c.last_used).order_by(distances.c.last_used).offset(n - 1).limit(1)
        ).scalar()
        if cut is None:
            n = conn.execute(delete(distances)).rowcount
        else:
            n = conn.execute(delete(distances).where(distances.c.last_used <= cut)).rowcount
        dropped["distances"] += n
        over -= n * DISTANCE_ROW_BYTES
        sizes["distances"] -= n * DISTANCE_ROW_BYTES
        if n == 0:
            break
    for table, key in ((sequences, sequences.c.hash), (results, results.c.job_key)):
        if over <= 0:
            break
        query = select(key, table.c.size).order_by(table.c.last_used)
        if table is results:
            live = select(jobs.c.job_key).where(jobs.c.state != "deleted")
            query = query.where(results.c.job_key.not_in(live))
        victims, freed = [], 0
        for row in conn.execute(query.limit(10_000)):
            victims.append(row[0])
            freed += row.size
            if freed >= over:
                break
        for part in _chunks(victims):
            conn.execute(delete(table).where(key.in_(part)))
        dropped["results" if table is results else "sequences"] += len(victims)
        over -= freed
    return dropped
