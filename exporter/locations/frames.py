"""Frames of a call chain, read from each place torch and Python record one.

One `Frame` type, one parser per source, every list outermost first:
* `from_stack_trace`: the text of an FX node's `meta["stack_trace"]` (`File "...", line N, in
  func`, the code line, caret lines on strict capture);
* `from_traceback`: a Python traceback, a `traceback.StackSummary` or any list of FrameSummary
  (dynamo's `real_stack` too), with the column ranges CPython records (3.11+), in characters;
* `from_faulthandler`: a faulthandler dump (a timeout's SIGUSR1, a fatal signal), per thread;

Torch-free: plain text and FrameSummary-like objects.
"""

from __future__ import annotations

import linecache
import re
import traceback
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Iterable

from onnxlens.exporter.locations.columns import character_column


@dataclass
class Frame:
    """One frame of a call chain, independent of where it was read from."""

    file: str
    line: int
    func: str = ""
    column: int | None = None  # 1-based
    end_line: int | None = None
    end_column: int | None = None  # 1-based, exclusive
    code: str | None = None  # the line's text as the source recorded it (stripped)


_STACK_TRACE_FRAME = re.compile(r'^\s*File "(?P<file>.+?)", line (?P<line>\d+), in (?P<func>.+?)\s*$')


def from_stack_trace(text: str | None) -> list[Frame]:
    """An FX `stack_trace` (as recorded: outermost first). A frame's code is the line after it,
    unless that is the next frame; caret lines are never code."""
    frames: list[Frame] = []
    lines = (text or "").splitlines()
    for index, raw in enumerate(lines):
        match = _STACK_TRACE_FRAME.match(raw)
        if not match:
            continue
        code = None
        if index + 1 < len(lines) and not _STACK_TRACE_FRAME.match(lines[index + 1]):
            code = lines[index + 1].strip() or None
        frames.append(Frame(match["file"], int(match["line"]), match["func"], code=code))
    return frames


def from_traceback(source: BaseException | TracebackType | Iterable[Any] | None) -> list[Frame]:
    """From an exception's traceback, a traceback, or FrameSummary objects (outermost first).

    CPython's columns are 0-based UTF-8 byte offsets; findings count characters (a line with
    non-ASCII text before the call would otherwise put the range too far right).
    """
    if isinstance(source, BaseException):
        source = source.__traceback__
    if isinstance(source, TracebackType):
        source = traceback.extract_tb(source)
    frames = []
    for item in source or []:
        filename = getattr(item, "filename", None)
        lineno = getattr(item, "lineno", None)
        if not filename or not lineno:
            continue
        end_lineno = getattr(item, "end_lineno", None)
        frames.append(Frame(
            file=filename, line=int(lineno), func=getattr(item, "name", "") or "",
            column=_column(filename, int(lineno), getattr(item, "colno", None)),
            end_line=end_lineno,
            end_column=_column(filename, end_lineno or int(lineno), getattr(item, "end_colno", None)),
        ))
    return frames


def _column(file: str, line: int, byte_offset: int | None) -> int | None:
    if byte_offset is None:
        return None
    text = linecache.getline(file, line)
    return character_column(text, byte_offset) if text else byte_offset + 1


_THREAD_HEADER = re.compile(r"^(Current thread|Thread) 0x[0-9a-fA-F]+|^Stack \(most recent call first\)")
_DUMP_FRAME = re.compile(r'^\s+File "(?P<file>.+)", line (?P<line>\d+) in (?P<func>.+)$')


def from_faulthandler(text: str) -> list[list[Frame]]:
    """faulthandler output -> one frame list per thread (outermost first).

    The thread that received the signal ("Current thread") comes first. After a fatal error,
    only that last dump counts.
    """
    last_fatal = text.rfind("Fatal Python error")
    if last_fatal >= 0:
        text = text[last_fatal:]
    threads: list[tuple[bool, list[Frame]]] = []
    for raw in text.splitlines():
        if _THREAD_HEADER.match(raw):
            threads.append((raw.startswith(("Current thread", "Stack")), []))
            continue
        frame = _DUMP_FRAME.match(raw)
        if frame and threads:
            threads[-1][1].append(Frame(frame["file"], int(frame["line"]), frame["func"].strip()))
    threads.sort(key=lambda entry: not entry[0])  # stable: the current thread first
    # faulthandler writes the most recent call first.
    return [frames[::-1] for _, frames in threads if frames]
