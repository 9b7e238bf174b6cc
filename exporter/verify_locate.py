"""Put an FX node on the user's source line: its stack trace, module path and expression columns.

torch.export records, per FX node, `meta["stack_trace"]` (text frames `File "…", line N, in f`
followed by the code line, outermost first) and `meta["nn_module_stack"]`
({key: (module path, class)}, outermost first). The primary location is the innermost frame in
the workspace; the rest of the chain becomes related locations, innermost first.

Torch-free on purpose (plain text and ast): it works on the metadata only.
"""

from __future__ import annotations

import ast
import functools
import linecache
import os
import re
import sys
import sysconfig
from dataclasses import dataclass, field

from onnxlens.exporter import locations
from onnxlens.exporter.types import Location, Related

_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<func>[^\n]+)')

# Frames of torch's own tracing machinery: never part of the user-relevant chain.
_MACHINERY = (
    os.sep + os.path.join("torch", "_dynamo") + os.sep,
    os.sep + os.path.join("torch", "fx") + os.sep,
    os.sep + os.path.join("torch", "export") + os.sep,
    os.sep + os.path.join("torch", "_export") + os.sep,
    os.sep + os.path.join("torch", "_higher_order_ops") + os.sep,
    os.sep + os.path.join("torch", "utils", "_contextlib.py"),
    os.sep + os.path.join("torch", "nn", "modules", "module.py"),
)


@dataclass
class Frame:
    file: str
    line: int
    func: str
    code: str = ""


@dataclass
class SourcePlace:
    """Where an FX node came from, ready to become a Finding's location."""

    location: Location | None = None
    source_line: str | None = None
    related: list[Related] = field(default_factory=list)
    module_path: str | None = None  # e.g. "layers.2.ff.0"; "" for the root module
    module_class: str | None = None


def parse_stack_trace(text: str | None) -> list[Frame]:
    """Frames of a `meta["stack_trace"]` text, outermost first (as recorded)."""
    if not text:
        return []
    frames: list[Frame] = []
    lines = text.splitlines()
    for index, raw in enumerate(lines):
        match = _FRAME.search(raw)
        if not match:
            continue
        code = ""
        if index + 1 < len(lines) and not _FRAME.search(lines[index + 1]):
            code = lines[index + 1].strip()
        frames.append(Frame(match["file"], int(match["line"]), match["func"].strip(), code))
    return frames


@functools.lru_cache(maxsize=1)
def _library_dirs() -> tuple[str, ...]:
    dirs = set()
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        path = sysconfig.get_paths().get(key)
        if path:
            dirs.add(os.path.realpath(path) + os.sep)
    for prefix in {sys.prefix, sys.base_prefix, sys.exec_prefix}:
        dirs.add(os.path.realpath(os.path.join(prefix, "lib")) + os.sep)
    return tuple(sorted(dirs))


def is_library_file(path: str) -> bool:
    real = os.path.realpath(path)
    if f"{os.sep}site-packages{os.sep}" in real or f"{os.sep}dist-packages{os.sep}" in real:
        return True
    if path.startswith("<"):  # <string>, <frozen …>, <eval_with_key>
        return True
    return real.startswith(_library_dirs())


def is_user_file(path: str, root: str | None) -> bool:
    """Inside the workspace (the pipeline's rule: not vendored, not a virtualenv) when `root`
    is given; else any file outside installed libraries and the standard library."""
    if root is None:
        return not is_library_file(path)
    return locations.Workspace(root).contains(path)


def _is_machinery(path: str) -> bool:
    return any(part in path for part in _MACHINERY)


_STRICT_PATH = re.compile(r"^L\['self'\]\.?|^L__self__\.?")


def normalize_module_path(path: str) -> str:
    """`L['self'].layers[2].ff[0]` (strict capture) -> `layers.2.ff.0` (non-strict's spelling)."""
    path = re.sub(r"getattr\((.*?), '([^']+)'\)", r"\1.\2", path)
    path = _STRICT_PATH.sub("", path)
    path = re.sub(r"\[(\d+)\]", r".\1", path)
    path = re.sub(r"\['([^']+)'\]", r".\1", path)
    return path.strip(".")


def module_stack(meta: dict) -> list[tuple[str, str]]:
    """[(module path, class name)] outermost first, from `meta["nn_module_stack"]`."""
    stack = meta.get("nn_module_stack") or {}
    entries = []
    for value in stack.values():
        try:
            path, cls = value[0], value[1]
        except (TypeError, IndexError):
            continue
        cls_name = cls if isinstance(cls, str) else getattr(cls, "__qualname__", str(cls))
        entries.append((normalize_module_path(str(path)), cls_name))
    return entries


def locate_node_meta(meta: dict, root: str | None) -> SourcePlace:
    """The user's line (and the chain around it) for one FX node's metadata."""
    frames = [f for f in parse_stack_trace(meta.get("stack_trace")) if not _is_machinery(f.file)]
    modules = module_stack(meta)
    place = SourcePlace()
    if modules:
        place.module_path, place.module_class = modules[-1]
    if not frames:
        return place
    primary_index = next(
        (i for i in range(len(frames) - 1, -1, -1) if is_user_file(frames[i].file, root)), None
    )
    if primary_index is None:
        # Nothing in the workspace: the innermost non-library frame, else the innermost frame.
        primary_index = next(
            (i for i in range(len(frames) - 1, -1, -1) if not is_library_file(frames[i].file)),
            len(frames) - 1,
        )
    primary = frames[primary_index]
    child = _child_attribute(frames, primary_index, modules)
    place.location = _expression_location(primary, child, modules)
    place.source_line = _source_text(primary)
    # The rest of the chain, innermost first: frames inside the primary (e.g. the library's
    # forward it called), then its callers.
    owners = _frame_modules(frames, modules)
    for i in range(len(frames) - 1, -1, -1):
        frame = frames[i]
        # torch's and Python's own frames (nn.Linear.forward …) are noise in the user's chain;
        # other libraries (transformers …) stay, as in the pipeline's other findings.
        if i == primary_index or locations.is_library_file(frame.file):
            continue
        role = "inside" if i > primary_index else "called from"
        owner = owners.get(i)
        func = f"{owner[1].rsplit('.', 1)[-1]}.{frame.func}()" if owner else f"{frame.func}()"
        if owner and owner[0]:
            func += f" of `{owner[0]}`"
        code = f": {frame.code}" if frame.code else ""
        place.related.append(Related(file=os.path.realpath(frame.file), line=frame.line,
                                     message=f"{role} {func}{code}",
                                     column=_indent_column(frame)))
    return place


def _frame_modules(frames: list[Frame], modules: list[tuple[str, str]]) -> dict[int, tuple[str, str]]:
    """Frame index -> (module path, class) for `forward` frames: the k-th one runs the k-th
    module of nn_module_stack (non-strict capture records one forward frame per module call)."""
    forward = [i for i, f in enumerate(frames) if f.func == "forward"]
    if len(forward) != len(modules):
        return {}
    return dict(zip(forward, modules))


def _indent_column(frame: Frame) -> int:
    text = linecache.getline(frame.file, frame.line)
    return len(text) - len(text.lstrip()) + 1 if text.strip() else 1


def _child_attribute(frames: list[Frame], primary_index: int,
                     modules: list[tuple[str, str]]) -> str | None:
    """The attribute of `self` the primary frame calls on the way to the node's module.

    Non-strict capture records one `forward` frame per module call, so the k-th forward frame
    runs the k-th module of nn_module_stack; the component after that module's path is the
    child it calls (`layers.2` -> `ff` for a node of `layers.2.ff.0`).
    """
    if not modules:
        return None
    forward_count = sum(1 for f in frames[: primary_index + 1] if f.func == "forward")
    if forward_count == 0 or forward_count > len(modules):
        return None
    frame_module = modules[forward_count - 1][0]
    target = modules[-1][0]
    if target == frame_module:
        return None
    prefix = frame_module + "." if frame_module else ""
    if not target.startswith(prefix):
        return None
    return target[len(prefix):].split(".")[0]


@functools.lru_cache(maxsize=64)
def _parse_file(path: str, mtime: float) -> ast.Module | None:  # mtime: cache key only
    try:
        with open(path, encoding="utf-8") as handle:
            return ast.parse(handle.read(), filename=path)
    except (OSError, SyntaxError, ValueError, UnicodeDecodeError):
        return None


def _source_text(frame: Frame) -> str | None:
    text = linecache.getline(frame.file, frame.line)
    return text.rstrip("\n") if text else (frame.code or None)


def _expression_location(frame: Frame, child: str | None,
                         modules: list[tuple[str, str]]) -> Location:
    """Columns of the call on the line that leads to the node, else the statement's text."""
    linecache.checkcache(frame.file)  # the worker may outlive an edit of the file
    text = linecache.getline(frame.file, frame.line).rstrip("\n")
    location = Location(file=os.path.realpath(frame.file), line=frame.line)
    if not text:
        return location
    stripped = text.lstrip()
    location.column = len(text) - len(stripped) + 1
    location.end_line = frame.line
    location.end_column = len(text.rstrip()) + 1
    try:
        tree = _parse_file(frame.file, os.path.getmtime(frame.file))
    except OSError:
        tree = None
    if tree is None:
        return location
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and n.lineno == frame.line]
    if not calls:
        return location
    components = {part for path, _ in modules for part in path.split(".") if part}
    chosen = (_call_on_self(calls, {child} if child else set())
              or _call_on_self(calls, components)
              or min(calls, key=lambda c: (c.col_offset, -(c.end_col_offset or 0))))
    lines = linecache.getlines(frame.file)
    location.column = _char_column(text, chosen.col_offset)
    if chosen.end_lineno is not None and chosen.end_col_offset is not None:
        end_text = lines[chosen.end_lineno - 1] if chosen.end_lineno - 1 < len(lines) else text
        location.end_line = chosen.end_lineno
        location.end_column = _char_column(end_text, chosen.end_col_offset)
    return location


def _call_on_self(calls: list[ast.Call], attributes: set[str]) -> ast.Call | None:
    """The call `self.<attr>(…)` or `self.<attr>[i](…)` with attr in `attributes` (any plain
    name as the receiver: not everyone calls it `self`; `self` wins a tie)."""
    if not attributes:
        return None
    matches = []
    for call in sorted(calls, key=lambda c: c.col_offset):
        func = call.func
        if isinstance(func, ast.Subscript):
            func = func.value
        if (isinstance(func, ast.Attribute) and func.attr in attributes
                and isinstance(func.value, ast.Name)):
            matches.append((func.value.id != "self", call))
    return min(matches, key=lambda m: m[0])[1] if matches else None


def _char_column(text: str, byte_offset: int) -> int:
    """ast's UTF-8 byte offset -> 1-based character column."""
    return len(text.encode("utf-8")[:byte_offset].decode("utf-8", errors="ignore")) + 1
