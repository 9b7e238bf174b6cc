"""Shared fixtures. Tests run real torch exports, real processes and real editor clients."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"


@pytest.fixture
def examples_copy(tmp_path: Path) -> Path:
    """A private copy of examples/ (tests write .onnxlens/ outputs and edit files)."""
    target = tmp_path / "examples"
    shutil.copytree(EXAMPLES, target, ignore=shutil.ignore_patterns(".onnxlens", "__pycache__"))
    return target
