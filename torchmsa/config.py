"""Configuration as data: what an alignment is made of, where its work runs, and how much
memory it may use.

Three frozen, keyword-only dataclasses, each validated when made (errors name the field and
echo the value, as pyfamsa's ``Aligner`` does):

* :class:`AlignConfig` holds everything that can change an alignment: scoring, guide trees,
  ``auto`` mode's rules, accurate mode's consistency library and the refinement rounds. Its
  non-default fields are recorded in ``Alignment.metadata["config"]``.
* :class:`ExecutionPolicy` holds placement and batching rules (host or GPU, numba or batched
  tensors, batch sizes, threads). They change where and how fast work runs, never its result.
* :class:`MemoryBudget` says how much memory a stage may plan for, from the memory actually
  free (:meth:`MemoryBudget.limit`), unless a fixed figure is given.

``torchmsa.align(..., config=AlignConfig(...), policy=ExecutionPolicy(...),
budget=MemoryBudget(...))``; the old keywords (``matrix=``, ``gap_open=``, ``tree=`` ...) are
shortcuts that fill :class:`AlignConfig`'s fields. Benchmarks and the command line take
``--config consistency.weight=16`` through :func:`with_overrides`.
"""

from __future__ import annotations

import dataclasses
import functools
import typing
from dataclasses import dataclass, field
from typing import Any

from torchmsa.errors import ArgumentError
from torchmsa.memory import host_available

__all__ = [
    "checked",
    "ScoringConfig",
    "TreeConfig",
    "AutoConfig",
    "ConsistencyConfig",
    "RefineConfig",
    "AlignConfig",
    "ExecutionPolicy",
    "MemoryBudget",
    "with_overrides",
    "describe",
]

MODES = ("auto", "fast", "default", "accurate")
TREES = ("auto", "upgma", "upgma_mafft", "nj", "single", "lcs", "parttree")
PARTTREE_LINKAGES = ("upgma", "upgma_mafft", "single")
KMER_METHODS = ("matrix", "lists")


def _bad(owner: str, name: str, value: Any, why: str) -> ArgumentError:
    return ArgumentError(f"Invalid value for `{owner}.{name}`: {value!r}; {why}")


class _Checked:
    """Checks every field against its annotation and the ``check`` in its metadata."""

    def __post_init__(self) -> None:
        owner = type(self).__name__
        hints = _hints(type(self))
        for f in _fields(type(self)):
            value = getattr(self, f.name)
            _check_type(owner, f.name, value, hints[f.name])
            check = f.metadata.get("check")
            if check is not None:
                why = check(value)
                if why:
                    raise _bad(owner, f.name, value, why)

    def __repr__(self) -> str:
        parts = []
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if value != _default(f):
                parts.append(f"{f.name}={value!r}")
        return f"{type(self).__name__}({', '.join(parts)})"


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    """The resolved annotations of a config class (resolving them costs milliseconds)."""
    return typing.get_type_hints(cls)


@functools.cache
def _fields(cls: type) -> tuple[dataclasses.Field, ...]:
    return dataclasses.fields(cls)


def _default(f: dataclasses.Field) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    return f.default_factory()  # type: ignore[misc]


def _check_type(owner: str, name: str, value: Any, hint: Any) -> None:
    if isinstance(hint, type) and issubclass(hint, _Checked):
        if not isinstance(value, hint):
            raise _bad(owner, name, value, f"expected a {hint.__name__}")
        return
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin is typing.Union or str(origin) == "<class 'types.UnionType'>":
        if value is None and type(None) in args:
            return
        hint = next(a for a in args if a is not type(None))
        origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is tuple:
        ok = isinstance(value, tuple) and len(value) == len(args)
        ok = ok and all(_is(v, a) for v, a in zip(value, args))
        if not ok:
            raise _bad(owner, name, value, f"expected a tuple of {len(args)} numbers")
        return
    if not _is(value, hint):
        raise _bad(owner, name, value, f"expected {getattr(hint, '__name__', hint)}")


def _is(value: Any, hint: Any) -> bool:
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, hint)


def _positive(value) -> str:
    return "" if value is None or value > 0 else "must be positive"


def _non_negative_or_none(value) -> str:
    return "" if value is None or value >= 0 else "must be 0 or more"


def _non_negative(value) -> str:
    return "" if value >= 0 else "must be 0 or more"


def _shift(value) -> str:
    return "" if 0 <= value <= 16 else "must be 0..16"


def _one_of(choices):
    return lambda value: "" if value in choices else f"expected one of {', '.join(choices)}"


def _fraction(value) -> str:
    return "" if 0 < value <= 1 else "must be in (0, 1]"


def _ratio(value) -> str:
    return "" if value[0] >= 0 and value[1] > 0 else "expected (numerator >= 0, denominator > 0)"


def _share(value) -> str:
    ok = 0 <= value[0] <= value[1] and value[1] > 0
    return "" if ok else "expected (numerator, denominator) with 0 <= numerator <= denominator"


def _opt(**checks):
    """A field's metadata: ``check`` is a callable returning a reason, or ``""``."""
    return {"check": checks.get("check")}


# ---- what can change an alignment -------------------------------------------------------


@dataclass(frozen=True, kw_only=True, repr=False)
class ScoringConfig(_Checked):
    """Profile scoring of the progressive pass and the refinement.

    ``None`` takes the alphabet's default: BLOSUM62 (proteins) or NUC.4.4, gap open 11,
    extend 0. Scores are in units of 1/``score_scale`` of the matrix's own; ``offset`` is
    added to every matrix entry and grows by ``offset_per_decade`` per tenfold above
    ``offset_from`` sequences, up to ``offset_max``. A profile's end gaps open at
    ``terminal[0] / terminal[1]`` of the inner cost. Columns with under 2^-``occ_shift`` of
    their profile's weight in residues count as if they had that much (the occupancy floor).
    """

    matrix: str | None = None
    gap_open: float | None = field(default=None, metadata=_opt(check=_non_negative_or_none))
    gap_extend: float | None = None
    offset: float = 2.0
    terminal: tuple[int, int] = field(default=(1, 2), metadata=_opt(check=_ratio))
    offset_per_decade: float = 2.0
    offset_from: int = field(default=1000, metadata=_opt(check=_positive))
    offset_max: float = 4.0
    occ_shift: int = field(default=5, metadata=_opt(check=_shift))

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.gap_extend is not None and self.gap_extend < 0:
            raise _bad("ScoringConfig", "gap_extend", self.gap_extend, "must be 0 or more")


@dataclass(frozen=True, kw_only=True, repr=False)
class TreeConfig(_Checked):
    """Guide trees. ``method="auto"``: PartTree from ``parttree_min_n`` sequences, single
    linkage on LCS distances (streamed, no N x N matrix) from ``lcs_min_n``, else 6-mer
    distances and UPGMA. PartTree draws ``parttree_n_ref`` references (MAFFT's
    ``--partsize``), makes leaves of at most ``parttree_leaf_size`` sequences and merges
    references joined below ``parttree_merge_fraction`` of the root's height; it measures
    sequences by 6-mer or LCS distances (``parttree_distance``)."""

    method: str = field(default="auto", metadata=_opt(check=_one_of(TREES)))
    parttree_min_n: int = field(default=20_000, metadata=_opt(check=_positive))
    lcs_min_n: int = field(default=500, metadata=_opt(check=_positive))
    parttree_n_ref: int = field(default=50, metadata=_opt(check=_positive))
    parttree_leaf_size: int = field(default=500, metadata=_opt(check=_positive))
    parttree_linkage: str = field(
        default="upgma_mafft", metadata=_opt(check=_one_of(PARTTREE_LINKAGES))
    )
    parttree_merge_fraction: float = field(default=0.5, metadata=_opt(check=_fraction))
    parttree_distance: str = field(default="kmer", metadata=_opt(check=_one_of(("kmer", "lcs"))))


@dataclass(frozen=True, kw_only=True, repr=False)
class AutoConfig(_Checked):
    """``mode="auto"``: accurate up to ``accurate_max_n`` sequences of at most
    ``accurate_max_len`` residues, default up to ``default_max_n`` sequences, fast above."""

    accurate_max_n: int = field(default=200, metadata=_opt(check=_non_negative))
    accurate_max_len: int = field(default=2000, metadata=_opt(check=_non_negative))
    default_max_n: int = field(default=20_000, metadata=_opt(check=_non_negative))


@dataclass(frozen=True, kw_only=True, repr=False)
class ConsistencyConfig(_Checked):
    """Accurate mode's stage 1 and consistency library.

    Local alignments use ``local_matrix`` with ``local_gap_open`` / ``local_gap_extend``;
    their Karlin-Altschul ``karlin`` = (lambda, K) turn scores into E-values. A library entry
    weighs its pair's identity weight plus ``window_ratio`` of the substitution scores within
    ``entry_window`` residue pairs, less ``entry_floor``, at most ``weight_max``; ``weight``
    DP units stand for one unit of normalised consistency. Terminal extensions are set aside
    from a median excess of ``trim_min`` residues, unless the pieces still align at
    ``trim_evalue``. A non-zero ``extend_share`` (numerator, denominator) transforms the library
    once for consistency with the third sequences, which weigh that share of each entry
    (:mod:`torchmsa.consistency.extend`).
    """

    weight: int = field(default=64, metadata=_opt(check=_non_negative))
    weight_max: int = field(default=64, metadata=_opt(check=_positive))
    entry_window: int = field(default=4, metadata=_opt(check=_non_negative))
    window_ratio: tuple[int, int] = field(default=(4, 5), metadata=_opt(check=_ratio))
    entry_floor: int = field(default=12, metadata=_opt(check=_non_negative))
    local_matrix: str = "BLOSUM62"
    local_gap_open: int = field(default=11, metadata=_opt(check=_positive))
    local_gap_extend: int = field(default=1, metadata=_opt(check=_non_negative))
    karlin: tuple[float, float] = (0.267, 0.041)
    trim_min: int = field(default=100, metadata=_opt(check=_non_negative))
    trim_evalue: float = field(default=0.01, metadata=_opt(check=_positive))
    extend_share: tuple[int, int] = field(default=(0, 1), metadata=_opt(check=_share))
    entries: str = field(
        default="global", metadata=_opt(check=_one_of(("global", "posterior", "both")))
    )
    posterior_floor: int = field(default=1, metadata=_opt(check=_non_negative))
    posterior_gaps: tuple[float, float] = (0.02, 0.79)
    posterior_free_ends: bool = False
    posterior_free_ratio: float = field(default=0.0, metadata=_opt(check=_non_negative))
    posterior_similarity: bool = False


@dataclass(frozen=True, kw_only=True, repr=False)
class RefineConfig(_Checked):
    """Iterative refinement over tree-dependent partitions: ``rounds_default`` /
    ``rounds_accurate`` rounds at most, jobs of up to ``max_n`` sequences in default mode;
    each round re-evaluates up to ``follow_ups`` improved edges one by one."""

    rounds_default: int = field(default=2, metadata=_opt(check=_non_negative))
    rounds_accurate: int = field(default=4, metadata=_opt(check=_non_negative))
    max_n: int = field(default=500, metadata=_opt(check=_non_negative))
    follow_ups: int = field(default=8, metadata=_opt(check=_non_negative))


@dataclass(frozen=True, kw_only=True, repr=False)
class AlignConfig(_Checked):
    """Everything that can change an alignment. ``AlignConfig()`` is torchmsa's default;
    ``repr`` shows only what differs from it."""

    mode: str = field(default="auto", metadata=_opt(check=_one_of(MODES)))
    scoring: ScoringConfig = field(default_factory=ScoringConfig)
    tree: TreeConfig = field(default_factory=TreeConfig)
    auto: AutoConfig = field(default_factory=AutoConfig)
    consistency: ConsistencyConfig = field(default_factory=ConsistencyConfig)
    refine: RefineConfig = field(default_factory=RefineConfig)


# ---- where work runs (never changes a result) --------------------------------------------


@dataclass(frozen=True, kw_only=True, repr=False)
class ExecutionPolicy(_Checked):
    """Placement and batching: these move work between the host and a GPU, between numba
    and batched tensors, and cut it into batches; no value changes an alignment (the tests
    check that extreme values give the same alignments).

    On a GPU with ``backend="auto"``, jobs of at most ``host_job_max_n`` sequences with
    N·L² at most ``host_job_cells`` run wholly on the host, and accurate jobs with pairs ×
    longest² at most ``host_accurate_cells``. Progressive levels of at most
    ``cpu_level_cells`` DP cells, none of their pairs above ``cpu_pair_cells``
    (``cpu_device_pair_cells`` on a CPU device), run in numba; runs of numba levels stop
    at ``run_rows`` pool rows; a lone pair of at least ``lone_pair_cells`` spreads over the
    threads; node pools start at ``pool_rows`` rows. A profile pair of more than
    ``linear_pair_cells`` cells (progressive pass or refinement edge) is aligned in linear
    space on the host, also on a GPU. Refinement evaluates on the host up to
    ``host_cells`` (edges per thread × columns²), a lone edge up to ``host_edge_cells``
    columns², threaded above ``threaded_edge_cells``; a batch holds at most
    ``max_batch_cells`` DP cells; a batched progressive level is cut into parts that plan
    at most ``level_bytes`` on a GPU, ``host_level_bytes`` on the CPU (and the budget).
    Accurate mode's stage-1 calls hold at most ``local_batch_cells`` pairs times their ops
    width; re-treeing and the guide-tree checks work in blocks of ``retree_block`` entries;
    PartTree counts blocks of ``parttree_dense_pairs`` pairs densely and calls its pair
    counts ``parttree_pair_chunk`` pairs at a time; ``kmer_method`` picks the k-mer count
    kernel. ``threads`` caps numba's and torch's CPU threads (``None``: leave them as they
    are).
    """

    host_job_cells: int = 1 << 25
    host_job_max_n: int = 2048
    host_accurate_cells: int = 1 << 27
    cpu_level_cells: int = 1 << 23
    cpu_pair_cells: int = 1 << 23
    cpu_device_pair_cells: int = 1 << 62
    run_rows: int = field(default=1 << 21, metadata=_opt(check=_positive))
    lone_pair_cells: int = 1 << 16
    linear_pair_cells: int = 1 << 26
    pool_rows: int = field(default=1024, metadata=_opt(check=_positive))
    host_cells: int = 1 << 20
    host_edge_cells: int = 1 << 22
    threaded_edge_cells: int = 1 << 20
    max_batch_cells: int = field(default=1 << 29, metadata=_opt(check=_positive))
    level_bytes: int = field(default=4 << 30, metadata=_opt(check=_positive))
    host_level_bytes: int = field(default=1 << 28, metadata=_opt(check=_positive))
    local_batch_cells: int = field(default=1 << 22, metadata=_opt(check=_positive))
    retree_block: int = field(default=1 << 24, metadata=_opt(check=_positive))
    parttree_dense_pairs: int = field(default=1 << 22, metadata=_opt(check=_positive))
    parttree_pair_chunk: int = field(default=1 << 24, metadata=_opt(check=_positive))
    kmer_method: str = field(default="matrix", metadata=_opt(check=_one_of(KMER_METHODS)))
    threads: int | None = field(default=None, metadata=_opt(check=_positive))


# ---- how much memory ------------------------------------------------------------------------


def _current(stats: dict, name: str) -> int:
    """The current value of one of torch's CUDA allocator statistics (0 before any use)."""
    return int(stats.get(name, {}).get("all", {}).get("current", 0))


@dataclass(frozen=True, kw_only=True, repr=False)
class MemoryBudget(_Checked):
    """How much memory one stage may plan for.

    :meth:`limit` is ``device_fraction`` of a GPU's free memory (plus torch's cached
    blocks), or ``host_fraction`` of the host's available memory (``ulimit -v`` included),
    unless ``device_bytes`` / ``host_bytes`` fix the figure. :meth:`source` says which
    limit applied, for error messages.
    """

    device_bytes: int | None = field(default=None, metadata=_opt(check=_positive))
    host_bytes: int | None = field(default=None, metadata=_opt(check=_positive))
    device_fraction: float = field(default=0.8, metadata=_opt(check=_fraction))
    host_fraction: float = field(default=0.5, metadata=_opt(check=_fraction))

    def limit(self, device) -> int:
        """Bytes a stage on ``device`` (a ``torch.device`` or its name) may plan for."""
        kind = getattr(device, "type", str(device).split(":")[0])
        if kind == "cuda":
            if self.device_bytes is not None:
                return self.device_bytes
            import torch

            free, _ = torch.cuda.mem_get_info(device)
            # one nested-stats call: memory_reserved and memory_allocated each flatten every
            # statistic (0.3 ms apiece, a tenth of a 10,000-pair DP call)
            stats = torch.cuda.memory_stats_as_nested_dict(device)
            cached = _current(stats, "reserved_bytes") - _current(stats, "allocated_bytes")
            return int((free + cached) * self.device_fraction)
        if self.host_bytes is not None:
            return self.host_bytes
        avail = host_available()
        return int((avail if avail is not None else 1 << 32) * self.host_fraction)

    def source(self, device) -> str:
        """Which limit :meth:`limit` applies on ``device``, and how to raise it."""
        kind = getattr(device, "type", str(device).split(":")[0])
        if kind == "cuda":
            if self.device_bytes is not None:
                return "MemoryBudget(device_bytes=...) fixes it"
            return (
                f"{self.device_fraction:g} of the GPU's free memory; free memory on the GPU "
                "or raise MemoryBudget(device_fraction=...)"
            )
        if self.host_bytes is not None:
            return "MemoryBudget(host_bytes=...) fixes it"
        return (
            f"{self.host_fraction:g} of the host's available memory (ulimit -v included); "
            "free memory or raise MemoryBudget(host_fraction=...)"
        )


# ---- overrides and records ---------------------------------------------------------------


def with_overrides(obj, overrides) -> Any:
    """``obj`` (any of the dataclasses above) with ``"path.to.field=value"`` overrides
    applied, e.g. ``with_overrides(AlignConfig(), ["consistency.weight=16"])``. Values are
    parsed by the field's type; unknown names raise :class:`ArgumentError`."""
    for item in overrides:
        if "=" not in item:
            raise ArgumentError(f"Invalid override {item!r}; expected NAME=VALUE")
        path, text = item.split("=", 1)
        obj = _replace_path(obj, path.strip().split("."), text.strip(), path.strip())
    return obj


def _replace_path(obj, names: list[str], text: str, full: str):
    fields = {f.name: f for f in dataclasses.fields(obj)}
    name = names[0]
    if name not in fields:
        raise ArgumentError(
            f"Unknown setting {full!r}: {type(obj).__name__} has no field {name!r} "
            f"(fields: {', '.join(fields)})"
        )
    current = getattr(obj, name)
    if len(names) > 1:
        if not dataclasses.is_dataclass(current):
            raise ArgumentError(f"Unknown setting {full!r}: {name!r} has no fields")
        return dataclasses.replace(obj, **{name: _replace_path(current, names[1:], text, full)})
    hint = _hints(type(obj))[name]
    return dataclasses.replace(obj, **{name: _parse(text, hint, full)})


def _parse(text: str, hint, full: str):
    args = typing.get_args(hint)
    if text.lower() == "none" and type(None) in args:
        return None
    if type(None) in args:
        hint = next(a for a in args if a is not type(None))
        args = typing.get_args(hint)
    try:
        if typing.get_origin(hint) is tuple:
            parts = text.strip("()").split(",")
            return tuple(t(p) for t, p in zip(args, parts, strict=True))
        if hint is int:
            return int(text, 0)
        if hint is float:
            return float(text)
        if hint is bool:
            return text.lower() in ("1", "true", "yes")
        return text
    except ValueError as exc:
        raise ArgumentError(f"Invalid value for {full!r}: {text!r} ({exc})") from None


def describe(obj) -> str:
    """``repr`` of the non-default fields, nested (``""`` for a default object)."""
    parts = []
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        if value == _default(f):
            continue
        parts.append(f"{f.name}={value!r}")
    return ", ".join(parts)


def checked(obj, cls, name: str):
    """``obj`` if it is a ``cls`` (``cls()`` for ``None``), else an :class:`ArgumentError`
    naming the argument: how the public functions take ``policy=`` and ``budget=``."""
    if obj is None:
        return cls()
    if not isinstance(obj, cls):
        raise ArgumentError(
            f"Invalid value for `{name}` argument: {obj!r}; pass a torchmsa.{cls.__name__}"
        )
    return obj
