"""Workspaces on disk: private copies of examples/, files written as an editor writes them, and
lines found by their text (tests never hard-code line numbers).

Lines are 1-based, as in the CLI's output, its JSON and every `Location`; `lsp_line` is the same
line 0-based, for LSP positions and Neovim's `vim.diagnostic`.
"""

from __future__ import annotations

import shutil
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"


def copy_examples(into: Path) -> Path:
    """A private copy of examples/ at `into`/examples (tests write outputs and edit files)."""
    target = into / "examples"
    shutil.copytree(EXAMPLES, target, ignore=shutil.ignore_patterns(".onnxlens", "__pycache__"))
    return target


def write(path: Path, text: str | bytes) -> None:
    """Write `text` as given (bytes as they are; "\\r\\n" kept), creating the folders."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        with open(path, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)


def line_of(path: Path, needle: str, occurrence: int = 1, *, whole: bool = False) -> int:
    """1-based number of the line holding the `occurrence`-th `needle` (`whole`: the line that
    is `needle`)."""
    seen = 0
    for number, text in enumerate(path.read_text().splitlines(), start=1):
        if text == needle if whole else needle in text:
            seen += 1
            if seen == occurrence:
                return number
    raise AssertionError(f"{needle!r} not in {path}" + (f" {occurrence} times" if occurrence > 1 else ""))


def lsp_line(path: Path, needle: str, occurrence: int = 1, *, whole: bool = False) -> int:
    """The same line 0-based: LSP positions and vim.diagnostic count lines from 0."""
    return line_of(path, needle, occurrence, whole=whole) - 1
