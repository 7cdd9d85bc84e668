"""The layering contract, read from the source (``ast``; nothing is imported).

* ``torchmsa/constants.py`` imports nothing.
* ``torchmsa/cpu/*`` and ``triton_kernels/*`` (``torchmsa._triton``) import only the standard
  library, numpy, numba (and llvmlite, its IR builder, for numba intrinsics), triton, torch,
  ``torchmsa.constants``, ``torchmsa.errors`` and their own package, wherever the import
  stands (inside functions too): they never import each other, nor ``ops/`` or anything above.
* ``torchmsa/ops/*`` imports, of torchmsa, only ``ops``, ``cpu``, ``_triton``, ``constants``,
  ``errors``, ``config``, ``alphabet``, ``scoring`` and ``sequences``.
* Top-level imports between torchmsa modules form no cycle; neither do all imports, those
  inside functions included (a deferred import only hides a cycle: ``io`` <-> ``sequences``
  and ``triton_kernels/kmer.py`` <-> ``ops/kmer_stream.py`` were such).
* No module takes a ``_private`` name from another one (``from x import _name``, or
  ``x._name`` on an imported torchmsa module).
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = {"torchmsa": ROOT / "torchmsa", "torchmsa._triton": ROOT / "triton_kernels"}
LOW_THIRD_PARTY = {"numpy", "numba", "llvmlite", "triton", "torch"}
LOW_SHARED = {"torchmsa.constants", "torchmsa.errors"}
OPS_MAY_USE = {
    "torchmsa.ops",
    "torchmsa.cpu",
    "torchmsa._triton",
    "torchmsa.constants",
    "torchmsa.errors",
    "torchmsa.config",
    "torchmsa.alphabet",
    "torchmsa.scoring",  # substitution matrices: a data module beside alphabet
    "torchmsa.sequences",
}

# Known violations in files that other refactors are still moving, as (rule, module, target).
# The lead empties this list at integration; every entry must still occur (see
# test_allow_lists_are_current), so a fixed one has to leave the list.
ALLOWED: set[tuple[str, str, str]] = set()
# Known cycles through imports inside functions, each as its sorted modules (same rules).
ALLOWED_CYCLES: set[tuple[str, ...]] = set()


@dataclass(frozen=True)
class Import:
    module: str  # the importing module
    target: str  # the module imported (or the package a name is taken from)
    names: tuple[str, ...]  # names taken with ``from target import ...``
    top_level: bool  # runs when the module is imported (not inside a function)
    line: int


def _module_name(package: str, root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join([package, *parts])


def _sources() -> dict[str, tuple[Path, ast.Module]]:
    out = {}
    for package, root in PACKAGES.items():
        for path in sorted(root.rglob("*.py")):
            if "__pycache__" in path.parts:
                continue
            out[_module_name(package, root, path)] = (path, ast.parse(path.read_text(), str(path)))
    return out


SOURCES = _sources()
MODULES = set(SOURCES)


def _is_package(name: str) -> bool:
    return SOURCES[name][0].name == "__init__.py" if name in SOURCES else False


def _resolve(module: str, node: ast.ImportFrom) -> str:
    """The absolute module of a ``from ... import`` (relative imports included)."""
    if not node.level:
        return node.module or ""
    base = module.split(".")
    base = base if _is_package(module) else base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


class _Collector(ast.NodeVisitor):
    def __init__(self, module: str):
        self.module = module
        self.depth = 0  # function nesting
        self.type_checking = 0
        self.imports: list[Import] = []

    def _add(self, target: str, names: tuple[str, ...], line: int) -> None:
        top = self.depth == 0 and self.type_checking == 0
        self.imports.append(Import(self.module, target, names, top, line))

    def visit_FunctionDef(self, node):
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    visit_AsyncFunctionDef = visit_FunctionDef
    visit_Lambda = visit_FunctionDef

    def visit_If(self, node):
        test = node.test
        guarded = (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
            isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
        )
        self.type_checking += guarded
        for child in node.body:
            self.visit(child)
        self.type_checking -= guarded
        for child in node.orelse:
            self.visit(child)

    def visit_Import(self, node):
        for alias in node.names:
            self._add(alias.name, (), node.lineno)

    def visit_ImportFrom(self, node):
        target = _resolve(self.module, node)
        if target == "__future__":
            return
        names = tuple(a.name for a in node.names)
        # ``from package import module`` imports the module
        subs = [n for n in names if f"{target}.{n}" in MODULES]
        for n in subs:
            self._add(f"{target}.{n}", (), node.lineno)
        rest = tuple(n for n in names if n not in subs)
        if rest or not subs:
            self._add(target, rest, node.lineno)


def _imports() -> list[Import]:
    out = []
    for module, (_, tree) in SOURCES.items():
        c = _Collector(module)
        c.visit(tree)
        out += c.imports
    return out


IMPORTS = _imports()


def _owner(target: str) -> str | None:
    """The torchmsa module that ``target`` names (itself, or the package it lies in)."""
    while target and target not in MODULES:
        target = target.rpartition(".")[0]
    return target or None


def _within(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def _top(name: str) -> str:
    return name.split(".")[0]


def _low_package(module: str) -> str | None:
    for pkg in ("torchmsa.cpu", "torchmsa._triton"):
        if _within(module, pkg):
            return pkg
    return None


def _violations() -> set[tuple[str, str, str]]:
    found = set()
    for imp in IMPORTS:
        m, t = imp.module, imp.target
        if m == "torchmsa.constants":
            found.add(("constants", m, t))
        low = _low_package(m)
        if low is not None:
            ok = (
                _top(t) in sys.stdlib_module_names
                or _top(t) in LOW_THIRD_PARTY
                or any(_within(t, s) for s in LOW_SHARED | {low})
            )
            if not ok:
                found.add(("low-layer", m, t))
        if _within(m, "torchmsa.ops") and _top(t) == "torchmsa":
            if not any(_within(t, s) for s in OPS_MAY_USE):
                found.add(("ops-layer", m, t))
        owner = _owner(t)
        if owner is not None and owner != m:
            for n in imp.names:
                if n.startswith("_") and not n.startswith("__"):
                    found.add(("private", m, f"{owner}.{n}"))
    found |= _private_attributes()
    return found


def _private_attributes() -> set[tuple[str, str, str]]:
    """``alias._name`` where ``alias`` is a torchmsa module imported by name."""
    found = set()
    for module, (_, tree) in SOURCES.items():
        aliases = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.asname and a.name in MODULES:
                        aliases[a.asname] = a.name
            elif isinstance(node, ast.ImportFrom):
                target = _resolve(module, node)
                for a in node.names:
                    if f"{target}.{a.name}" in MODULES:
                        aliases[a.asname or a.name] = f"{target}.{a.name}"
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in aliases
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
                and aliases[node.value.id] != module
            ):
                found.add(("private", module, f"{aliases[node.value.id]}.{node.attr}"))
    return found


def _cycles(top_level_only: bool) -> list[tuple[str, ...]]:
    """Strongly connected components of more than one module."""
    graph: dict[str, set[str]] = {m: set() for m in MODULES}
    for imp in IMPORTS:
        owner = _owner(imp.target)
        if (imp.top_level or not top_level_only) and owner is not None and owner != imp.module:
            graph[imp.module].add(owner)
    # Tarjan's strongly connected components
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[tuple[str, ...]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(tuple(sorted(comp)))

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10 * len(graph) + 100))
    try:
        for v in sorted(graph):
            if v not in index:
                visit(v)
    finally:
        sys.setrecursionlimit(limit)
    return out


def _where(v: tuple[str, str, str]) -> str:
    rule, module, target = v
    lines = [
        i.line
        for i in IMPORTS
        if i.module == module and (i.target == target or target.startswith(i.target + "."))
    ]
    path = SOURCES[module][0].relative_to(ROOT)
    return f"{rule}: {path}:{min(lines) if lines else '?'} {module} -> {target}"


def test_the_walk_sees_the_layers():
    for name in ("torchmsa.constants", "torchmsa.cpu.dp", "torchmsa._triton.dp", "torchmsa.ops"):
        assert name in MODULES, name
    assert any(i.module == "torchmsa._triton.dp" for i in IMPORTS)


@pytest.mark.parametrize("rule", ["constants", "low-layer", "ops-layer", "private"])
def test_layering_contract(rule):
    bad = sorted(v for v in _violations() - ALLOWED if v[0] == rule)
    assert not bad, "layering violations:\n" + "\n".join(_where(v) for v in bad)


def test_no_import_cycles():
    cycles = _cycles(top_level_only=True)
    assert not cycles, "top-level import cycles: " + "; ".join(" <-> ".join(c) for c in cycles)


def test_no_import_cycles_through_deferred_imports():
    cycles = [c for c in _cycles(top_level_only=False) if c not in ALLOWED_CYCLES]
    assert not cycles, "import cycles: " + "; ".join(" <-> ".join(c) for c in cycles)


def test_allow_lists_are_current():
    stale = sorted(ALLOWED - _violations())
    assert not stale, f"allowed violations that no longer occur (remove them): {stale}"
    stale_cycles = sorted(ALLOWED_CYCLES - set(_cycles(top_level_only=False)))
    assert not stale_cycles, f"allowed cycles that no longer occur (remove them): {stale_cycles}"


def test_checker_catches_what_it_should():
    snippet = ast.parse(
        "import os\nfrom torchmsa.ops.backend import to_device\n"
        "def f():\n    from torchmsa.cpu.dp import _profile_align\n"
    )
    c = _Collector("torchmsa._triton.example")
    c.visit(snippet)
    targets = {(i.target, i.top_level, i.names) for i in c.imports}
    assert ("torchmsa.ops.backend", True, ("to_device",)) in targets
    assert ("torchmsa.cpu.dp", False, ("_profile_align",)) in targets
    rel = ast.parse("from .dp_plan import Config\nfrom . import dp\n").body
    assert _resolve("torchmsa._triton.dp", rel[0]) == "torchmsa._triton.dp_plan"
    assert _resolve("torchmsa._triton", rel[1]) == "torchmsa._triton"
