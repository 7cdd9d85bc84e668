"""Package attributes loaded on first use (PEP 562's module ``__getattr__``), so that importing
a package does not import every submodule it exports from."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable

__all__ = ["lazy_attributes"]


def lazy_attributes(package: str, where: dict[str, str]) -> tuple[Callable, Callable]:
    """``(__getattr__, __dir__)`` for ``package``'s ``__init__``: the name ``n`` of ``where``
    comes from the submodule ``package.where[n]`` when first asked for, and is kept in the
    package from then on."""

    def __getattr__(name: str):
        if name not in where:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{where[name]}"), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(where))

    return __getattr__, __dir__
