"""The commit a benchmark's run measures, as its results table names it.

`measured_commit()` is HEAD's short hash, with " with uncommitted changes" when the tracked files
differ from it (the benchmark's own outputs aside: a run rewrites them), so a table never names a
commit its figures were not measured at; "unknown" outside a git checkout.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def measured_commit(*outputs: str | Path, length: int | None = None) -> str:
    """HEAD (`length` hex digits; git's default short form without) and whether the working tree
    differed from it; `outputs`: the benchmark's own files, not counted as changes."""
    head = _git("rev-parse", f"--short={length}" if length else "--short", "HEAD")
    if not head:
        return "unknown"
    excluded = (f":!{Path(path).resolve().relative_to(REPO) if Path(path).is_absolute() else path}" for path in outputs)
    changed = _git("status", "--porcelain", "--untracked-files=no", "--", ".", *excluded)
    return head + (" with uncommitted changes" if changed else "")


def _git(*args: str) -> str:
    try:
        return subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True).stdout.strip()
    except OSError:  # no git here
        return ""
