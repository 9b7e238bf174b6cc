"""Frames in the code torch.fx generates, traced back to the lines that code came from.

Decomposition runs the captured program again, and the body of a `torch.no_grad()` or
`torch.autocast` block (or of a forward under `@torch.no_grad()`), a higher-order op in the
captured program, runs as its graph module's generated Python: every node traced there records
the frame `File "<eval_with_key>.N", line L, in forward` and that line's code (`mul_15 =
torch.ops.aten.mul.Tensor(to, sub_10);  to = sub_10 = None`), and no line of the model's
source. Its findings would fall back to the model's definition, and hover and lens would not
know the line. The line the code came from is known: the generated line assigns one node of the
captured program (`mul_15`, in the body's graph), and capture recorded that node's own stack.

So after decomposition each node whose trace ends in generated code gets, as its full trace
(`FULL_TRACE`, stacks.py), the trace of the captured node its generated line assigns: the node of
that name whose graph's code has that very line (none or several: the trace stays as it is).
Of the frames before the generated one, generated ones go and the others stay unless the captured
node's trace has them; a captured node's own trace in generated code (a body in a body) is traced
back the same way. A torch.cond branch's nodes name code dynamo generated while capturing, which
no captured graph has: they stay as they are (untranslatable/missing_translations.py finds their
line by capturing again).

Only our own metadata changes: the `stack_trace` that reaches the .onnx stays torch's.
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Any

from onnxlens.exporter.locations import FULL_TRACE, Frame, from_stack_trace, node_trace
from onnxlens.exporter.pipeline.tracing.stacks import frame_chunks, graph_modules

# How torch.fx names the code it generates (`<eval_with_key>.N`): the file of its frames and its
# linecache entries.
GENERATED_FILE = "<eval_with_key>"
_ASSIGNED = re.compile(r"^\s*(?P<name>[A-Za-z_]\w*)\s*=(?!=)")
# A body inside a body inside a body is as deep as real models go; the bound keeps a malformed
# graph from looping.
_MOST_NESTED = 8


def trace_generated_code(decomposed: Any, captured: Any) -> None:
    """Give each node of `decomposed` whose trace runs through generated code the trace of the
    captured node behind it (module docstring)."""
    sources = None  # made at the first trace that needs it: most models have none
    for module in graph_modules(decomposed):
        for node in module.graph.nodes:
            trace = node_trace(node.meta)
            if trace and GENERATED_FILE in trace:
                sources = sources or _CapturedNodes(captured)
                resolved = sources.traced_back(trace)
                if resolved != trace:
                    node.meta[FULL_TRACE] = resolved


class _CapturedNodes:
    """The captured program's nodes by name, and each graph's generated lines (made on demand)."""

    def __init__(self, captured: Any) -> None:
        self._by_name: dict[str, list[tuple[Any, Any]]] = defaultdict(list)
        for module in graph_modules(captured):
            for node in module.graph.nodes:
                self._by_name[node.name].append((module, node))
        self._lines: dict[int, set[str]] = {}
        self._traced: dict[str, str] = {}

    def traced_back(self, trace: str, depth: int = 0) -> str:
        """`trace` with its innermost generated frame replaced by the captured node's trace."""
        # The nodes a decomposition makes of one op share its trace: each text is traced once.
        resolved = self._traced.get(trace)
        if resolved is None:
            resolved = self._traced[trace] = self._trace_back(trace, depth)
        return resolved

    def _trace_back(self, trace: str, depth: int) -> str:
        chunks = frame_chunks(trace)
        frames = [_frame(chunk) for chunk in chunks]
        generated = [index for index, frame in enumerate(frames) if frame is not None and is_generated(frame)]
        if not generated or depth >= _MOST_NESTED:
            return trace
        innermost = generated[-1]
        source = self._assigned_by(frames[innermost].code)
        source_trace = node_trace(source.meta) if source is not None else None
        if not source_trace:
            return trace
        inner = frame_chunks(self.traced_back(source_trace, depth + 1))
        inner_frames = {_where(frame) for frame in map(_frame, inner) if frame is not None}
        outer = [chunk for chunk, frame in zip(chunks[:innermost], frames)
                 if frame is not None and not is_generated(frame) and _where(frame) not in inner_frames]
        return "".join(outer + inner + chunks[innermost + 1:]).strip()

    def _assigned_by(self, code: str | None) -> Any:
        """The captured node a generated line assigns, when exactly one graph has that line."""
        match = _ASSIGNED.match(code or "")
        if match is None:
            return None
        found = [node for module, node in self._by_name.get(match["name"], ()) if code.strip() in self._code_lines(module)]
        return found[0] if len(found) == 1 else None

    def _code_lines(self, module: Any) -> set[str]:
        # graph.python_code makes the text alone: unlike GraphModule.code it compiles nothing and
        # takes no `<eval_with_key>` number (those names reach the .onnx).
        lines = self._lines.get(id(module))
        if lines is None:
            lines = {line.strip() for line in module.graph.python_code(root_module="self").src.splitlines()}
            self._lines[id(module)] = lines
        return lines


def _frame(chunk: str) -> Frame | None:
    """The frame a chunk of frame_chunks holds (None: the text before the first frame)."""
    frames = from_stack_trace(chunk)
    return frames[0] if frames else None


def is_generated(frame: Frame) -> bool:
    """A frame in code torch.fx generated."""
    return frame.file.startswith(GENERATED_FILE)


def _where(frame: Frame) -> tuple[str, int, str]:
    return frame.file, frame.line, frame.func
