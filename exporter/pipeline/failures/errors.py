"""Findings for exceptions a stage caught: on the FX node the error is about, else on the user's
frames that raised, else at the model's definition.

Translation errors name the FX node they failed on (`Error when translating node %name :
...`); onnx.checker and shape inference name an ONNX node, whose metadata names its FX node
(onnx_nodes.py); decomposition errors name none, and failed_nodes.py finds the node from what
the traceback holds (the node an FX interpreter was running, the higher-order op whose subgraph
a pass was working on) or from the program input the error names (the node that wrote to it).
Either way the node's stack trace says which line of the model's code it came from. An
exception no stage expected (user code that raised past torch, or a bug of ours) becomes a
finding of the stage it happened in: the pipeline never raises.
"""

from __future__ import annotations

import os
import re
from typing import Any, Iterator, NoReturn

import onnxlens.exporter.verify.onnx_nodes as onnx_nodes
from onnxlens.exporter.locations import from_stack_trace, from_traceback, is_user_code, locate
from onnxlens.exporter.pipeline.failures.failed_nodes import (input_named_in, interpreted_node, layout_change, node_named_in,
                                                     subgraph_owner)
from onnxlens.exporter.pipeline.failures.hop_bodies import body_return
from onnxlens.exporter.pipeline.job import Job
from onnxlens.exporter.pipeline.tracing.stacks import full_stack_trace
from onnxlens.exporter.types import Finding, Related

# The code of a finding for an unexpected failure in each stage.
STAGE_CODES = {
    "load": "setup", "capture": "torch-export", "decompose": "decomposition", "scan": "translation",
    "translate": "translation", "optimize": "translation", "check": "onnx-checker", "verify": "translation",
    "save": "output",
}


def error_finding(job: Job, error: BaseException, code: str, context: str, node: Any = None) -> Finding:
    """A finding of the running stage for an exception: on the FX `node` it failed at when the
    caller knows it, else the FX node (or ONNX node) it names if any, else the user's frames that
    raised, else the node an FX interpreter was running, else the model's definition. User code
    that raised on the way to a named node (a custom translation, say) is a related location."""
    chain = list(exception_chain(error))
    raised_frames = [frame for item in chain for frame in from_traceback(item)]
    place = None
    onnx_node = None
    if node is None:
        onnx_node = onnx_nodes.named_node("\n".join(str(item) for item in chain),
                                          job.onnx_program.model if job.onnx_program is not None else None)
        node = onnx_nodes.fx_node(onnx_node, job.decomposed) if onnx_node is not None else None
        node = node or node_named_in(job, chain)
    if node is None and not any(is_user_code(frame.file, job.workspace) for frame in raised_frames):
        # Where the user's code raised (a fake kernel of theirs) says more than the node does.
        node = interpreted_node(chain) or subgraph_owner(chain) or input_named_in(job, chain)
    if node is not None or onnx_node is not None:
        place = onnx_nodes.place(onnx_node, node, job.workspace)
        body = body_return(node, job.workspace) if node is not None and _about_aliasing(chain) else None
        if body is not None:  # the body's outputs as a whole: its `return`, the op's call related
            place = locate(from_stack_trace(full_stack_trace(node)) + [body], job.workspace)
        innermost = next((f for f in reversed(raised_frames) if is_user_code(f.file, job.workspace)), None)
        if innermost is not None:
            place.related.insert(0, Related(file=os.path.realpath(innermost.file), line=innermost.line,
                                            message="raised here", column=innermost.column or 1))
        origin = _layout_origin(job, chain, node)
        if origin is not None:
            place.related.insert(1 if place.related else 0, origin)
    if place is None or place.location is None:
        # No line of the user's code on the node's chain: where the user's code raised, if it
        # did (a custom translation); else the node's library frames still say where it was.
        raised = locate(raised_frames, job.workspace)
        if place is None or raised.location is not None:
            place = raised
    root = chain[-1]
    text = onnx_nodes.with_type_names(_without_fx_context(str(root)) if node is not None else str(root))
    where = [onnx_nodes.describe(onnx_node)] if onnx_node is not None else []
    if node is not None:
        where.append(("from " if where else "") + onnx_nodes.describe_fx(node))
    message = f"{context}{' at ' + ', '.join(where) if where else ''}: {type(root).__name__}: {_short(text)}"
    if root is not error:
        message += f"\n({type(error).__name__}: {_short(first_line(str(error)), 400)})"
    if place.at_fallback(job.fallback):
        message += "\n(no line of your code is on the failing call chain: shown at the model's definition)"
    return Finding(code=code, stage=job.stage, location=place.location, related=place.related,
                   source_line=place.source_line, message=message)


def _layout_origin(job: Job, chain: list[BaseException], node: Any) -> Related | None:
    """Where the layout the failing node could not work with comes from (failed_nodes.layout_change):
    the innermost line outside torch of the op whose output's strides changed since the graph
    was built."""
    change = layout_change(chain)
    if change is None or change.node is node:
        return None
    origin = onnx_nodes.place(None, change.node, job.workspace)
    where = origin.location or (origin.related[0] if origin.related else None)
    if where is None:
        return None
    now = f", {change.now} in this pass" if change.now is not None else ""
    return Related(file=where.file, line=where.line, column=where.column or 1, message=(
        f"the failing op's input comes from {change.node.target} here, whose output this pass lays out otherwise "
        f"than the graph recorded (strides {change.built} recorded{now}): the failing op was made for the "
        "recorded layout"))


def internal_finding(job: Job, error: BaseException) -> Finding:
    """An exception no stage expected: user code that raised past torch (sys.exit in forward,
    say), or a bug of ours. Either way a finding of the stage, never a traceback."""
    code = STAGE_CODES.get(job.stage, "translation")
    if any(is_user_code(frame.file, job.workspace) for frame in from_traceback(error)):
        context = f"your code raised during the {job.stage} stage"
    else:
        context = f"onnxlens failed in the {job.stage} stage (please report this)"
    return error_finding(job, error, code, context)


def fail_on(job: Job, error: BaseException, code: str, context: str) -> NoReturn:
    """End the pipeline with the finding of an exception the running stage caught."""
    job.error = error
    job.fail([error_finding(job, error, code, context)])


def _about_aliasing(chain: list[BaseException]) -> bool:
    """torch's checks of a higher-order op's body outputs word their failure so ("scan might be
    aliasing the input or the output", "Output-to-output aliasing detected")."""
    return any("aliasing" in str(item) for item in chain)


# torch appends the node and its stack trace to errors raised while interpreting a graph: the
# finding says the same with the node's place, so that part is left out of the message.
_FX_CONTEXT = re.compile(r"\n\s*While executing %.*", re.DOTALL)


def _without_fx_context(text: str) -> str:
    return _FX_CONTEXT.sub("", text)


def exception_chain(error: BaseException) -> Iterator[BaseException]:
    """The exception, then what caused it (`raise ... from`, or raised while handling), in turn."""
    seen = set()
    item: BaseException | None = error
    while item is not None and id(item) not in seen:
        seen.add(id(item))
        yield item
        item = item.__cause__ or item.__context__


def first_line(text: str) -> str:
    return next((line.strip() for line in text.strip().splitlines() if line.strip()), "")


def headline(error: BaseException) -> str:
    """The exception's type and the first line of its message."""
    return f"{type(error).__name__}: {first_line(str(error))}"


def _short(text: str, limit: int = 2000) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[:limit] + " …"
