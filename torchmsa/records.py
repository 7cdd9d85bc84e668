"""One input sequence as read or given (:class:`Record`) and its FASTA header line.

A leaf module: :mod:`torchmsa.io` builds records while reading, :mod:`torchmsa.sequences`
normalises every other input form to them.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["NO_DESCRIPTION", "Record", "header"]

# what Bio.SeqRecord.SeqRecord holds when no description was given
NO_DESCRIPTION = "<unknown description>"


class Record(NamedTuple):
    """One input sequence: its id, its whole header line, and its text as given."""

    name: str
    description: str
    seq: str


def header(name: str, description: str) -> str:
    """A FASTA-style header line: ``description`` when it starts with ``name``, else both."""
    description = "" if description == NO_DESCRIPTION else description.strip()
    if description.startswith(name) and description[len(name) :][:1] in ("", " ", "\t"):
        return description
    return f"{name} {description}" if description else name
