"""Benchmark settings: ``--config`` / ``--policy`` / ``--budget NAME=VALUE`` options and
labelled variants, as ``torchmsa.config`` objects.

Example:
    >>> from benchmarks.settings import settings_from
    >>> config, policy, budget = settings_from(["consistency.weight=16"], ["run_rows=60"])
    >>> config.consistency.weight, policy.run_rows
    (16, 60)
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

# torchmsa (and torch) are imported where used: the results tools need neither
if TYPE_CHECKING:
    from torchmsa.config import AlignConfig, ExecutionPolicy, MemoryBudget

__all__ = [
    "Variant",
    "settings_from",
    "add_settings_options",
    "parsed_settings",
    "align_kwargs",
    "settings_columns",
    "parse_variant",
]


def _int_expr(text: str) -> int:
    """A literal integer expression (``2**40``, ``1 << 22``, ``-1``) without ``eval``."""
    node = ast.parse(text, mode="eval").body

    def ev(n):
        if isinstance(n, ast.Constant) and isinstance(n.value, int):
            return n.value
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub):
            return -ev(n.operand)
        if isinstance(n, ast.BinOp):
            a, b = ev(n.left), ev(n.right)
            ops = {ast.Pow: pow, ast.LShift: int.__lshift__, ast.Mult: int.__mul__}
            if type(n.op) in ops:
                return ops[type(n.op)](a, b)
        raise ValueError(text)

    return ev(node)


def _plain(item: str) -> str:
    """``name=2**40`` -> ``name=1099511627776``; other values are left to the field's parser."""
    name, sep, value = item.partition("=")
    try:
        return f"{name}{sep}{_int_expr(value.strip())}"
    except (ValueError, SyntaxError):
        return item


def settings_from(
    config: Sequence[str] = (),
    policy: Sequence[str] = (),
    budget: Sequence[str] = (),
    base: tuple[AlignConfig, ExecutionPolicy, MemoryBudget] | None = None,
) -> tuple[AlignConfig, ExecutionPolicy, MemoryBudget]:
    """``AlignConfig``, ``ExecutionPolicy`` and ``MemoryBudget`` (``base``'s, else the
    defaults) with ``NAME=VALUE`` overrides (``consistency.weight=16``, ``run_rows=2**20``);
    an unknown name or a bad value raises :class:`torchmsa.errors.ArgumentError`."""
    from torchmsa.config import AlignConfig, ExecutionPolicy, MemoryBudget, with_overrides

    start = base or (AlignConfig(), ExecutionPolicy(), MemoryBudget())
    return (
        with_overrides(start[0], [_plain(s) for s in config]),
        with_overrides(start[1], [_plain(s) for s in policy]),
        with_overrides(start[2], [_plain(s) for s in budget]),
    )


def add_settings_options(parser) -> None:
    """``--config``, ``--policy`` and ``--budget NAME=VALUE`` (each repeatable)."""
    parser.add_argument(
        "--config",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="an AlignConfig field for this run, e.g. consistency.weight=16 (repeatable)",
    )
    parser.add_argument(
        "--policy",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="an ExecutionPolicy field, e.g. run_rows=60 (repeatable; never changes results)",
    )
    parser.add_argument(
        "--budget",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a MemoryBudget field, e.g. device_fraction=0.5 (repeatable)",
    )


def parsed_settings(parser, args) -> tuple[AlignConfig, ExecutionPolicy, MemoryBudget]:
    """:func:`settings_from` of the parsed options; a bad one ends with the parser's error."""
    from torchmsa.errors import ArgumentError

    try:
        return settings_from(args.config, args.policy, args.budget)
    except ArgumentError as exc:
        parser.error(str(exc))
        raise  # parser.error exits; this is for type checkers


def align_kwargs(config: AlignConfig, policy: ExecutionPolicy, budget: MemoryBudget) -> dict:
    """Keywords for ``torchmsa.align`` / ``align_many``: the objects that differ from their
    defaults (a default object means the same as leaving it out)."""
    from torchmsa.config import AlignConfig, ExecutionPolicy, MemoryBudget

    out = {}
    if config != AlignConfig():
        out["config"] = config
    if policy != ExecutionPolicy():
        out["policy"] = policy
    if budget != MemoryBudget():
        out["budget"] = budget
    return out


def settings_columns(config: AlignConfig, policy: ExecutionPolicy, budget: MemoryBudget) -> dict:
    """The ``config``, ``policy`` and ``budget`` columns: ``describe`` of each (``""`` when
    default)."""
    from torchmsa.config import describe

    return {"config": describe(config), "policy": describe(policy), "budget": describe(budget)}


@dataclass(frozen=True)
class Variant:
    """A labelled set of settings (``ab_cases --variant``, ``stages --variant``)."""

    label: str
    config: AlignConfig
    policy: ExecutionPolicy
    budget: MemoryBudget

    def kwargs(self) -> dict:
        return align_kwargs(self.config, self.policy, self.budget)

    def columns(self) -> dict:
        return {"variant": self.label, **settings_columns(self.config, self.policy, self.budget)}


def parse_variant(spec: str, base: Variant | None = None) -> Variant:
    """``label`` or ``label:policy.run_rows=60,config.consistency.weight=16,budget.X=V``,
    applied to ``base``'s settings (default: the defaults).

    Each setting names its object (``config.``, ``policy.`` or ``budget.``) and a field of
    it; commas inside parentheses belong to the value (``config.scoring.terminal=(1,2)``).
    Unknown objects or fields raise :class:`torchmsa.errors.ArgumentError`.
    """
    from torchmsa.errors import ArgumentError

    label, _, body = spec.partition(":")
    parts: dict[str, list[str]] = {"config": [], "policy": [], "budget": []}
    for item in filter(None, re.split(r",(?![^()]*\))", body)):
        kind, _, rest = item.strip().partition(".")
        if kind not in parts or not rest:
            raise ArgumentError(
                f"Invalid setting {item!r} in variant {label!r}; expected config.NAME=VALUE, "
                "policy.NAME=VALUE or budget.NAME=VALUE"
            )
        parts[kind].append(rest)
    start = (base.config, base.policy, base.budget) if base is not None else None
    settings = settings_from(parts["config"], parts["policy"], parts["budget"], start)
    return Variant(label or "base", *settings)
