"""Capture failures of a higher-order op's body as a whole, on the body's line.

dynamo traces the body of torch.cond, while_loop, scan and map (even in non-strict capture),
then checks it as a whole: an output that aliases an input (`return x` in a branch, a view of
an input), an input the body mutates. The error raised then has no frame in the body — stock
names the op's call. The body's line is the one of the body's node at fault (the view, the
in-place call: dynamo recorded its stack), else the body function's `return` (a body returning
its input unchanged has no node of its own). The op's call is related ("called from here").

Past capture, the decomposition checks a `scan` body's outputs again (functionalization: "scan
might be aliasing the input or the output"), naming the op's node only: `body_return` finds
the body function's `return` from the body graph's own nodes.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any

from onnxlens.exporter.locations import Frame, Origin, Workspace, classify, from_stack_trace
from onnxlens.exporter.locations.syntax import enclosing_function, parsed
from onnxlens.exporter.torch_internals.active import internals


@dataclass
class BodyFailure:
    """Where a body's failure is, and how to say it."""

    frames: list[Frame]  # the chain, outermost first: to the op's call, then into the body
    note: str  # "in `true_fn`, a body of the higher-order op `cond`: it returns one of its inputs ..."


def body_failure(error: BaseException, chain: list[Frame], workspace: Workspace) -> BodyFailure | None:
    """The body behind a capture error, when dynamo rejected a traced body as a whole; `chain`
    is the error's own call chain (it ends at the op's call)."""
    try:
        failure = internals.hop_body_failure(error)
    except Exception:  # noqa: BLE001 - an optional piece: the error's own frames then place it
        return None
    if failure is None:
        return None
    visible = [frame for frame in chain if classify(frame.file, workspace) is not Origin.INTERNAL]
    call = (visible[-1].file, visible[-1].line) if visible else None
    inner = _body_frames(failure, call, workspace)
    if not inner:
        return None
    what = ("it changes one of its inputs in place" if failure.problem == "input mutation"
            else "it returns one of its inputs, or a view of one")
    return BodyFailure(chain + inner, f"in `{inner[-1].func}`, a body of the higher-order op `{failure.op}`: {what}")


def _body_frames(failure: object, call: tuple[str, int] | None, workspace: Workspace) -> list[Frame]:
    """The body's frames, after the op's call: those of the first node at fault whose trace goes
    past the call (an input's trace ends there; dynamo's traces start at the call in strict
    capture, inside the body in non-strict), else the body function's `return`."""
    for trace in failure.node_traces:
        frames = from_stack_trace(trace)
        visible = [index for index, frame in enumerate(frames) if classify(frame.file, workspace) is not Origin.INTERNAL]
        if not visible or (frames[visible[-1]].file, frames[visible[-1]].line) == call:
            continue
        at_call = [index for index in visible if (frames[index].file, frames[index].line) == call]
        return frames[at_call[-1] + 1:] if at_call else frames
    for file, first_line, name in failure.functions:
        if classify(file, workspace) is not Origin.INTERNAL:  # not torch's own wrapper around the body
            return [Frame(file, _return_line(file, first_line) or first_line, name)]
    return []


def body_return(node: Any, workspace: Workspace) -> Frame | None:
    """The `return` of the body function of a higher-order op node (`scan`, `cond`, ...) of a
    captured program, for a failure about the body as a whole that comes after capture (the
    decomposition's functionalization of `scan` finds the body's outputs aliasing: `return
    [carry, carry]`): the function that holds the line the body's nodes were traced from, when
    it has one `return`. None when no body node names a line outside torch past the op's call."""
    import torch

    call = [frame for frame in from_stack_trace(node.meta.get("stack_trace"))
            if classify(frame.file, workspace) is not Origin.INTERNAL]
    at_call = (call[-1].file, call[-1].line) if call else None
    owner = node.graph.owning_module
    for argument in node.args:
        body = getattr(owner, argument.target, None) if isinstance(argument, torch.fx.Node) and (
            argument.op == "get_attr") else None
        if not isinstance(body, torch.fx.GraphModule):
            continue
        for body_node in body.graph.nodes:
            frames = [frame for frame in from_stack_trace(body_node.meta.get("stack_trace"))
                      if classify(frame.file, workspace) is not Origin.INTERNAL]
            if not frames or (frames[-1].file, frames[-1].line) == at_call:
                continue
            inner = frames[-1]
            line = _enclosing_return_line(inner.file, inner.line)
            if line is not None:
                return Frame(inner.file, line, inner.func)
    return None


def _enclosing_return_line(file: str, line: int) -> int | None:
    """The `return` of the innermost function around `line`, when it has exactly one."""
    tree = parsed(file)
    innermost = enclosing_function(tree, line) if tree is not None else None
    if innermost is None:
        return None
    returns = [child.lineno for child in _own_nodes(innermost) if isinstance(child, ast.Return)]
    return returns[0] if len(returns) == 1 else None


def _return_line(file: str, first_line: int) -> int | None:
    """The line of the function's `return`, when it has exactly one (nested functions aside)."""
    tree = parsed(file)
    for node in ast.walk(tree) if tree is not None else ():
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and first_line in (
                node.lineno, *(decorator.lineno for decorator in node.decorator_list)):
            returns = [child.lineno for child in _own_nodes(node) if isinstance(child, ast.Return)]
            return returns[0] if len(returns) == 1 else None
    return None


def _own_nodes(function: ast.AST) -> list[ast.AST]:
    """The nodes of a function's body, without those of functions and lambdas defined in it."""
    found, pending = [], list(ast.iter_child_nodes(function))
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        found.append(node)
        pending.extend(ast.iter_child_nodes(node))
    return found
