"""Findings for exceptions a stage caught: on the FX node the error names, else on the user's
frames that raised, else at the model's definition.

Decomposition, translation and onnx.checker errors often name the FX node they failed on
(`Error when translating node %name : ...`, ONNX node names taken from FX names): the node's
stack trace then says which line of the user's code it came from. An exception no stage
expected (user code that raised past torch, or a bug of ours) becomes a finding of the stage it
happened in: the pipeline never raises.
"""

from __future__ import annotations

import itertools
import os
import re
from typing import Any, Iterator, NoReturn

from onnxlens.exporter.locations import from_stack_trace, from_traceback, is_user_code, locate
from onnxlens.exporter.pipeline.job import Job
from onnxlens.exporter.pipeline.stacks import full_stack_trace, graph_modules
from onnxlens.exporter.types import Finding, Related

# The code of a finding for an unexpected failure in each stage.
STAGE_CODES = {
    "load": "setup", "capture": "torch-export", "decompose": "decomposition", "scan": "translation",
    "translate": "translation", "check": "onnx-checker", "verify": "translation", "save": "translation",
}


def error_finding(job: Job, error: BaseException, code: str, context: str) -> Finding:
    """A finding of the running stage for an exception: on the FX node it names if any, else the
    user's frames, else the model's definition. User code that raised on the way (a custom
    translation, say) is a related location."""
    chain = list(exception_chain(error))
    raised_frames = [frame for item in chain for frame in from_traceback(item)]
    place = None
    node = node_named_in(job, error)
    if node is not None:
        place = locate(from_stack_trace(full_stack_trace(node)), job.workspace)
        innermost = next((f for f in reversed(raised_frames) if is_user_code(f.file, job.workspace)), None)
        if innermost is not None:
            place.related.insert(0, Related(file=os.path.realpath(innermost.file), line=innermost.line,
                                            message="raised here", column=innermost.column or 1))
    if place is None or place.location is None:
        place = locate(raised_frames, job.workspace)
    root = chain[-1]
    message = f"{context}: {type(root).__name__}: {_short(str(root))}"
    if root is not error:
        message += f"\n({type(error).__name__}: {_short(first_line(str(error)), 400)})"
    if node is not None:
        message = message.replace(f"{context}:", f"{context} at node {node.name} ({node.target}):", 1)
    place.at_fallback(job.fallback)
    return Finding(code=code, stage=job.stage, location=place.location, related=place.related,
                   source_line=place.source_line, message=message)


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


def node_named_in(job: Job, error: BaseException) -> Any:
    """The FX node an exporter error names (`Error when translating node ...`, checker node names)."""
    program = job.decomposed
    if program is None:
        return None
    texts = [str(item) for item in itertools.islice(exception_chain(error), 5)]
    text = "\n".join(texts)
    nodes = [node for module in graph_modules(program) for node in module.graph.nodes
             if node.op == "call_function"]
    # The exporter's own wording first ("Error when translating node %name : ..."), then any
    # quoted node name (onnx.checker names ONNX nodes after the FX nodes they came from).
    for node in nodes:
        if node.format_node() in text:
            return node
    for node in nodes:
        if (f"'{node.name}'" in text or f'"{node.name}"' in text
                or re.search(rf"\bnode[ _]{re.escape(node.name)}\b", text)):
            return node
    return None


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


def _short(text: str, limit: int = 2000) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[:limit] + " …"
