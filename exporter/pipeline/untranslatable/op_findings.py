"""The `unsupported-op` findings: one per source location, saying what a user can act on.

Where a finding lands is exporter/locations' decision (the one rule and builder); this module
says what it says. For each distinct op on the line: what the user called to get it
(op_sources.py: `torch.linalg.svd`, not only `aten._linalg_svd.default`), the library function
that called it when that was library code ("in `_torch_svd_cast`, kornia/core/utils.py:484"),
and, when one line has several calls that produced ops, the column of each (with a related
location at each further call). The modules the ops ran in read as ranges (`layers.0–31.attn`).
Torch-free: it works on what the scan recorded.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from onnxlens.exporter.locations import (Frame, Place, Workspace, call_names_for_op, find_call, from_stack_trace,
                                         locate, normalize_module_path, primary_frame, source_line)
from onnxlens.exporter.locations.columns import first_non_blank
from onnxlens.exporter.locations.names import calling_library_frame, library_function, module_list
from onnxlens.exporter.locations.place import primary_index
from onnxlens.exporter.pipeline.tracing.generated_code import is_generated
from onnxlens.exporter.pipeline.tracing.op_sources import OpSource, op_source
from onnxlens.exporter.pipeline.tracing.stacks import full_stack_trace
from onnxlens.exporter.torch_internals.active import internals
from onnxlens.exporter.types import DecompositionOffer, Finding, Location, Related, TranslationStub

ONNX_DOCS_URL = "https://pytorch.org/docs/stable/onnx_dynamo.html"


@dataclass
class UnsupportedOp:
    op: str  # e.g. "aten.linalg_eig.default"
    reason: str
    frames: list[Frame]  # outermost first
    torch_fn: str | None  # e.g. "builtin_function_or_method.linalg_eigvals"
    module_path: str | None
    source: OpSource = OpSource(None)  # what the user called (op_sources.py)
    stub: TranslationStub | None = None  # the start of a translation (translation_stubs.py)
    offer: DecompositionOffer | None = None  # torch's decomposition to use instead (decomposition_offers.py)
    node: Any = None  # the torch.fx.Node, when it is in this process's program


def findings_for(ops: list[UnsupportedOp], workspace: Workspace, fallback: Location | None) -> list[Finding]:
    """One finding per source location, naming every op that lacks a translation there."""
    grouped: dict[tuple, list[UnsupportedOp]] = {}
    for op in ops:
        innermost = primary_frame(op.frames, workspace)
        key = (os.path.realpath(innermost.file), innermost.line) if innermost else ("", 0)
        grouped.setdefault(key, []).append(op)
    findings = []
    for key, group in grouped.items():
        call_names = [name for op in group for name in _call_names(op, workspace)]
        place = locate(group[0].frames, workspace, call_names=call_names)
        calls = _call_columns(group, place.source_line, place.location, workspace)
        message = _message(group, place.source_line, place.location, workspace, calls)
        if place.at_fallback(fallback):
            message += "\n(the op has no source line in your code: shown at the model's definition)"
        module_paths = [normalize_module_path(op.module_path) for op in group if op.module_path]
        if any(module_paths):
            message += f" [module: {module_list([path for path in module_paths if path])}]"
        related = _other_calls(group, place.location, calls) + place.related + _other_library_calls(group, place, workspace)
        stubs = {op.stub.op: op.stub for op in group if op.stub is not None}
        offers = {op.offer.op: op.offer for op in group if op.offer is not None}
        findings.append(Finding(code="unsupported-op", stage="scan", location=place.location, related=related,
                                source_line=place.source_line, docs_url=ONNX_DOCS_URL, message=message,
                                translation_stubs=list(stubs.values()), decomposition_offers=list(offers.values())))
    return findings


def _call_names(op: UnsupportedOp, workspace: Workspace) -> list[str]:
    """Names the call on the primary line may have: first the function the chain enters next
    (`find_fundamental` when the op came from inside it), then the op's own names."""
    names = []
    primary = primary_index(op.frames, workspace)
    if primary is not None and primary + 1 < len(op.frames):
        entered = op.frames[primary + 1].func
        if entered and entered != "forward" and not entered.startswith("<"):
            names.append(entered)
    return list(dict.fromkeys([*names, *op.source.call_names, *call_names_for_op(op.torch_fn, op.op)]))


def _message(group: list[UnsupportedOp], text: str | None, location: Location | None, workspace: Workspace,
             calls: dict[int, int]) -> str:
    """"no ONNX translation for aten._linalg_svd.default (from torch.linalg.svd, in `_torch_svd_cast`,
    kornia/core/utils.py:484); ..." -- one entry per distinct op and origin, with the column of
    its call when the line has several calls that produced ops."""
    entries: dict[str, None] = {}
    several = len(set(calls.values())) > 1
    for op in group:
        details = []
        call = op.source.call or (_callee(text, location) if len(group) == 1 and not op.source.kind else None)
        if call:
            details.append(f"from {call}")
        library = calling_library_frame(op.frames, workspace)
        if library is not None:
            details.append(library_function(library, workspace))
        if several and id(op) in calls:
            details.append(f"column {calls[id(op)]}")
        entries[(op.source.kind or op.op) + (f" ({', '.join(details)})" if details else "")] = None
    described = list(entries)
    message = "no ONNX translation for " + (
        described[0] if len(described) == 1 else f"{len(described)} ops on this line: " + "; ".join(described))
    if "complex" in group[0].reason:
        message += " for complex-valued inputs"
    hints = list(dict.fromkeys(op.source.hint for op in group if op.source.hint))
    advice = "give one in the target's custom-translations table, or avoid the op"
    offers = {op.offer.op: op.offer for op in group if op.offer is not None}
    offered = [f"torch decomposes {name} into ops that have translations ({offer.source}): "
               f'add "{name}" to the target\'s extra-decompositions' for name, offer in offers.items()]
    return message + "; " + "; ".join([*(hints or [advice]), *offered])


def _call_columns(group: list[UnsupportedOp], text: str | None, location: Location | None,
                  workspace: Workspace) -> dict[int, int]:
    """id(op) -> the 1-based column of the call on the primary line that produced it."""
    if not text or location is None:
        return {}
    columns = {}
    for op in group:
        found = find_call(text, _call_names(op, workspace))
        if found is not None:
            columns[id(op)] = found[0] + 1
    return columns


def _other_calls(group: list[UnsupportedOp], location: Location | None, calls: dict[int, int]) -> list[Related]:
    """A related location at each further call on the primary line that produced an op: one line
    with several such calls says which call made which op."""
    if location is None or len(set(calls.values())) < 2:
        return []
    related, seen = [], {location.column}
    for op in group:
        column = calls.get(id(op))
        if column is None or column in seen:
            continue
        seen.add(column)
        what = op.source.kind or op.op
        what = f"{what} (from {op.source.call})" if op.source.call else what
        related.append(Related(file=location.file, line=location.line, column=column,
                               message=f"{what} comes from this call"))
    return related


def _other_library_calls(group: list[UnsupportedOp], place: Place, workspace: Workspace) -> list[Related]:
    """The library line that called each further op of the group (the chain shown is the first
    op's): every op's innermost frame is one click away."""
    shown = {(r.file, r.line) for r in place.related}
    related = []
    for op in group[1:]:
        frame = calling_library_frame(op.frames, workspace)
        if frame is None or (os.path.realpath(frame.file), frame.line) in shown:
            continue
        shown.add((os.path.realpath(frame.file), frame.line))
        related.append(Related(file=os.path.realpath(frame.file), line=frame.line,
                               column=first_non_blank(source_line(frame.file, frame.line)),
                               message=f"inside {frame.func or 'a call'} (library code): {op.source.kind or op.op}"))
    return related


def _callee(text: str | None, location: Location | None) -> str | None:
    """`torch.linalg.eigvals` when the location's column range covers `torch.linalg.eigvals(h)`."""
    if not text or location is None or not location.end_column or location.end_line != location.line:
        return None
    span = text[location.column - 1:location.end_column - 1]
    name = span.split("(", 1)[0].strip()
    return name if name and "(" in span and name.replace(".", "").replace("_", "").isalnum() else None


def in_branch(op: UnsupportedOp) -> bool:
    """Traced through generated code (a torch.cond / while_loop branch): its chain lacks the line
    in the branch, which only a strict re-capture finds (missing_translations.py, `located_in_branches`)."""
    return any(map(is_generated, op.frames))


def unsupported_op(node: Any, reason: str, op: Any = None) -> UnsupportedOp:
    """What the findings need of a node whose op (`op`, or the node's own) has no translation:
    its call chain with helper frames, what the user called, the module it ran in."""
    torch_fn = node.meta.get("torch_fn")
    stack = node.meta.get("nn_module_stack") or {}
    module_path = list(stack.values())[-1][0] if stack else None
    return UnsupportedOp(op=op_name(node.target if op is None else op), reason=reason, node=node,
                         frames=from_stack_trace(full_stack_trace(node)),
                         torch_fn=torch_fn[1] if isinstance(torch_fn, tuple) else None,
                         module_path=module_path, source=op_source(node))


def op_name(target: Any) -> str:
    if internals.is_op_overload(target):
        return internals.op_name(target)
    return getattr(target, "__qualname__", None) or str(target)
