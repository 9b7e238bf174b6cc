"""A finding's place: the primary location on the user's line, and the chain around it.

The one builder every finding kind uses. From a call chain (outermost first):
* the primary location is the innermost frame of the user's code (files.classify), with the
  columns of the culprit: the range Python recorded, else the call found on the line (an op's
  name, or a module call for a mismatch), else the line's code;
* the related chain, innermost first, is every other frame that is not torch's or Python's
  own: callers of the primary ("called from here", "imported from here", ...) and the library
  code it called ("inside f (library code)");
* with no frame of the user's code, there is no primary: the caller puts the finding at the
  model's definition (`Place.at_fallback`), and the library frames still say where it happened.
  Warnings too (a mismatch): the primary `locate` gives is only ever a frame of the workspace.

Torch-free.
"""

from __future__ import annotations

import linecache
import os
from dataclasses import dataclass, field
from typing import Callable

from onnxlens.exporter.locations.columns import Span, call_span, first_non_blank, source_line, stripped_line
from onnxlens.exporter.locations.files import Origin, Workspace, classify
from onnxlens.exporter.locations.frames import Frame
from onnxlens.exporter.types import Location, Related

# How a related frame is described: (index in the chain, the frame, is it a caller of the
# primary) -> the message. The default says `note` for callers and "inside f (library code)".
Describe = Callable[[int, Frame, bool], str]
# The culprit's range on the primary line: (frame, the line's text) -> a Span, or None for the
# line's code.
FindSpan = Callable[[Frame, str], "Span | None"]


@dataclass
class Place:
    """Where a finding goes."""

    location: Location | None = None
    related: list[Related] = field(default_factory=list)
    source_line: str | None = None  # the primary line's text
    module_path: str | None = None  # the module an FX node ran in, e.g. "layers.2.ff.0" ("" the root)
    module_class: str | None = None

    def at_fallback(self, fallback: Location | None) -> bool:
        """Without a primary location, take `fallback` (the model's definition, say); True when
        it did, so the caller can say why the finding is there."""
        if self.location is not None or fallback is None:
            return False
        self.location = Location(**fallback.to_dict())
        self.source_line = source_line(self.location.file, self.location.line)
        return True


def primary_index(frames: list[Frame], workspace: Workspace | None) -> int | None:
    """The index of the innermost frame of the user's code, None without one."""
    for index in range(len(frames) - 1, -1, -1):
        if classify(frames[index].file, workspace) is Origin.USER:
            return index
    return None


def primary_frame(frames: list[Frame], workspace: Workspace | None) -> Frame | None:
    index = primary_index(frames, workspace)
    return frames[index] if index is not None else None


def locate(frames: list[Frame], workspace: Workspace | None, *, call_names: list[str] | None = None,
           note: str = "called from here", describe: Describe | None = None,
           find_span: FindSpan | None = None) -> Place:
    """The place of a chain of `frames` (outermost first).

    `call_names`: names the culprit may be called by on the primary line (an op's); `find_span`
    replaces that search. `note` describes callers of the primary; `{func}` in it is the
    caller's function. `describe` replaces the descriptions altogether.
    """
    describe = describe or _default_description(note)
    primary = primary_index(frames, workspace)
    place = Place()
    if primary is not None:
        frame = frames[primary]
        place.location, text = _primary_location(frame, call_names or [], find_span)
        place.source_line = text if text is not None else frame.code
    for index in range(len(frames) - 1, -1, -1):
        other = frames[index]
        if index == primary or classify(other.file, workspace) is Origin.INTERNAL:
            continue
        outer = primary is not None and index < primary
        place.related.append(Related(
            file=os.path.realpath(other.file), line=other.line, message=describe(index, other, outer),
            column=other.column or first_non_blank(source_line(other.file, other.line))))
    return place


def _default_description(note: str) -> Describe:
    def describe(index: int, frame: Frame, outer: bool) -> str:
        if outer:
            return note.format(func=frame.func or "a call")
        return f"inside {frame.func or 'a call'} (library code)"

    return describe


def _primary_location(frame: Frame, call_names: list[str],
                      find_span: FindSpan | None) -> tuple[Location, str | None]:
    linecache.checkcache(frame.file)  # a long-lived process must not read an edited file's old text
    text = source_line(frame.file, frame.line)
    location = Location(file=os.path.realpath(frame.file), line=frame.line)
    span = None
    if frame.column is not None and frame.end_column is not None and (
            frame.end_line in (None, frame.line)) and frame.end_column > frame.column:
        # The exact range Python recorded for the failing expression (single-line only: the
        # caret of a multi-line call is rarely helpful).
        span = Span(frame.column, frame.line, frame.end_column)
    elif text:
        span = (find_span(frame, text) if find_span else call_span(text, frame.line, call_names)) or (
            stripped_line(text, frame.line))
    if span is not None:
        location.column, location.end_line, location.end_column = span
    return location, text
