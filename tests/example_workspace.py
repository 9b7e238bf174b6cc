"""Helpers shared by the test folders: copies of examples/, and finding lines by their text
(tests never hard-code line numbers)."""

from __future__ import annotations

import shutil
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def copy_examples(into: Path) -> Path:
    """A private copy of examples/ at `into`/examples (tests write outputs and edit files)."""
    target = into / "examples"
    shutil.copytree(EXAMPLES, target, ignore=shutil.ignore_patterns(".onnxlens", "__pycache__"))
    return target


def line_of(path: Path, needle: str, occurrence: int = 1) -> int:
    """1-based number of the line holding the `occurrence`-th `needle`."""
    seen = 0
    for number, text in enumerate(path.read_text().splitlines(), start=1):
        if needle in text:
            seen += 1
            if seen == occurrence:
                return number
    raise AssertionError(f"{needle!r} not in {path}")
