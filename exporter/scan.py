"""The scan stage: every operator without an ONNX translation, before translating.

The stock exporter dispatches node by node while it builds the graph and stops at the first op
it cannot translate. Dispatching is cheap (~0.1 ms a node), so we dispatch every call_function
node of the decomposed program, subgraphs of torch.cond / while_loop / scan included, with the
same `_dispatching.dispatch` and registry the translation will use, and report them all.
"""

from __future__ import annotations

import operator
import os
from dataclasses import dataclass
from typing import Any, Iterator

import torch
from torch.onnx._internal.exporter import _core, _dispatching

from onnxlens.exporter.locations import (Frame, Workspace, call_names_for_op, frames_from_stack_trace,
                                          locate, source_line)
from onnxlens.exporter.stacks import full_stack_trace
from onnxlens.exporter.types import Finding, Location

ONNX_DOCS_URL = "https://pytorch.org/docs/stable/onnx_dynamo.html"


@dataclass
class UnsupportedOp:
    op: str  # e.g. "aten.linalg_eig.default"
    reason: str
    frames: list[Frame]  # outermost first
    torch_fn: str | None  # e.g. "builtin_function_or_method.linalg_eigvals"
    module_path: str | None


def graph_modules(program: Any) -> Iterator[torch.fx.GraphModule]:
    for module in program.graph_module.modules():
        if isinstance(module, torch.fx.GraphModule):
            yield module


def unsupported_ops(program: Any, registry: Any) -> list[UnsupportedOp]:
    found = []
    for module in graph_modules(program):
        for node in module.graph.nodes:
            if node.op != "call_function" or node.target is operator.getitem:
                continue
            if _core._is_onnx_op(node.target):
                continue
            function, reason = _dispatching.dispatch(node, registry)
            if function is not None:
                continue
            torch_fn = node.meta.get("torch_fn")
            stack = node.meta.get("nn_module_stack") or {}
            module_path = list(stack.values())[-1][0] if stack else None
            found.append(UnsupportedOp(op=_op_name(node.target), reason=reason,
                                       frames=frames_from_stack_trace(full_stack_trace(node)),
                                       torch_fn=torch_fn[1] if isinstance(torch_fn, tuple) else None,
                                       module_path=module_path))
    return found


def _op_name(target: Any) -> str:
    if isinstance(target, torch._ops.OpOverload):
        return f"{target.namespace}.{target._opname}.{target._overloadname}"
    return getattr(target, "__qualname__", None) or str(target)


def findings_for(ops: list[UnsupportedOp], workspace: Workspace, fallback: Location | None) -> list[Finding]:
    """One finding per source location, naming every op that lacks a translation there."""
    grouped: dict[tuple, list[UnsupportedOp]] = {}
    for op in ops:
        innermost = next((f for f in reversed(op.frames) if workspace.contains(f.file)), None)
        key = (os.path.realpath(innermost.file), innermost.line) if innermost else ("", 0)
        grouped.setdefault(key, []).append(op)
    findings = []
    for key, group in grouped.items():
        names = list(dict.fromkeys(op.op for op in group))
        call_names = [name for op in group for name in call_names_for_op(op.torch_fn, op.op)]
        location, related, text = locate(group[0].frames, workspace, call_names=call_names)
        callee = _callee(text, location)
        message = f"no ONNX translation for {', '.join(names)}"
        if callee:
            message += f" (from {callee})"
        if "complex" in group[0].reason:
            message += " for complex-valued inputs"
        message += "; give one in the target's custom-translations table, or avoid the op"
        if location is None and fallback is not None:
            location = Location(**fallback.to_dict())
            text = source_line(location.file, location.line)
            message += "\n(the op has no source line in your code: shown at the model's definition)"
        module_paths = sorted({op.module_path for op in group if op.module_path})
        if module_paths:
            message += f" [module: {', '.join(module_paths)}]"
        findings.append(Finding(code="unsupported-op", stage="scan", location=location, related=related,
                                source_line=text, docs_url=ONNX_DOCS_URL, message=message))
    return findings


def deepest_frames(ops: list[UnsupportedOp], candidates: list[list[UnsupportedOp]],
                   workspace: Workspace) -> list[UnsupportedOp]:
    """For each op, the call chain with the most user frames among other captures of the model.

    The n-th occurrence of an op in one capture is matched with the n-th occurrence of the same op
    in another; a capture that found a different number of occurrences is not used for that op.
    """
    def occurrences(found: list[UnsupportedOp]) -> dict[str, list[UnsupportedOp]]:
        by_op: dict[str, list[UnsupportedOp]] = {}
        for op in found:
            by_op.setdefault(op.op, []).append(op)
        return by_op

    def depth(op: UnsupportedOp) -> int:
        return sum(1 for frame in op.frames if workspace.contains(frame.file))

    ours = occurrences(ops)
    others = [occurrences(found) for found in candidates]
    located = []
    for name, group in ours.items():
        for index, op in enumerate(group):
            best = op
            for other in others:
                matches = other.get(name, [])
                if len(matches) == len(group) and depth(matches[index]) > depth(best):
                    best = UnsupportedOp(op=op.op, reason=op.reason, frames=matches[index].frames,
                                         torch_fn=op.torch_fn or matches[index].torch_fn,
                                         module_path=op.module_path)
            located.append(best)
    return located


def _callee(text: str | None, location: Location | None) -> str | None:
    """`torch.linalg.eigvals` when the location's column range covers `torch.linalg.eigvals(h)`."""
    if not text or location is None or not location.end_column or location.end_line != location.line:
        return None
    span = text[location.column - 1:location.end_column - 1]
    name = span.split("(", 1)[0].strip()
    return name if name and "(" in span and name.replace(".", "").replace("_", "").isalnum() else None
