"""What each source line became in ONNX, for hover and code lens.

The exporter writes every ONNX node's origin into its `metadata_props` (the FX node's stack trace
and module scopes) and keeps them through optimization, so the final model alone says which line
produced which nodes. A line is the innermost line of the user's code in a node's trace (the one
rule of exporter/locations, as for findings).
"""

from __future__ import annotations

import ast
import os
from typing import Any

import onnx_ir as ir

from onnxlens.exporter.locations import Workspace, from_stack_trace, primary_frame
from onnxlens.exporter.types import LineInfo

STACK_TRACE = "pkg.torch.onnx.stack_trace"
NAME_SCOPES = "pkg.torch.onnx.name_scopes"


def line_infos(model: ir.Model, workspace: Workspace, full_traces: dict[str, str] | None = None) -> list[LineInfo]:
    """`full_traces`: FX node name -> stack trace with helper frames (stacks.py), when known."""
    by_line: dict[tuple[str, int], LineInfo] = {}
    full_traces = full_traces or {}
    # The nodes one FX node became share its metadata: each text is parsed once (a 7B Llama has
    # 5,000 ONNX nodes from 1,600 FX nodes).
    scopes_of: dict[str | None, list[str]] = {}
    line_of: dict[str | None, tuple[str, int] | None] = {}
    for node in ir.traversal.RecursiveGraphIterator(model.graph):
        scopes_text = node.metadata_props.get(NAME_SCOPES)
        scopes = scopes_of.get(scopes_text)
        if scopes is None:
            scopes = scopes_of[scopes_text] = _scopes(scopes_text)
        trace = (full_traces.get(scopes[-1]) if scopes else None) or node.metadata_props.get(STACK_TRACE)
        if trace not in line_of:
            frame = primary_frame(from_stack_trace(trace), workspace)
            line_of[trace] = (os.path.realpath(frame.file), frame.line) if frame is not None else None
        key = line_of[trace]
        if key is None:
            continue
        info = by_line.get(key)
        if info is None:
            info = by_line[key] = LineInfo(file=key[0], line=key[1])
        info.ops[node.op_type] = info.ops.get(node.op_type, 0) + 1
        module = _module_path(scopes)
        if module and module not in info.modules:
            info.modules.append(module)
        for value in node.outputs:
            text = describe_value(value)
            if text and text not in info.outputs and len(info.outputs) < 16:
                info.outputs.append(text)
    return sorted(by_line.values(), key=lambda info: (info.file, info.line))


def _scopes(text: str | None) -> list[str]:
    """name_scopes is repr([module path..., FX node name])."""
    if not text:
        return []
    try:
        values = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return []
    return [str(v) for v in values] if isinstance(values, list) else []


def _module_path(scopes: list[str]) -> str | None:
    """The innermost module's path: the scope before the node name."""
    paths = [v for v in scopes[:-1] if v]
    return paths[-1] if paths else None


def describe_value(value: Any) -> str | None:
    """'float32[batch, 16, 256]' for a tensor value with known type and shape."""
    dtype = value.dtype
    if dtype is None:
        return None
    try:
        name = dtype.numpy().name
    except Exception:  # noqa: BLE001 - types numpy lacks (bfloat16, float8) keep ONNX's name
        name = dtype.name.lower()
    shape = value.shape
    if shape is None:
        return f"{name}[?]"
    dims = [str(dim) if isinstance(dim, int) else (getattr(dim, "value", None) or "?") for dim in shape]
    return f"{name}[{', '.join(str(d) for d in dims)}]"
