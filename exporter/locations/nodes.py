"""An FX node's place, told apart by module path: for verification mismatches.

torch.export records, per FX node, `meta["stack_trace"]` and `meta["nn_module_stack"]`
({key: (module path, class)}, outermost first). Identical lines in a loop over layers are one
source line; the module path (`layers.2.ff.0`) says which layer. So a mismatch's place names the
modules: the primary's columns are the call of the child module on the way to the node's module
(`self.ff(...)` rather than the whole line), and related frames say which module's `forward` they
are. Otherwise the one builder (place.py) decides, as for every finding: the primary is the
innermost frame of the workspace, and without one there is none (the caller puts the finding at
the model's definition; the library frames are still the related chain).

The trace read is the full one (`node_trace`): the stock `stack_trace` lacks the helper
functions, the user's and the libraries', that capture kept aside (pipeline/tracing/stacks.py).

Torch-free on purpose (plain text and ast): it works on the metadata only.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from onnxlens.exporter.locations.columns import Span, module_call_span
from onnxlens.exporter.locations.files import Workspace, is_tracing_machinery
from onnxlens.exporter.locations.frames import Frame, from_stack_trace
from onnxlens.exporter.locations.place import Place, locate

# Where capture's full trace (helper frames included) is kept when the stock `stack_trace` must
# stay as torch recorded it (byte identity of the ONNX metadata; pipeline/tracing/stacks.py).
FULL_TRACE = "onnxlens_stack_trace"

# The root's own prefixes: strict capture's `L['self']`, and the wrapper non-strict capture
# traces through (`_export_root`, in the module stacks of nodes still being traced: torch strips it
# once the trace is done; traced_ops.py reads them before).
_ROOT_PREFIX = re.compile(r"^L\['self'\]\.?|^L__self__\.?|^_export_root\.?")


@functools.lru_cache(maxsize=8192)
def normalize_module_path(path: str) -> str:
    """`L['self'].layers[2].ff[0]` (strict capture), `_export_root.layers.2.ff.0` (non-strict
    capture, while tracing) -> `layers.2.ff.0` (the captured program's spelling)."""
    path = re.sub(r"getattr\((.*?), '([^']+)'\)", r"\1.\2", path)
    path = _ROOT_PREFIX.sub("", path)
    path = re.sub(r"\[(\d+)\]", r".\1", path)
    path = re.sub(r"\['([^']+)'\]", r".\1", path)
    return path.strip(".")


def module_stack(meta: dict[str, Any]) -> list[tuple[str, str]]:
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


def node_trace(meta: dict[str, Any]) -> str | None:
    """An FX node's stack trace with every helper frame capture kept, else the stock one."""
    return meta.get(FULL_TRACE) or meta.get("stack_trace")


def locate_node(meta: dict[str, Any], workspace: Workspace | None) -> Place:
    """The user's line (and the chain around it) for one FX node's metadata."""
    frames = [f for f in from_stack_trace(node_trace(meta)) if not is_tracing_machinery(f.file, workspace)]
    modules = module_stack(meta)
    owners = _frame_modules(frames, modules)
    components = {part for path, _ in modules for part in path.split(".") if part}

    def find_span(frame: Frame, text: str) -> Span | None:
        primary = next(index for index, other in enumerate(frames) if other is frame)
        child = _child_attribute(frames, primary, modules)
        return module_call_span(frame.file, frame.line, text, [{child} if child else set(), components])

    def describe(index: int, frame: Frame, outer: bool) -> str:
        owner = owners.get(index)
        func = f"{owner[1].rsplit('.', 1)[-1]}.{frame.func}()" if owner else f"{frame.func}()"
        if owner and owner[0]:
            func += f" of `{owner[0]}`"
        code = f": {frame.code}" if frame.code else ""
        return f"{'called from' if outer else 'inside'} {func}{code}"

    place = locate(frames, workspace, find_span=find_span, describe=describe)
    if modules:
        place.module_path, place.module_class = modules[-1]
    return place


def _frame_modules(frames: list[Frame], modules: list[tuple[str, str]]) -> dict[int, tuple[str, str]]:
    """Frame index -> (module path, class) for `forward` frames: the k-th one runs the k-th
    module of nn_module_stack (non-strict capture records one forward frame per module call)."""
    forward = [i for i, f in enumerate(frames) if f.func == "forward"]
    if len(forward) != len(modules):
        return {}
    return dict(zip(forward, modules))


def running_module(frames: list[Frame], index: int, modules: list[tuple[str, str]]) -> str | None:
    """The path of the module whose `forward` runs frame `index` (a helper function's frame:
    the forward that called it): non-strict capture records one `forward` frame per module
    call, so the k-th forward frame runs the k-th module of nn_module_stack. None when the
    frames and the stack do not pair up."""
    forward_count = sum(1 for f in frames[: index + 1] if f.func == "forward")
    if forward_count == 0 or forward_count > len(modules):
        return None
    return modules[forward_count - 1][0]


def _child_attribute(frames: list[Frame], primary: int, modules: list[tuple[str, str]]) -> str | None:
    """The attribute of `self` the primary frame calls on the way to the node's module.

    Non-strict capture records one `forward` frame per module call, so the k-th forward frame
    runs the k-th module of nn_module_stack; the component after that module's path is the
    child it calls (`layers.2` -> `ff` for a node of `layers.2.ff.0`).
    """
    frame_module = running_module(frames, primary, modules)
    if frame_module is None:
        return None
    target = modules[-1][0]
    if target == frame_module:
        return None
    prefix = frame_module + "." if frame_module else ""
    if not target.startswith(prefix):
        return None
    return target[len(prefix):].split(".")[0]
