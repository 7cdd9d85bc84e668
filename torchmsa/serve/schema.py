"""The store's tables (SQLAlchemy Core; the same on SQLite and PostgreSQL).

=========== ==================================================================================
jobs        one row per job: id (``secrets.token_urlsafe(16)``), owner, state, times,
            options, progress, timings, what was shared, placement, error, its job key
inputs      a job's records: names, descriptions and residues (zlib-compressed JSON) and its
            sequences' hashes; written with the job, in one transaction
results     alignments by job key (content address): rows (compressed), guide tree shape,
            metadata; ``last_used`` and ``size`` for the LRU eviction under the store's cap
sequences   one row per distinct sequence (hash): alphabet, length, its sorted 6-mer ids
            (int32, compressed) and their count; ``last_used`` and ``size``
distances   one row per distinct pair of sequences and distance kind, ``a < b``: the float64
            distance; ``last_used``
meta        the schema version
=========== ==================================================================================
"""

from __future__ import annotations

from sqlalchemy import (
    Column,
    Double,
    Float,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
)

__all__ = ["SCHEMA_VERSION", "metadata", "jobs", "inputs", "results", "sequences", "distances"]

SCHEMA_VERSION = 1
metadata = MetaData()

jobs = Table(
    "jobs",
    metadata,
    Column("id", String(32), primary_key=True),
    Column("owner", String(80), nullable=True),
    Column("state", String(16), nullable=False),
    Column("created", Double, nullable=False),
    Column("started", Double, nullable=True),
    Column("finished", Double, nullable=True),
    Column("n_seqs", Integer, nullable=False),
    Column("mode", String(16), nullable=False),
    Column("options", Text, nullable=False),
    Column("progress", Float, nullable=False, default=0.0),
    Column("timings", Text, nullable=False, default="{}"),
    Column("shared", Text, nullable=False, default="{}"),
    Column("placement", String(32), nullable=True),
    Column("placement_reason", Text, nullable=True),
    Column("error", Text, nullable=True),
    Column("worker", String(200), nullable=True),
    Column("job_key", String(64), nullable=False),
    Column("alphabet", String(16), nullable=False),
    Column("input_bytes", Integer, nullable=False),
    Index("ix_jobs_state_created", "state", "created"),
    Index("ix_jobs_owner_created", "owner", "created"),
    Index("ix_jobs_key", "job_key"),
)

inputs = Table(
    "inputs",
    metadata,
    Column("job_id", String(32), primary_key=True),
    Column("records", LargeBinary, nullable=False),
    Column("hashes", LargeBinary, nullable=False),
)

results = Table(
    "results",
    metadata,
    Column("job_key", String(64), primary_key=True),
    Column("alphabet", String(16), nullable=False),
    Column("rows", LargeBinary, nullable=False),
    Column("tree", LargeBinary, nullable=True),
    Column("meta", Text, nullable=False),
    Column("size", Integer, nullable=False),
    Column("created", Double, nullable=False),
    Column("last_used", Double, nullable=False),
    Index("ix_results_used", "last_used"),
)

sequences = Table(
    "sequences",
    metadata,
    Column("hash", String(64), primary_key=True),
    Column("alphabet", String(16), nullable=False),
    Column("length", Integer, nullable=False),
    Column("n_kmers", Integer, nullable=False),
    Column("kmers", LargeBinary, nullable=False),
    Column("size", Integer, nullable=False),
    Column("last_used", Double, nullable=False),
    Index("ix_sequences_used", "last_used"),
)

distances = Table(
    "distances",
    metadata,
    Column("a", String(64), primary_key=True),
    Column("b", String(64), primary_key=True),
    Column("kind", String(32), primary_key=True),
    Column("value", Double, nullable=False),
    Column("last_used", Double, nullable=False),
    Index("ix_distances_used", "last_used"),
)

meta = Table(
    "meta",
    metadata,
    Column("name", String(32), primary_key=True),
    Column("value", Text, nullable=False),
)
