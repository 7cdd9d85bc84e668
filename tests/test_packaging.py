"""The installed package holds every subpackage: pyproject's explicit package list names each
folder of torchmsa/ that has an ``__init__.py`` (a missing one installs from a checkout in
editable mode but is absent from a wheel)."""

from __future__ import annotations

from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")  # Python 3.11+

ROOT = Path(__file__).resolve().parents[1]


def test_every_subpackage_is_listed_in_pyproject():
    listed = set(
        tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    )
    found = {
        ".".join(init.parent.relative_to(ROOT).parts)
        for init in (ROOT / "torchmsa").rglob("__init__.py")
        if "__pycache__" not in init.parts
    }
    found.add("torchmsa._triton")
    assert found == listed, {"missing": sorted(found - listed), "stale": sorted(listed - found)}


def test_asset_folders_are_package_data():
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    package_data = data["package-data"]
    for assets in (ROOT / "torchmsa").rglob("assets"):
        package = ".".join(assets.parent.relative_to(ROOT).parts)
        assert "assets/*" in package_data.get(package, []), package


def test_the_command_line_starts_without_the_server_stack():
    """Building the CLI (every verb's options) imports none of the server's, client's or
    viewer's libraries, nor torch, numba, Triton or numpy: `torchmsa align` does not pay for
    FastAPI, SQLAlchemy or Pillow, and `torchmsa --help`, `submit`, `status` and `fetch`
    (HTTP clients) do not pay for torch or numpy."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from torchmsa.cli import build_parser\n"
        "build_parser()\n"
        "heavy = ('fastapi', 'starlette', 'uvicorn', 'sqlalchemy', 'httpx', 'PIL', 'selenium',"
        " 'psycopg', 'torch', 'numba', 'triton', 'numpy')\n"
        "print(' '.join(m for m in heavy if m in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert out.stdout.strip() == ""
