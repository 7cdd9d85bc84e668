"""The service's default size limits, apart from the modules that need FastAPI or SQLAlchemy
(the CLI reads them to build its help without importing either)."""

from __future__ import annotations

__all__ = ["MAX_BYTES", "MAX_SEQS"]

MAX_BYTES = 64 << 20  # one request's body, after gzip is undone
MAX_SEQS = 50_000  # sequences in one job
