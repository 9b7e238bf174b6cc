"""What each source line became in ONNX, for hover and code lens.

The exporter writes every ONNX node's origin into its `metadata_props` (the FX node's stack trace
and module scopes) and keeps them through optimization, so the final model alone says which line
produced which nodes.
"""

from __future__ import annotations

import ast
import os
from typing import Any

import onnx_ir as ir

from onnxlens.exporter.locations import Workspace, frames_from_stack_trace
from onnxlens.exporter.types import LineInfo

STACK_TRACE = "pkg.torch.onnx.stack_trace"
NAME_SCOPES = "pkg.torch.onnx.name_scopes"


def line_infos(model: ir.Model, workspace: Workspace) -> list[LineInfo]:
    by_line: dict[tuple[str, int], LineInfo] = {}
    for node in ir.traversal.RecursiveGraphIterator(model.graph):
        frames = frames_from_stack_trace(node.metadata_props.get(STACK_TRACE))
        frame = next((f for f in reversed(frames) if workspace.contains(f.file)), None)
        if frame is None:
            continue
        key = (os.path.realpath(frame.file), frame.line)
        info = by_line.get(key)
        if info is None:
            info = by_line[key] = LineInfo(file=key[0], line=key[1])
        info.ops[node.op_type] = info.ops.get(node.op_type, 0) + 1
        module = _module_path(node.metadata_props.get(NAME_SCOPES))
        if module and module not in info.modules:
            info.modules.append(module)
        for value in node.outputs:
            text = describe_value(value)
            if text and text not in info.outputs and len(info.outputs) < 16:
                info.outputs.append(text)
    return sorted(by_line.values(), key=lambda info: (info.file, info.line))


def _module_path(scopes: str | None) -> str | None:
    """name_scopes is repr([module path..., node name]); the innermost module is the one before last."""
    if not scopes:
        return None
    try:
        values = ast.literal_eval(scopes)
    except (ValueError, SyntaxError):
        return None
    paths = [v for v in values[:-1] if v]
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
