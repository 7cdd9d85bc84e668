"""What the store tells of a job: :class:`JobInfo`, from a database row or from the row
:meth:`~torchmsa.serve.store.Store.submit` is about to write (no read-back)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

__all__ = ["JobInfo", "info_of_row"]


@dataclass
class JobInfo:
    """What the store knows of a job (no input, no result)."""

    id: str
    state: str
    created: float
    started: float | None
    finished: float | None
    n_seqs: int
    mode: str
    options: dict
    progress: float
    timings: dict = field(default_factory=dict)
    shared: dict = field(default_factory=dict)
    placement: str | None = None
    error: str | None = None
    owner: str | None = None
    placement_reason: str | None = None


def info_of_row(row) -> JobInfo:
    """The :class:`JobInfo` of a ``jobs`` row: a mapping (a row about to be written, no
    read-back) or a row read from the database."""
    row = getattr(row, "_mapping", row)
    return JobInfo(
        id=row["id"],
        state=row["state"],
        created=row["created"],
        started=row["started"],
        finished=row["finished"],
        n_seqs=row["n_seqs"],
        mode=row["mode"],
        options=json.loads(row["options"]),
        progress=row["progress"],
        timings=json.loads(row["timings"]),
        shared=json.loads(row["shared"]),
        placement=row["placement"],
        error=row["error"],
        owner=row["owner"],
        placement_reason=row["placement_reason"],
    )
