"""Capture failures of a higher-order op's body as a whole, on the body's line.

dynamo traces the body of torch.cond, while_loop, scan and map (even in non-strict capture),
then checks it as a whole: an output that aliases an input (`return x` in a branch, a view of
an input), two outputs that share one tensor, an input the body mutates. The error raised then
has no frame in the body — stock names the op's call. The body's line is the one of the body's
node at fault (the view, the in-place call: dynamo recorded its stack), else the body function's
`return` (a body returning its input unchanged has no node of its own). Two outputs sharing a
tensor are the `return`'s doing (`return (x, positions[0], positions[1])`, two views of one
nonzero result): the `return`, the line that made the shared tensor related. The op's call is
related ("called from here").

torch's code for an op also reads the traced body's outputs itself (non-strict scan: its carries,
then its outputs); when the check that raised had the body's output value in hand (`len()` of a
body that returned a bare tensor), the body's `return` is the culprit, not the call. Errors about
the call's operands never have that value in hand: they stay on the call.

Past the first failure (past_first.py): dynamo stops at the first body it refuses (a cond's true
branch hides its false branch), so after a failed capture `bodies_past_first` captures once more
with dynamo's body check letting each refusal through, and every body it refuses is a finding;
and torch's next check of a body's outputs, run as the op would once the body returns what it
must (scan: each carry against its init), adds the line that made the carry it refuses.

Past capture, the decomposition checks a `scan` body's outputs again (functionalization: "scan
might be aliasing the input or the output"), naming the op's node only: `body_return` finds
the body function's `return` from the body graph's own nodes.
"""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass, field
from typing import Any, Callable

from onnxlens.exporter.locations import Frame, Origin, Workspace, classify, from_stack_trace
from onnxlens.exporter.locations.syntax import enclosing_function, parsed
from onnxlens.exporter.pipeline.failures.past_first import FurtherProblem
from onnxlens.exporter.torch_internals.active import internals
from onnxlens.exporter.types import Related

CHECKED_PAST = "by dynamo's check of every higher-order op body (torch stops at the first body it refuses)"


@dataclass
class BodyFailure:
    """Where a body's failure is, and how to say it."""

    frames: list[Frame]  # the chain, outermost first: to the op's call, then into the body
    note: str  # "in `true_fn`, a body of the higher-order op `cond`: it returns one of its inputs ..."
    related: list[Related] = field(default_factory=list)  # places that explain it, after the chain's
    further: list[FurtherProblem] = field(default_factory=list)  # what torch would refuse next in the body


def body_failure(error: BaseException, chain: list[Frame], workspace: Workspace) -> BodyFailure | None:
    """The body behind a capture error, when dynamo rejected a traced body as a whole or torch's
    code for the op could not read the body's outputs; `chain` is the error's own call chain (it
    ends at the op's call)."""
    try:
        rejected = internals.hop_body_failure(error)
        unreadable = internals.hop_body_output_failure(error) if rejected is None else None
    except Exception:  # noqa: BLE001 - an optional piece: the error's own frames then place it
        return None
    if rejected is not None:
        return _rejected(rejected, chain, workspace)
    if unreadable is not None:
        return _unreadable_outputs(unreadable, chain, workspace)
    return None


def bodies_past_first(target: Any, errors: list[tuple[str, BaseException]], workspace: Workspace,
                      chain_of: Callable[[BaseException, Workspace], list[Frame]],
                      log: Callable[[str], None]) -> list[FurtherProblem]:
    """The bodies dynamo refuses behind the first one, when strict capture (`errors`: each
    strategy's) stopped at a body it refused: a capture run again with every refusal let through
    (internals.hop_bodies_checked_past_failures), each refused body placed as the first is.
    `chain_of` gives an error's call chain (call_chains.user_frames)."""
    if not any(strategy == "strict" and _refused_body(error) for strategy, error in errors):
        return []
    try:
        refused = internals.hop_bodies_checked_past_failures("strict", target.model, target.args, target.kwargs,
                                                             target.dynamic_shapes)
    except Exception as error:  # noqa: BLE001 - a bonus: its failure is not news
        log(f"could not check the higher-order op bodies past the first: {type(error).__name__}: {error}")
        return []
    problems = []
    for error, failure in refused:
        body = _rejected(failure, chain_of(error, workspace), workspace)
        if body is not None:
            problems.append(FurtherProblem(body.note, CHECKED_PAST, body.frames, body.related))
    return problems


def _refused_body(error: BaseException) -> bool:
    try:
        return internals.hop_body_failure(error) is not None
    except Exception:  # noqa: BLE001 - unreadable: no claim
        return False


def _rejected(failure: Any, chain: list[Frame], workspace: Workspace) -> BodyFailure | None:
    """A body dynamo refused (internals.HopBodyFailure), placed."""
    call = _call(chain, workspace)
    if failure.aliasing == "output-to-output":
        returned = _function_return(failure.functions, workspace)
        if returned is not None:
            made = _made_at(failure.node_traces, call, {(returned.file, returned.line)}, workspace)
            return BodyFailure(chain + [returned], (
                f"in `{returned.func}`, a body of the higher-order op `{failure.op}`: it returns one tensor more "
                "than once, or several views of one tensor (an output must not share memory with another)"),
                [Related(file=os.path.realpath(frame.file), line=frame.line, column=frame.column or 1,
                         message="the tensor the outputs share is made here") for frame in made])
    inner = _body_frames(failure, call, workspace)
    if not inner:
        return None
    what = ("it changes one of its inputs in place" if failure.problem == "input mutation"
            else "it returns one of its inputs, or a view of one")
    return BodyFailure(chain + inner, f"in `{inner[-1].func}`, a body of the higher-order op `{failure.op}`: {what}")


def _unreadable_outputs(output: Any, chain: list[Frame], workspace: Workspace) -> BodyFailure | None:
    """A body whose outputs torch's code for the op could not read (internals.HopBodyOutput): on
    its `return`; torch's next check of them, when it refuses, a problem past this one on the
    line that made what it refuses."""
    returned = _function_return(output.functions, workspace)
    if returned is None:
        return None
    shape = ("one value, not a list or tuple" if len(output.output_traces) <= 1
             else "values torch could not read as the op's outputs")
    body = BodyFailure(chain + [returned], (
        f"in `{returned.func}`, the body of the higher-order op `{output.op}`: torch's code for the op could not "
        f"read what it returns ({shape}); `{output.op}` takes the body's outputs as a list"))
    if output.next_refusal:
        call = _call(chain, workspace)
        inner = _past_call(output.output_traces, call, workspace)
        if inner:
            refusal = " ".join(line.strip() for line in output.next_refusal.strip().splitlines()[:2])
            body.further.append(FurtherProblem(
                f"the carry `{returned.func}` returns is made here, and it does not keep its init's metadata, "
                f"which torch checks once the body returns a list: {refusal}",
                f"by torch's next check of `{output.op}`, run on the body's outputs as the op reads them", chain + inner))
    return body


def _call(chain: list[Frame], workspace: Workspace) -> tuple[str, int] | None:
    """The op's call: the innermost frame of the error's chain outside torch."""
    visible = [frame for frame in chain if classify(frame.file, workspace) is not Origin.INTERNAL]
    return (visible[-1].file, visible[-1].line) if visible else None


def _body_frames(failure: Any, call: tuple[str, int] | None, workspace: Workspace) -> list[Frame]:
    """The body's frames, after the op's call: those of the first node at fault whose trace goes
    past the call, else the body function's `return`."""
    return _past_call(failure.node_traces, call, workspace) or [
        frame for frame in [_function_return(failure.functions, workspace)] if frame is not None]


def _past_call(traces: list[str], call: tuple[str, int] | None, workspace: Workspace) -> list[Frame]:
    """The frames after the op's call of the first of `traces` that goes past it (an input's
    trace ends there; dynamo's traces start at the call in strict capture, inside the body in
    non-strict)."""
    for trace in traces:
        frames = from_stack_trace(trace)
        visible = [index for index, frame in enumerate(frames) if classify(frame.file, workspace) is not Origin.INTERNAL]
        if not visible or (frames[visible[-1]].file, frames[visible[-1]].line) == call:
            continue
        at_call = [index for index in visible if (frames[index].file, frames[index].line) == call]
        return frames[at_call[-1] + 1:] if at_call else frames
    return []


def _made_at(traces: list[str], call: tuple[str, int] | None, skip: set[tuple[str, int]],
             workspace: Workspace) -> list[Frame]:
    """The innermost line outside torch of each trace, past the op's call and not in `skip`, once each."""
    made: list[Frame] = []
    for trace in traces:
        frames = [frame for frame in from_stack_trace(trace) if classify(frame.file, workspace) is not Origin.INTERNAL]
        place = (frames[-1].file, frames[-1].line) if frames else None
        if place is None or place == call or place in skip or any((m.file, m.line) == place for m in made):
            continue
        made.append(frames[-1])
    return made


def _function_return(functions: list[tuple[str, int, str]], workspace: Workspace) -> Frame | None:
    """The `return` of the first function outside torch (not torch's own wrapper around the
    body) when it has exactly one, else its `def` line."""
    for file, first_line, name in functions:
        if classify(file, workspace) is not Origin.INTERNAL:
            return Frame(file, _return_line(file, first_line) or first_line, name)
    return None


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
