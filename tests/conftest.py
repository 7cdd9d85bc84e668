"""Test setup: Triton's interpreter on machines without a CUDA GPU, the ``device`` fixture.

``TRITON_INTERPRET=1`` must be set before any ``@triton.jit`` kernel is defined, so it is set
here, when pytest imports this file, and only when no CUDA GPU is usable: with a GPU the same
tests run the compiled kernels. Tests marked ``gpu`` are skipped without CUDA. The command's
compile-ahead process (``TORCHMSA_COMPILE_AHEAD``) and the warm server (``TORCHMSA_DAEMON``) are
off: a test starts no detached process unless it turns one on for itself (``test_daemon.py``).
"""

from __future__ import annotations

import os

import torch

HAS_CUDA = torch.cuda.is_available()
os.environ.setdefault("TORCHMSA_COMPILE_AHEAD", "0")
os.environ["TORCHMSA_DAEMON"] = "off"
if not HAS_CUDA:
    os.environ["TRITON_INTERPRET"] = "1"

import pytest  # noqa: E402


@pytest.fixture
def device() -> str:
    """``"cuda"`` when a CUDA GPU is usable, else ``"cpu"`` (kernels run interpreted)."""
    return "cuda" if HAS_CUDA else "cpu"


def pytest_collection_modifyitems(config, items):
    if HAS_CUDA:
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
