"""The scan stage: every operator without an ONNX translation, before translating.

The stock exporter dispatches node by node while it builds the graph and stops at the first op
it cannot translate. Dispatching is cheap (~0.1 ms a node), so we dispatch every call_function
node of the decomposed program, subgraphs of torch.cond / while_loop / scan included, with the
same `_dispatching.dispatch` and registry the translation will use, and report them all.
"""

from __future__ import annotations

import contextlib
import operator
import os
from dataclasses import dataclass
from typing import Any, Iterator

import torch
from torch.onnx._internal.exporter import _core, _dispatching

from onnxlens.exporter.locations import (Frame, Workspace, call_names_for_op, frames_from_stack_trace,
                                          locate, source_line)
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
                                       frames=frames_from_stack_trace(node.meta.get("stack_trace")),
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
        message = (f"no ONNX translation for {', '.join(names)}"
                   f" ({group[0].reason.rstrip('.')}); register one with custom-translations")
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


@contextlib.contextmanager
def stack_traces_through(files: list[str]) -> Iterator[None]:
    """Make non-strict capture keep frames of every function in `files`, not only `forward`.

    Non-strict tracing records only frames of functions named `forward` (and registered
    "anchors"), so an op called in a helper function is blamed on forward's call of the helper.
    Registering every code object of the workspace files as an anchor keeps the helper frames.
    Only used to locate problems: the default export runs without it, so that its ONNX metadata
    (which holds the stack traces) stays byte-identical to the public API's.
    """
    from torch.fx import proxy

    anchors = getattr(proxy, "_STACK_TRACE_ANCHORS", None)
    if anchors is None:  # older torch: helper frames stay lost, forward's line is still right
        yield
        return
    added = set()
    for file in files:
        try:
            with open(file, encoding="utf-8") as handle:
                code = compile(handle.read(), file, "exec", dont_inherit=True)
        except (OSError, SyntaxError, ValueError):
            continue
        for item in _code_objects(code):
            # Frames name the file as it was imported; register the resolved path too.
            for name in {file, os.path.realpath(file)}:
                if (name, item.co_name) not in anchors:
                    added.add((name, item.co_name))
    anchors.update(added)
    try:
        yield
    finally:
        anchors.difference_update(added)


def _code_objects(code) -> Iterator[Any]:
    yield code
    for const in code.co_consts:
        if hasattr(const, "co_consts"):
            yield from _code_objects(const)
