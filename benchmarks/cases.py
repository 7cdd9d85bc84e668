"""Benchmark cases: a dataset's ``cases.tsv``, selections of it, its files, and scoring."""

from __future__ import annotations

import csv
from collections.abc import Mapping, Sequence
from pathlib import Path

__all__ = [
    "SMALL_N",
    "SMALL_LEN",
    "load_cases",
    "select_cases",
    "small_case",
    "pick_cases",
    "case_files",
    "score",
    "set_threads",
]

SMALL_N, SMALL_LEN = 20, 600  # a "small case" (150 of BAliBASE's 386)


def load_cases(dataset_dir: Path) -> list[dict[str, str]]:
    """Rows of ``cases.tsv``; ``ref_set`` is ``"all"`` where the dataset has none."""
    path = Path(dataset_dir) / "cases.tsv"
    if not path.is_file():
        raise SystemExit(f"error: {path} not found; is --dataset right and the data there?")
    with open(path, newline="") as fh:
        rows = list(csv.DictReader(fh, delimiter="\t"))
    for row in rows:
        row.setdefault("ref_set", "all")
    return rows


def select_cases(cases: list[dict], tokens: list[str], limit: int | None = None) -> list[dict]:
    """Cases matching any token, then ``limit`` of them at evenly spaced positions.

    A token matches a case whose name or reference set equals it, or whose name starts with
    it followed by a digit: ``BB`` selects ``BB11001`` but not ``BBS11001``.
    """

    def hit(case: dict, token: str) -> bool:
        name = case["case"]
        if token in (name, case["ref_set"]):
            return True
        return name.startswith(token) and name[len(token) : len(token) + 1].isdigit()

    chosen = [c for c in cases if not tokens or any(hit(c, t) for t in tokens)]
    if limit is not None and 0 < limit < len(chosen):
        n = len(chosen)
        picks = sorted(
            {round(i * (n - 1) / (limit - 1)) for i in range(limit)} if limit > 1 else {0}
        )
        chosen = [chosen[i] for i in picks]
    return chosen


def small_case(case: Mapping) -> bool:
    """At most :data:`SMALL_N` sequences of at most :data:`SMALL_LEN` residues (``cases.tsv``)."""
    try:
        return int(case["nseq"]) <= SMALL_N and int(case["max_len"]) <= SMALL_LEN
    except (KeyError, ValueError):
        return False


def pick_cases(table: list[dict], spec: str) -> list[dict]:
    """``all`` cases, the ``small`` ones (:func:`small_case`), or those a comma list of
    names, prefixes or reference sets selects (:func:`select_cases`)."""
    if spec in ("all", "small", ""):
        return [c for c in table if spec != "small" or small_case(c)]
    return select_cases(table, [t for t in spec.split(",") if t])


def case_files(dataset_dir: Path, case: str) -> tuple[Path, Path, Path | None]:
    """Input FASTA (plain or gzipped), reference alignment, core mask (``None`` if absent)."""
    dataset_dir = Path(dataset_dir)
    inp = dataset_dir / f"{case}.in.fasta"
    if not inp.exists():
        inp = dataset_dir / f"{case}.in.fasta.gz"
    core = dataset_dir / f"{case}.core.txt"
    return inp, dataset_dir / f"{case}.ref.fasta", core if core.exists() else None


def score(names: Sequence[str], rows: Sequence[str], ref: Path, core: Path | None):
    """SP and TC of an alignment against its reference: the alignment restricted to the
    reference's rows (a no-op for BAliBASE), over the core columns when there are some."""
    from torchmsa.metrics import restrict_to_reference, score_alignment

    s = score_alignment(restrict_to_reference(list(zip(names, rows)), ref), ref, core)
    return s.sp, s.tc


def set_threads(threads: int) -> None:
    """numba's and torch's CPU threads (numba's capped at its pool size)."""
    import torch

    torch.set_num_threads(threads)
    try:
        import numba

        numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    except ImportError:
        pass
