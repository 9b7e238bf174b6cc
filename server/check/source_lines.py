"""The text of one line of a file as it is on disk now (no cache: CLI runs are short, and an
edited file must show its new text)."""

from __future__ import annotations


def read_line(file: str, line: int) -> str | None:
    """Line `line` (1-based) of `file` without its line break; None if the file or line is missing."""
    try:
        with open(file, encoding="utf-8", errors="replace") as handle:
            for number, text in enumerate(handle, start=1):
                if number == line:
                    return text.rstrip("\n")
    except OSError:
        pass
    return None
