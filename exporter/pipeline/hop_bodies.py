"""Capture failures of a higher-order op's body as a whole, on the body's line.

dynamo traces the body of torch.cond, while_loop, scan and map (even in non-strict capture),
then checks it as a whole: an output that aliases an input (`return x` in a branch, a view of
an input), an input the body mutates. The error raised then has no frame in the body — stock
names the op's call. The body's line is the one of the body's node at fault (the view, the
in-place call: dynamo recorded its stack), else the body function's `return` (a body returning
its input unchanged has no node of its own). The op's call is related ("called from here").
"""

from __future__ import annotations

import ast
import linecache
from dataclasses import dataclass

from onnxlens.exporter.locations import Frame, Origin, Workspace, classify, from_stack_trace
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


def _return_line(file: str, first_line: int) -> int | None:
    """The line of the function's `return`, when it has exactly one (nested functions aside)."""
    linecache.checkcache(file)
    text = "".join(linecache.getlines(file))
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    for node in ast.walk(tree):
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
