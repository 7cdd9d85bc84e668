"""``align``'s keyword shortcuts (``mode=``, ``matrix=``, ``gap_open=``, ``gap_extend=``,
``tree=``): each fills a field of :class:`~torchmsa.config.AlignConfig`."""

from __future__ import annotations

import dataclasses
from numbers import Real
from typing import Any

from torchmsa.config import AlignConfig
from torchmsa.errors import ArgumentError

__all__ = ["SHORTCUTS", "apply_shortcuts"]

SHORTCUTS = {
    "mode": ("mode",),
    "matrix": ("scoring", "matrix"),
    "gap_open": ("scoring", "gap_open"),
    "gap_extend": ("scoring", "gap_extend"),
    "tree": ("tree", "method"),
    "method": ("tree", "method"),  # build_tree's name for it
}


def apply_shortcuts(config: AlignConfig | None, **shortcuts: Any) -> tuple[AlignConfig, Any]:
    """``config`` (``None``: the defaults) with the shortcuts that are not ``None`` filled in.

    A shortcut that ``config`` sets to a different, non-default value is an
    :class:`~torchmsa.errors.ArgumentError` naming both. A matrix given as a Biopython
    ``Array`` cannot be a configuration field: it comes back as the second value (else
    ``None``) and ``scoring.matrix`` stays as it was.
    """
    given = config is not None
    config = AlignConfig() if config is None else config
    if not isinstance(config, AlignConfig):
        raise ArgumentError(
            f"Invalid value for `config` argument: {config!r}; pass a torchmsa.AlignConfig"
        )
    custom = None
    for name, value in shortcuts.items():
        if value is None:
            continue
        path = SHORTCUTS[name]
        if name == "matrix" and not isinstance(value, str):
            custom, value = value, None
        elif isinstance(value, Real) and not isinstance(value, (bool, int, float)):
            value = float(value)  # numpy scalars
        current, default = _get(config, path), _get(AlignConfig(), path)
        if given and current != default and current != value:
            shown = "a custom matrix" if value is None else f"`{name}={value!r}`"
            raise ArgumentError(
                f"{shown} conflicts with `config.{'.'.join(path)}={current!r}`; give the "
                f"setting once, as the keyword or in the config"
            )
        if value is not None:
            config = _replace(config, path, value)
    return config, custom


def _get(obj, path: tuple[str, ...]):
    for name in path:
        obj = getattr(obj, name)
    return obj


def _replace(obj, path: tuple[str, ...], value):
    if len(path) == 1:
        return dataclasses.replace(obj, **{path[0]: value})
    inner = _replace(getattr(obj, path[0]), path[1:], value)
    return dataclasses.replace(obj, **{path[0]: inner})
