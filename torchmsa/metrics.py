"""Accuracy of an alignment against a reference: sum-of-pairs (SP, also called Q) and total column
(TC) scores, as BAliBASE's ``bali_score`` and Edgar's ``qscore`` define them.

Definitions. Only the *core* columns of the reference are assessed (all columns when no core
mask is given). Rows are matched by name (first word of the id); the test alignment may hold
more rows than the reference (they are ignored, which gives the same scores as the large-family
protocol of :func:`restrict_to_reference`).

- A *reference pair* is two residues of different sequences in one core reference column.
  SP is the fraction of reference pairs that the test alignment also puts in one column.
- A core column counts towards TC when it holds at least two residues; it is *correct* when all
  its residues lie in one test column (what else that test column holds does not matter). TC is
  the fraction of counted columns that are correct.

Gaps in core columns follow qscore: a core column holding ``k`` residues and some gaps
contributes ``k (k-1) / 2`` pairs and is correct when its ``k`` residues stay together.
``bali_score`` 3.01 with an XML reference instead charges ``N (N-1) / 2`` pairs to every core
column of an ``N``-row reference and never counts a gapped core column as correct; the two agree
whenever the core columns are gap-free, as are all but 4 of the 50,387 BAliBASE 3 core columns.

Residues are compared case-insensitively; each reference sequence must have exactly the same
residues (gaps removed) in the test alignment. Core masks from case (qscore: columns whose
residues are all upper case) come from :func:`uppercase_core`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import NamedTuple

import numpy as np

from torchmsa.errors import FormatError, InputError
from torchmsa.sequences import Record, as_records

__all__ = [
    "Scores",
    "score_alignment",
    "restrict_to_reference",
    "read_core",
    "uppercase_core",
    "as_alignment",
]

_GAPS = b"-."


class Scores(NamedTuple):
    """SP and TC of one test alignment, with the counts behind them.

    Attributes:
        sp: ``n_correct_pairs / n_ref_pairs`` (``nan`` when the reference has no pair to score).
        tc: ``n_correct_cols / n_cols`` (``nan`` when no core column holds two residues).
        n_ref_pairs: residue pairs in the core reference columns.
        n_correct_pairs: of those, the pairs the test alignment also aligns.
        n_cols: core reference columns holding at least two residues.
        n_correct_cols: of those, the columns reproduced entirely by one test column.
    """

    sp: float
    tc: float
    n_ref_pairs: int
    n_correct_pairs: int
    n_cols: int
    n_correct_cols: int


def as_alignment(aln, what: str = "alignment") -> list[Record]:
    """Normalise an alignment given in any accepted form to rows of one length.

    Arguments:
        aln: a path (read with :func:`torchmsa.io.read_alignment`), an object with ``names``
            and ``rows`` (a :class:`torchmsa.Alignment`), or items that
            :func:`~torchmsa.sequences.as_records` accepts (``Record``, ``(name, row)`` pairs,
            ``Bio.SeqRecord``).
        what: how error messages name this alignment.

    Returns:
        :class:`~torchmsa.sequences.Record` items whose ``name`` is the first word of the id.

    Raises:
        InputError: the rows differ in length or there are none.
    """
    from torchmsa import io

    if isinstance(aln, (str, os.PathLike)):
        records = io.read_alignment(aln)
    elif hasattr(aln, "names") and hasattr(aln, "rows"):
        records = [Record(n, n, r) for n, r in zip(aln.names, aln.rows)]
    else:
        records = as_records(aln)
    if not records:
        raise InputError(f"the {what} has no rows; give at least one aligned sequence")
    out = []
    for r in records:
        words = r.name.split()
        out.append(Record(words[0] if words else r.name, r.description, r.seq))
    widths = {len(r.seq) for r in out}
    if len(widths) > 1:
        short = min(out, key=lambda r: len(r.seq))
        raise InputError(
            f"the {what}'s rows differ in length ({min(widths)} to {max(widths)} columns, e.g. "
            f"{short.name!r}); give aligned rows of equal length"
        )
    return out


def _index_by_name(
    records: list[Record], what: str, needed: set[str] | None = None
) -> dict[str, int]:
    """Name to row index; a name held twice is an error when it is ``needed`` (default: any)."""
    index: dict[str, int] = {}
    for i, r in enumerate(records):
        if r.name in index and (needed is None or r.name in needed):
            raise InputError(
                f"the {what} holds the name {r.name!r} twice; names must be unique to match rows"
            )
        index[r.name] = i
    return index


def _as_bytes(rows: list[str], what: str, names: list[str], upper: bool = True) -> np.ndarray:
    """``uint8 [R, C]`` row characters, upper-cased unless ``upper`` is false."""
    text = "".join(rows)
    try:
        data = (text.upper() if upper else text).encode("ascii")
    except UnicodeEncodeError:
        bad = next(n for n, r in zip(names, rows) if not r.isascii())
        raise InputError(
            f"row {bad!r} of the {what} holds non-ASCII characters; alignments must be ASCII"
        ) from None
    width = len(rows[0]) if rows else 0
    return np.frombuffer(data, dtype=np.uint8).reshape(len(rows), width)


def read_core(core, n_cols: int) -> np.ndarray:
    """A core-column mask as ``bool [n_cols]``.

    Arguments:
        core: ``None`` (every column is core), a string of ``0``/``1`` (one per reference
            column), a path to a file holding such a string (``core.txt``), or a sequence of
            booleans or 0/1 integers.
        n_cols: number of reference columns.

    Raises:
        InputError: the mask has the wrong length or characters other than ``0`` and ``1``.
    """
    if core is None:
        return np.ones(n_cols, dtype=bool)
    label = "core mask"
    if isinstance(core, os.PathLike) or (isinstance(core, str) and os.path.isfile(core)):
        label = f"core file {os.fspath(core)!r}"
        try:
            with open(core) as fh:
                core = fh.read()
        except OSError as exc:
            raise FormatError(f"cannot read {label}: {exc.strerror or exc}") from None
    if isinstance(core, str):
        text = "".join(core.split())
        if set(text) - set("01"):
            raise InputError(
                f"{label} holds characters other than 0 and 1 ({''.join(sorted(set(text)))[:20]!r}"
                f"); give a 0/1 string, one per reference column, or the path of a core file"
            )
        mask = np.frombuffer(text.encode("ascii"), dtype=np.uint8) == ord("1")
    else:
        mask = np.asarray(list(core) if isinstance(core, Iterable) else core)
        if mask.ndim != 1 or not np.isin(mask, (0, 1)).all():
            raise InputError(f"{label} must be a flat sequence of 0/1 or booleans")
        mask = mask.astype(bool)
    if mask.shape[0] != n_cols:
        raise InputError(
            f"{label} has {mask.shape[0]} entries but the reference has {n_cols} columns; "
            f"give one entry per reference column"
        )
    return mask


def uppercase_core(ref) -> str:
    """The qscore core mask of a reference: ``1`` for columns holding a residue, all upper case.

    Arguments:
        ref: the reference alignment, in any form :func:`as_alignment` accepts.

    Returns:
        A ``0``/``1`` string, one character per reference column.
    """
    records = as_alignment(ref, "reference")
    rows = _as_bytes([r.seq for r in records], "reference", [r.name for r in records], upper=False)
    is_lower = (rows >= ord("a")) & (rows <= ord("z"))
    is_res = ~np.isin(rows, np.frombuffer(_GAPS, dtype=np.uint8))
    keep = is_res.any(axis=0) & ~is_lower.any(axis=0)
    return "".join("1" if k else "0" for k in keep)


def restrict_to_reference(test, ref) -> list[Record]:
    """The large-family protocol: keep the test rows named in the reference, drop gap columns.

    Arguments:
        test: the test alignment of all input sequences (any form :func:`as_alignment` takes).
        ref: the reference alignment (its rows name the sequences to keep).

    Returns:
        The kept test rows, in reference order, without the columns that are all gaps in them.

    Raises:
        InputError: a reference sequence is missing from the test alignment.
    """
    test_recs = as_alignment(test, "test alignment")
    ref_recs = as_alignment(ref, "reference")
    ref_names = set(_index_by_name(ref_recs, "reference"))
    index = _index_by_name(test_recs, "test alignment", ref_names)
    kept = [test_recs[_find(index, r.name)] for r in ref_recs]
    rows = _as_bytes([r.seq for r in kept], "test alignment", [r.name for r in kept], upper=False)
    keep = ~np.isin(rows, np.frombuffer(_GAPS, dtype=np.uint8)).all(axis=0)
    rows = np.ascontiguousarray(rows[:, keep])
    return [Record(r.name, r.description, row.tobytes().decode()) for r, row in zip(kept, rows)]


def _find(index: dict[str, int], name: str) -> int:
    if name not in index:
        raise InputError(
            f"reference sequence {name!r} is missing from the test alignment; align every "
            f"sequence of the reference (names are matched on the first word of the id)"
        )
    return index[name]


def score_alignment(test, ref, core=None) -> Scores:
    """SP (Q) and TC of a test alignment against a reference alignment.

    Arguments:
        test: the alignment to assess: a path, a :class:`torchmsa.Alignment`, or a list of
            ``Record`` / ``(name, row)`` items. Rows not in the reference are ignored.
        ref: the reference alignment, in the same forms.
        core: core columns of the reference (see :func:`read_core`): ``None`` for all columns,
            a ``0``/``1`` string, a path to a ``core.txt``, or a boolean sequence.

    Returns:
        :class:`Scores`.

    Raises:
        InputError: a reference sequence is missing from the test alignment or its residues
            differ there; duplicate names; a core mask of the wrong length.

    Example:
        >>> ref = [("a", "AC-GT"), ("b", "ACTGT")]
        >>> score_alignment([("a", "ACG-T"), ("b", "ACTGT")], ref).sp
        0.75
    """
    test_recs = as_alignment(test, "test alignment")
    ref_recs = as_alignment(ref, "reference")
    ref_names = set(_index_by_name(ref_recs, "reference"))
    index = _index_by_name(test_recs, "test alignment", ref_names)
    names = [r.name for r in ref_recs]
    kept = [test_recs[_find(index, n)] for n in names]
    ref_b = _as_bytes([r.seq for r in ref_recs], "reference", names)  # [R, Lr]
    test_b = _as_bytes([r.seq for r in kept], "test alignment", names)  # [R, Lt]
    mask = read_core(core, ref_b.shape[1])
    gaps = np.frombuffer(_GAPS, dtype=np.uint8)
    ref_res = ~np.isin(ref_b, gaps)
    test_res = ~np.isin(test_b, gaps)
    _check_residues(ref_b, ref_res, test_b, test_res, names)

    # Row-major order lists residues row by row, in sequence order, in both alignments: the
    # k-th residue of ref_r/ref_c is the k-th of test_c.
    ref_r, ref_c = np.nonzero(ref_res)
    _, test_c = np.nonzero(test_res)
    in_core = mask[ref_c]
    col, tcol = ref_c[in_core].astype(np.int64), test_c[in_core].astype(np.int64)
    n_ref_cols = ref_b.shape[1]
    per_col = np.bincount(col, minlength=n_ref_cols)  # residues per reference column
    n_ref_pairs = int((per_col * (per_col - 1) // 2).sum())
    keys, counts = np.unique(col * (test_b.shape[1] + 1) + tcol, return_counts=True)
    n_correct_pairs = int((counts * (counts - 1) // 2).sum())
    # A column is correct when its residues fall into a single (ref column, test column) key.
    groups = np.bincount(keys // (test_b.shape[1] + 1), minlength=n_ref_cols)
    counted = per_col >= 2
    n_cols = int(counted.sum())
    n_correct_cols = int((counted & (groups == 1)).sum())
    return Scores(
        sp=n_correct_pairs / n_ref_pairs if n_ref_pairs else float("nan"),
        tc=n_correct_cols / n_cols if n_cols else float("nan"),
        n_ref_pairs=n_ref_pairs,
        n_correct_pairs=n_correct_pairs,
        n_cols=n_cols,
        n_correct_cols=n_correct_cols,
    )


def _check_residues(ref_b, ref_res, test_b, test_res, names: list[str]) -> None:
    """Raise :class:`InputError` naming the first sequence whose residues differ."""
    ref_len = ref_res.sum(axis=1)
    test_len = test_res.sum(axis=1)
    bad_len = np.flatnonzero(ref_len != test_len)
    ref_seq = ref_b[ref_res]
    test_seq = test_b[test_res]
    if bad_len.size == 0 and np.array_equal(ref_seq, test_seq):
        return
    for i in range(len(names)):
        a = ref_b[i][ref_res[i]].tobytes().decode()
        b = test_b[i][test_res[i]].tobytes().decode()
        if a != b:
            pos = next((k for k, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
            raise InputError(
                f"sequence {names[i]!r} differs between the test alignment and the reference "
                f"(lengths {len(b)} and {len(a)}, first difference at residue {pos + 1}); "
                f"score an alignment of the reference's own sequences"
            )
