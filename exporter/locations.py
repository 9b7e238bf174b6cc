"""Source locations: which frames are the user's, and where on a line the culprit is.

Everything the pipeline reports lands on a user line. The raw material is one of
* a Python traceback (FrameSummary objects, with column ranges on 3.11+),
* the text of an FX node's `meta["stack_trace"]` (`File "...", line N, in func` + code line,
  outermost first), or
* dynamo's `real_stack` / draft_export's `user_stack` (FrameSummary lists).
This module turns any of them into (primary Location, related chain innermost first).
"""

from __future__ import annotations

import linecache
import os
import re
from dataclasses import dataclass
from pathlib import Path

from onnxlens.exporter.types import Location, Related

# Directory names that mark third-party code even when it sits inside the workspace.
_VENDOR_DIRS = {"site-packages", "dist-packages", ".venv", "venv", ".tox", ".nox", "node_modules",
                "__pypackages__", ".git"}

_FRAME_RE = re.compile(r'^\s*File "(?P<file>.+?)", line (?P<line>\d+), in (?P<func>.+?)\s*$')


@dataclass
class Frame:
    """One frame of a call chain, independent of where it was read from."""

    file: str
    line: int
    func: str = ""
    column: int | None = None  # 1-based
    end_line: int | None = None
    end_column: int | None = None  # 1-based, exclusive


class Workspace:
    """Decides whether a file is the user's: under the root, not vendored, not our output."""

    def __init__(self, root: str, output_dir: str | None = None) -> None:
        self.root = os.path.realpath(root)
        self.output_dir = os.path.realpath(output_dir) if output_dir else None
        self._cache: dict[str, bool] = {}
        # Resolving symlinks costs a few syscalls a path; thousands of loaded modules are checked
        # per job, and nearly all of them are textually outside the root.
        self._prefixes = tuple({os.path.abspath(root).rstrip(os.sep) + os.sep, self.root.rstrip(os.sep) + os.sep})

    def contains(self, path: str | None) -> bool:
        if not path or path.startswith("<"):
            return False
        known = self._cache.get(path)
        if known is not None:
            return known
        if not os.path.abspath(path).startswith(self._prefixes):
            self._cache[path] = False
            return False
        real = os.path.realpath(path)
        inside = _is_under(real, self.root) and not (
            self.output_dir and _is_under(real, self.output_dir)
        )
        if inside:
            relative = Path(os.path.relpath(real, self.root))
            inside = not any(part in _VENDOR_DIRS for part in relative.parts[:-1])
            if inside:
                # A virtual environment under any name: a pyvenv.cfg above the file.
                inside = not any((Path(self.root) / Path(*relative.parts[:i]) / "pyvenv.cfg").exists()
                                 for i in range(1, len(relative.parts)))
        self._cache[path] = inside
        return inside


def _is_under(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory.rstrip(os.sep) + os.sep)


_OWN_DIR = os.path.dirname(os.path.realpath(__file__))
_INTERNAL_PACKAGES = ("torch", "onnxscript", "onnx_ir", "onnx", "onnxruntime", "functorch")


def is_library_file(path: str) -> bool:
    """Frames of torch, the ONNX stack, Python itself and onnxlens are noise in a user's chain.

    Other third-party code (e.g. transformers) stays: it is part of the user-relevant chain.
    """
    if not path or path.startswith("<"):
        return True
    normalized = path.replace("\\", "/")
    if normalized.startswith(_OWN_DIR.replace("\\", "/") + "/"):
        return True
    for marker in ("/site-packages/", "/dist-packages/"):
        if marker in normalized:
            package = normalized.split(marker, 1)[1].split("/", 1)[0]
            return package in _INTERNAL_PACKAGES
    return "/lib/python3" in normalized  # the standard library


def frames_from_stack_trace(text: str | None) -> list[Frame]:
    """Parse an FX `stack_trace` (outermost first). Caret lines and code lines are skipped."""
    frames: list[Frame] = []
    for raw in (text or "").splitlines():
        match = _FRAME_RE.match(raw)
        if match:
            frames.append(Frame(match["file"], int(match["line"]), match["func"]))
    return frames


def frames_from_summary(summary) -> list[Frame]:
    """From a traceback.StackSummary / list of FrameSummary (outermost first)."""
    frames = []
    for item in summary or []:
        filename = getattr(item, "filename", None)
        lineno = getattr(item, "lineno", None)
        if not filename or not lineno:
            continue
        colno = getattr(item, "colno", None)
        end_colno = getattr(item, "end_colno", None)
        end_lineno = getattr(item, "end_lineno", None)
        frames.append(Frame(
            file=filename, line=int(lineno), func=getattr(item, "name", "") or "",
            column=_character_column(filename, int(lineno), colno),
            end_line=end_lineno,
            end_column=_character_column(filename, end_lineno or int(lineno), end_colno),
        ))
    return frames


def _character_column(file: str, line: int, byte_offset: int | None) -> int | None:
    """1-based character column from CPython's 0-based UTF-8 byte offset (FrameSummary.colno).

    Columns in findings count characters; a line with non-ASCII text before the call would
    otherwise put the range too far right.
    """
    if byte_offset is None:
        return None
    text = linecache.getline(file, line)
    if not text:
        return byte_offset + 1
    return len(text.encode("utf-8")[:byte_offset].decode("utf-8", errors="ignore")) + 1


def source_line(file: str, line: int) -> str | None:
    text = linecache.getline(file, line)
    return text.rstrip("\n") if text else None


def locate(frames: list[Frame], workspace: Workspace, *, call_names: list[str] | None = None,
           note: str = "called from here") -> tuple[Location | None, list[Related], str | None]:
    """Primary location = innermost workspace frame; related = the rest of the user-relevant chain.

    `frames` are outermost first. The related chain (innermost first) keeps workspace frames and
    third-party library frames (e.g. transformers) but drops torch/Python internals.
    `call_names` are candidate callee names to find the column range of the offending call.
    """
    primary_index = None
    for index in range(len(frames) - 1, -1, -1):
        if workspace.contains(frames[index].file):
            primary_index = index
            break
    if primary_index is None:
        # No user frame (a library model, say transformers): the caller shows the finding at the
        # model's definition; the library frames still say where it happened, innermost first.
        related = [Related(file=os.path.realpath(f.file), line=f.line, column=f.column or 1,
                           message=f"inside {f.func or 'a call'} (library code)")
                   for f in reversed(frames) if not is_library_file(f.file)]
        return None, related, None
    frame = frames[primary_index]
    text = source_line(frame.file, frame.line)
    location = Location(file=os.path.realpath(frame.file), line=frame.line)
    _set_columns(location, frame, text, call_names or [])
    related: list[Related] = []
    for index in range(len(frames) - 1, -1, -1):
        other = frames[index]
        if index == primary_index or is_library_file(other.file):
            continue
        message = note if index < primary_index else f"inside {other.func or 'a call'} (library code)"
        related.append(Related(file=os.path.realpath(other.file), line=other.line, message=message,
                               column=other.column or _first_non_blank(source_line(other.file, other.line))))
    return location, related, text


def _first_non_blank(text: str | None) -> int:
    if not text:
        return 1
    return len(text) - len(text.lstrip()) + 1


def _set_columns(location: Location, frame: Frame, text: str | None, call_names: list[str]) -> None:
    # 1. the exact range Python recorded for the failing expression (single-line only: LSP
    #    ranges across lines are fine, but the caret of a multi-line call is rarely helpful).
    if frame.column is not None and frame.end_column is not None and (
            frame.end_line in (None, frame.line)) and frame.end_column > frame.column:
        location.column, location.end_line, location.end_column = frame.column, frame.line, frame.end_column
        return
    # 2. the call of the offending function in the line's text.
    if text:
        span = find_call(text, call_names)
        if span:
            location.column, location.end_line, location.end_column = span[0] + 1, frame.line, span[1] + 1
            return
        # 3. the stripped line.
        start = len(text) - len(text.lstrip())
        location.column, location.end_line, location.end_column = start + 1, frame.line, len(text.rstrip()) + 1


def find_call(text: str, names: list[str]) -> tuple[int, int] | None:
    """0-based [start, end) of the first call `a.b.name(...)` of one of `names` in `text`."""
    for name in names:
        if not name:
            continue
        match = re.search(r"[\w.]*\b" + re.escape(name) + r"\s*\(", text)
        if not match:
            continue
        depth, end = 0, None
        for index in range(match.end() - 1, len(text)):
            if text[index] == "(":
                depth += 1
            elif text[index] == ")":
                depth -= 1
                if depth == 0:
                    end = index + 1
                    break
        return match.start(), end if end is not None else len(text.rstrip())
    return None


def call_names_for_op(torch_fn: str | None, op_name: str) -> list[str]:
    """Names a user may have written for an op: `linalg_eigvals` -> `linalg.eigvals`, `eigvals`."""
    names: list[str] = []
    for raw in (torch_fn, op_name):
        if not raw:
            continue
        base = raw.split(".")[-1] if raw != op_name else raw.split(".")[-2 if raw.count(".") >= 2 else -1]
        base = base.rstrip("_")
        for candidate in (base.replace("_", "."), base, base.split("_", 1)[-1], base.split("_")[-1]):
            candidate = candidate.lstrip("_")
            if candidate and candidate not in names:
                names.append(candidate)
    return names
