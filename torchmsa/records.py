"""One input sequence as read or given (:class:`Record`) and its FASTA header line.

A leaf module: :mod:`torchmsa.io` builds records while reading, :mod:`torchmsa.sequences`
normalises every other input form to them.
"""

from __future__ import annotations

import contextlib
import gc
from typing import NamedTuple

__all__ = ["NO_DESCRIPTION", "Record", "bulk", "header"]

# what Bio.SeqRecord.SeqRecord holds when no description was given
NO_DESCRIPTION = "<unknown description>"


class Record(NamedTuple):
    """One input sequence: its id, its whole header line, and its text as given."""

    name: str
    description: str
    seq: str


@contextlib.contextmanager
def bulk():
    """Build many small objects (a record, row or header per sequence) without the cyclic
    garbage collector's passes, which rescan every object alive: at 10^6 sequences they
    tripled the time to parse a FASTA file. None of these objects forms a cycle."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def header(name: str, description: str) -> str:
    """A FASTA header line: ``description`` itself, byte for byte, when it is a whole header
    line for ``name`` (its first word is ``name``, Biopython's rule, or it starts with ``name``
    and then whitespace or ends, for names that hold whitespace); else ``name``, a space and
    the description; ``name`` alone when there is no description."""
    description = "" if description == NO_DESCRIPTION else description
    words = description.split(None, 1)
    after = description[len(name) :] if description.startswith(name) else "x"
    if (words[0] if words else "") == name or after == "" or after[:1].isspace():
        return description
    description = description.strip()
    return f"{name} {description}" if description else name
