"""A job's input, options and identity, its result as stored, and the run of a job (in this
process or in a CPU worker process).

Identity (content addressing):

* a sequence's hash is ``sha256(alphabet name + ":" + residues upper-cased)``
  (:func:`sequence_hash`): the key of the k-mer and distance caches, where case is moot;
* a job's key is ``sha256`` of the torchmsa version, the effective
  :class:`~torchmsa.config.AlignConfig` (``describe()`` of it: options that spell the same
  configuration differently share a key), the alphabet and the residues as given, in order
  (:func:`job_key`). Names and descriptions are not in it: they label rows, they never change
  them, so two jobs over the same sequences share one stored alignment.

Options are :func:`torchmsa.align`'s keywords ``mode``, ``tree``, ``matrix``, ``gap_open``,
``gap_extend``, ``seqtype`` and ``config`` (a list of ``NAME=VALUE`` overrides of
:class:`~torchmsa.config.AlignConfig`, as the command line's ``--config``).

Errors beyond the contract (all :class:`~torchmsa.errors.ArgumentError`): :class:`LimitError`
(its message says "limit"; HTTP 413) with :class:`InputTooLarge` and
:class:`TooManySequences`; :class:`JobNotFound` (404) and :class:`JobNotDone` (409).
"""

from __future__ import annotations

import hashlib
import io
import json
import time
from dataclasses import dataclass, field
from numbers import Real

from torchmsa.errors import ArgumentError, EmptyInputError
from torchmsa.records import Record

__all__ = [
    "OPTIONS",
    "LimitError",
    "InputTooLarge",
    "TooManySequences",
    "JobNotFound",
    "JobNotDone",
    "Prepared",
    "Result",
    "prepare",
    "check_options",
    "checked_options",
    "align_kwargs",
    "sequence_hash",
    "job_key",
    "run_jobs",
    "run_job",
]

# job options a request may set: torchmsa.align's keywords (config: repeatable NAME=VALUE)
OPTIONS = ("mode", "tree", "matrix", "gap_open", "gap_extend", "seqtype", "config")


class LimitError(ArgumentError):
    """An input over one of the store's limits (``max_bytes``, ``max_seqs``)."""


class InputTooLarge(LimitError):
    """The input text is larger than ``max_bytes``."""


class TooManySequences(LimitError):
    """The input holds more than ``max_seqs`` sequences."""


class JobNotFound(ArgumentError):
    """No job of this id (for this owner)."""


class JobNotDone(ArgumentError):
    """A result was asked for before the job finished (or of a failed job)."""


@dataclass(frozen=True)
class Prepared:
    """A checked submission: its records, alphabet, options, hashes and job key."""

    records: list[Record]
    alphabet: str
    options: dict
    config_text: str
    hashes: list[str]
    key: str


@dataclass
class Result:
    """An alignment as the store keeps it: gapped rows (input order), the guide tree's shape
    (names come from the job's input), and JSON-safe metadata."""

    rows: list[str]
    alphabet: str
    children: list | None
    lengths: list | None
    metadata: dict = field(default_factory=dict)

    @classmethod
    def of(cls, aln) -> Result:
        """The stored form of a :class:`torchmsa.Alignment`."""
        tree = aln.tree
        meta = {k: v for k, v in aln.metadata.items() if isinstance(v, (str, int, float, bool))}
        return cls(
            rows=list(aln.rows),
            alphabet=aln.alphabet.name,
            children=None if tree is None else tree.children.tolist(),
            lengths=None if tree is None else tree.lengths.tolist(),
            metadata=meta,
        )

    def newick(self, names: list[str]) -> str:
        """The guide tree in Newick with ``names`` on its leaves (``""`` without a tree)."""
        if self.children is None:
            return ""
        from torchmsa.tree import Tree

        return Tree(names, self.children, self.lengths).newick() + "\n"


def sequence_hash(alphabet: str, residues: str) -> str:
    """The content address of one sequence (see the module docstring)."""
    return hashlib.sha256(f"{alphabet}:{residues.upper()}".encode()).hexdigest()


def job_key(version: str, config_text: str, alphabet: str, residues: list[str]) -> str:
    """The content address of one job (see the module docstring)."""
    h = hashlib.sha256(f"torchmsa {version}\0{config_text}\0{alphabet}\0".encode())
    for r in residues:
        h.update(r.encode())
        h.update(b"\n")
    return h.hexdigest()


def check_options(options: dict | None):
    """``(options, config)``: the options with ``None`` values dropped, and the
    :class:`~torchmsa.config.AlignConfig` they make. Raises what :func:`torchmsa.align` and
    the command line raise for the same values."""
    from torchmsa.config import AlignConfig, with_overrides
    from torchmsa.pipeline.shortcuts import apply_shortcuts

    if options is None:
        options = {}
    if not isinstance(options, dict):
        raise ArgumentError(f"Invalid value for `options`: {options!r}; pass a dict")
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise ArgumentError(f"unknown option {unknown[0]!r}; the options are {', '.join(OPTIONS)}")
    out = {k: v for k, v in options.items() if v is not None}
    for name in ("gap_open", "gap_extend"):
        if name in out and (isinstance(out[name], bool) or not isinstance(out[name], Real)):
            raise ArgumentError(
                f"Invalid value for `{name}` argument: {out[name]!r}; give a number"
            )
    for name in ("mode", "tree", "matrix", "seqtype"):
        if name in out and not isinstance(out[name], str):
            raise ArgumentError(f"Invalid value for `{name}` argument: {out[name]!r}; give a name")
    overrides = out.get("config", [])
    if isinstance(overrides, str):
        overrides = [overrides]
    if not isinstance(overrides, (list, tuple)) or not all(isinstance(o, str) for o in overrides):
        raise ArgumentError(f"Invalid value for `config`: {overrides!r}; give NAME=VALUE strings")
    if overrides:
        out["config"] = list(overrides)
    config = with_overrides(AlignConfig(), overrides) if overrides else None
    from torchmsa.config import MODES, TREES

    if "mode" in out and out["mode"] not in MODES:
        raise ArgumentError(
            f"Invalid value for `mode` argument: {out['mode']!r}; use one of {', '.join(MODES)}"
        )
    if "tree" in out and out["tree"] not in TREES:
        raise ArgumentError(
            f"Invalid value for `tree` argument: {out['tree']!r}; use one of {', '.join(TREES)}"
        )
    config, _ = apply_shortcuts(
        config,
        mode=out.get("mode"),
        matrix=out.get("matrix"),
        gap_open=out.get("gap_open"),
        gap_extend=out.get("gap_extend"),
        tree=out.get("tree"),
    )
    return out, config


def align_kwargs(options: dict, alphabet: str) -> dict:
    """:func:`torchmsa.align`'s keywords for a job's options (the alphabet resolved at
    submission, so a job runs under the alphabet it was checked against)."""
    from torchmsa.config import AlignConfig, with_overrides

    kw = {
        k: options[k] for k in ("mode", "tree", "matrix", "gap_open", "gap_extend") if k in options
    }
    if options.get("config"):
        kw["config"] = with_overrides(AlignConfig(), options["config"])
    kw["seqtype"] = alphabet
    return kw


_CHECKED: dict[str, tuple[dict, object, str]] = {}  # options JSON -> options, config, text
_SCORED: set[tuple[str, str]] = set()  # (options JSON, alphabet) whose scoring loads
_CACHE_MAX = 1024


def checked_options(options: dict | None) -> tuple[dict, object, str]:
    """:func:`check_options` and the effective configuration's text, remembered per options
    set (by their JSON: ``1`` and ``1.0`` stay apart): ``(options, config, config_text)``.
    A refused set is checked again at each call, so it raises the same error each time."""
    from torchmsa.config import describe

    try:
        key = json.dumps(options, sort_keys=True)
    except (TypeError, ValueError):  # not JSON: checked (and refused) every time
        key = None
    hit = _CHECKED.get(key) if key is not None else None
    if hit is None:
        out, config = check_options(options)
        hit = (out, config, describe(config))
        if key is not None:
            if len(_CHECKED) >= _CACHE_MAX:
                _CHECKED.clear()
            _CHECKED[key] = hit
    out, config, text = hit
    copy = {k: list(v) if isinstance(v, list) else v for k, v in out.items()}
    return copy, config, text


def _check_scoring(options: dict, config, alphabet) -> None:
    """Raise what :func:`torchmsa.align` raises when the scoring does not load for
    ``alphabet`` (a matrix missing, or not over its letters); remembered when it loads."""
    from torchmsa.pipeline import profile_scoring

    key = (options_json(options), alphabet.name)
    if key in _SCORED:
        return
    profile_scoring(alphabet, None, offset=0.0, config=config.scoring)
    if len(_SCORED) >= _CACHE_MAX:
        _SCORED.clear()
    _SCORED.add(key)


def _residues(records: list[Record], seqtype: str):
    """``(alphabet, residues)`` as :meth:`torchmsa.SequenceBatch.from_input` finds them for
    ``records`` read from text (same errors), without encoding them."""
    import numpy as np

    from torchmsa.alphabet import INVALID, encode_batch, resolve_alphabet

    seqs = [r.seq for r in records]
    alphabet = resolve_alphabet(seqtype, seqs)
    raw = np.frombuffer("".join(seqs).encode("ascii", "replace"), dtype=np.uint8)
    if (alphabet.lookup[raw] == INVALID).any():
        encode_batch(seqs, alphabet, [r.name for r in records])  # raises, naming the first
    return alphabet, [s.replace("-", "").replace(".", "") for s in seqs]


def prepare(fasta: str, options: dict | None, *, max_bytes: int, max_seqs: int) -> Prepared:
    """Check a submission as :func:`torchmsa.align` would (same errors), within the limits.

    What ``POST /jobs`` waits for, so kept lean: the options are checked once per options
    set (:func:`checked_options`), the sequences parsed and checked against their alphabet
    but not encoded."""
    from torchmsa import __version__
    from torchmsa.io import read_sequences

    if not isinstance(fasta, str):
        raise ArgumentError(f"Invalid value for `fasta`: a {type(fasta).__name__}; give text")
    size = len(fasta.encode("utf-8"))
    if size > max_bytes:
        raise InputTooLarge(
            f"the input ({size:,} bytes) exceeds this server's limit of {max_bytes:,} bytes; "
            f"split it into several jobs"
        )
    if not fasta.strip():
        raise EmptyInputError("no sequences were given; the input is empty")
    options, config, config_text = checked_options(options)
    records = read_sequences(io.StringIO(fasta))
    if len(records) > max_seqs:
        raise TooManySequences(
            f"{len(records):,} sequences exceed this server's limit of {max_seqs:,} per job; "
            f"split them"
        )
    if not records:
        raise EmptyInputError("no sequences were given; the input is empty")
    alphabet, residues = _residues(records, options.get("seqtype", "auto"))
    _check_scoring(options, config, alphabet)
    records = [Record(r.name, r.description, s) for r, s in zip(records, residues)]
    hashes = [sequence_hash(alphabet.name, r) for r in residues]
    key = job_key(__version__, config_text, alphabet.name, residues)
    return Prepared(records, alphabet.name, options, config_text, hashes, key)


def options_json(options: dict) -> str:
    return json.dumps(options, sort_keys=True)


def run_jobs(payloads: list[tuple], device: str, first_trees=None) -> list[Result]:
    """Align jobs of one options set as one :func:`torchmsa.align_many` batch on ``device``.

    ``payloads``: ``(records, options, alphabet)`` each, one options set and alphabet for all.
    ``first_trees``: guide trees built from the distance cache (``align_many``'s keyword).
    """
    from torchmsa.pipeline import align_many

    records = [p[0] for p in payloads]
    kw = align_kwargs(payloads[0][1], payloads[0][2])
    t0 = time.perf_counter()
    alns = align_many(records, device=device, first_trees=first_trees, **kw)
    seconds = time.perf_counter() - t0
    out = []
    for aln in alns:
        res = Result.of(aln)
        res.metadata["batch_seconds"] = seconds
        out.append(res)
    return out


def run_job(payload: tuple, threads: int | None = None) -> Result:
    """One job on the host: the function a CPU worker process runs (picklable arguments).
    ``payload``: ``(records, options, alphabet, first tree or None)``."""
    if threads is not None:
        import torch

        torch.set_num_threads(threads)
    tree = payload[3] if len(payload) > 3 else None
    return run_jobs([payload[:3]], "cpu", None if tree is None else [tree])[0]
