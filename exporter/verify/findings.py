"""The findings of verification: a `mismatch` on the user's line, named by module path, and a
`verification` warning when the verification could not run; a `baked-shape` warning where a run
at other sizes failed or differed.

A mismatch first seen at an op the target's own custom translation translated lands in that
translation (the user's code that is wrong), the op's call related (`in_translation`).

Where a finding lands is decided by exporter/locations (`locate_node`: the one rule and
builder, with the module-aware messages of a mismatch); this module says what it says. A
warning stays in the workspace as an error does: a value no line of the workspace computed
(a library model's) is shown at the model's definition, the library's lines related.
"""

from __future__ import annotations

import inspect
from typing import Any

import onnxlens.exporter.verify.onnx_nodes as onnx_nodes
from onnxlens.exporter.locations import Place, Workspace, is_user_code, locate_node, module_stack, node_trace, source_line
from onnxlens.exporter.torch_internals.active import internals
from onnxlens.exporter.types import Finding, FirstMismatch, Location, Related, VerificationSummary
from onnxlens.exporter.verify.divergence import Divergence, onnx_op, target_name
from onnxlens.exporter.wire.protocol import OUT_OF_MEMORY


def describe(divergence: Divergence) -> FirstMismatch:
    node = divergence.node
    modules = module_stack(getattr(node, "meta", {}) or {})
    return FirstMismatch(
        node=getattr(node, "name", str(node)), target=target_name(node), onnx_op=onnx_op(divergence.value),
        module=modules[-1][0] if modules else None, output=divergence.output_name or None,
        max_abs_diff=divergence.comparison.max_abs_diff, max_rel_diff=divergence.comparison.max_rel_diff)


def mismatch_finding(divergence: Divergence, summary: VerificationSummary, workspace: Workspace | None,
                     fallback: Location | None = None) -> Finding:
    node = divergence.node
    place = locate_node(_traced_meta(node), workspace)
    comparison = divergence.comparison
    if place.module_path:
        where = f"module `{place.module_path}` ({(place.module_class or '?').rsplit('.', 1)[-1]})"
    else:
        where = "the top-level module"
    what = f"FX node `{node.name}` ({target_name(node)})" if node is not None else "an output"
    op = onnx_op(divergence.value)
    if op:
        what += f" -> ONNX {op}"
    if comparison.comparable:
        diff = (f"max abs diff {comparison.max_abs_diff:.3g}, "
                f"max rel diff {comparison.max_rel_diff:.3g}")
        if comparison.excess > 1 and comparison.excess != float("inf"):
            diff += f", {comparison.excess:.3g}x the tolerance"
        if comparison.nan_mismatches:
            diff += f", {comparison.nan_mismatches} NaN/inf on one side only"
        diff += f" ({describe_tolerance(comparison)})"
    else:
        diff = comparison.note
    if divergence.is_output:
        message = (f"onnxruntime and torch differ at output `{divergence.output_name}` of "
                   f"{where}, {what}: {diff}; no intermediate value was past tolerance before it")
    else:
        message = f"onnxruntime and torch differ first in {where}, {what}: {diff}"
        if summary.compared:
            message += f"; the outputs differ by up to {summary.max_abs_diff:.3g}"
    if place.at_fallback(fallback):
        message += "\n(no line of your code computed this value: shown at the model's definition)"
    return Finding(code="mismatch", severity="warning", stage="verify", message=message,
                   location=place.location, related=place.related, source_line=place.source_line)


def describe_tolerance(comparison: Any) -> str:
    """`float32: rtol 0.001, atol 0.0053 (noise floor at |value| <= 345)`: what the value was
    compared with (tolerance.py)."""
    text = f"{comparison.dtype or 'value'}: rtol {comparison.rtol:g}, atol {comparison.floor:.3g}"
    if comparison.noise and comparison.noise >= comparison.atol:
        text += f" (noise floor at |value| <= {comparison.scale:.3g})"
    return text


# What a `verification` finding adds: the export itself is not in question.
_NOT_VERIFIED = "the model was exported and saved, but not verified"


def not_run_finding(reason: str) -> Finding:
    """Verification could not run for a reason no node names (inputs that do not fit the model,
    a bug of ours): no location (the pipeline puts it at the model's definition)."""
    return Finding(code="verification", stage="verify",
                   message=f"verification could not run: {reason}; {_NOT_VERIFIED}")


def torch_failure_finding(failed: Any, workspace: Workspace | None) -> Finding:
    """torch raised running the exported program on the example inputs (out of memory, say): on
    the line of the FX node it was running."""
    node = failed.node
    text = "verification could not run: torch raised running the model on the example inputs"
    cause = failed.text + (f" (after torch.export's runtime assertion: {failed.assertion})" if failed.assertion else "")
    hint = ""
    if OUT_OF_MEMORY.search(failed.text):
        hint = ("\n(smaller example inputs, `verify-inputs = \"small\"` for a model with dynamic "
                "dimensions, or `verify = false` avoid it)")
    if node is None or node.op not in ("call_function", "call_method", "call_module"):
        return Finding(code="verification", stage="verify", message=f"{text}: {cause}; {_NOT_VERIFIED}{hint}")
    place = locate_node(_traced_meta(node), workspace)
    text += f" at {onnx_nodes.describe_fx(node)}: {cause}; {_NOT_VERIFIED}{hint}"
    return Finding(code="verification", stage="verify", message=text,
                   location=place.location, related=place.related, source_line=place.source_line)


def runtime_failure_finding(message: str, program: Any, model: Any, workspace: Workspace | None) -> Finding:
    """onnxruntime refused or failed the model: on the line that produced the node it names, the
    node named by op and types (exporter/verify/onnx_nodes.py); no location if it names none."""
    onnx_node = onnx_nodes.named_node(message, model)
    if onnx_node is None:
        return Finding(code="verification", stage="verify",
                       message=f"verification could not run: onnxruntime could not run the exported model: "
                               f"{message}; {_NOT_VERIFIED}")
    node = onnx_nodes.fx_node(onnx_node, program)
    place = onnx_nodes.place(onnx_node, node, workspace)
    where = onnx_nodes.describe(onnx_node) + (f", from {onnx_nodes.describe_fx(node)}" if node is not None else "")
    text = f"verification could not run: onnxruntime could not run the exported model at {where}: {message}"
    if "Could not find an implementation" in message:
        text += "\n(onnxruntime's CPU provider has no kernel for this op with these element types)"
    return Finding(code="verification", stage="verify", message=text,
                   location=place.location, related=place.related, source_line=place.source_line)


def _traced_meta(node: Any) -> dict:
    """The node's metadata, or that of the nearest node with a stack trace: nodes a
    decomposition or a pass added may have none (their inputs, then their users, are the
    closest user code)."""
    meta = getattr(node, "meta", None) or {}
    if node_trace(meta) or not hasattr(node, "all_input_nodes"):
        return meta
    for neighbours in (lambda n: n.all_input_nodes, lambda n: list(n.users)):
        seen, frontier = {node}, [node]
        while frontier:
            following = []
            for current in frontier:
                for other in neighbours(current):
                    if other in seen:
                        continue
                    if node_trace(other.meta):
                        return {**other.meta, "nn_module_stack": meta.get(
                            "nn_module_stack", other.meta.get("nn_module_stack"))}
                    seen.add(other)
                    following.append(other)
            frontier = following
    return meta


def at_fallback(finding: Finding, fallback: Location | None) -> None:
    """A finding no line of the user's code produced (a value, or the node onnxruntime refused):
    at the model's definition, as for errors; the library frames stay related."""
    if finding.location is not None or fallback is None:
        return
    place = Place(related=finding.related)
    place.at_fallback(fallback)
    finding.location, finding.source_line = place.location, place.source_line
    finding.message += ("\n(no line of your code is on its call chain: shown at the model's definition)"
                        if finding.related else "\n(shown at the model's definition)")


def baked_shape(finding: Finding, message: str) -> Finding:
    """A `baked-shape` warning where `finding` is, saying `message`."""
    return Finding(code="baked-shape", stage="verify", location=finding.location, related=finding.related,
                   source_line=finding.source_line, message=message)


def in_translation(finding: Finding, summary: VerificationSummary, custom: dict, workspace: Workspace) -> Finding:
    """The mismatch on the user's custom translation of the op where the values first differ,
    when that translation is in the workspace; the finding as it was otherwise."""
    first = summary.first_mismatch
    if finding.code != "mismatch" or first is None:
        return finding
    function = next((f for torch_op, f in custom.items() for overload in internals.overloads(torch_op)
                     if str(overload) == first.target), None)
    defined = _definition(function) if function is not None else None
    if defined is None or not is_user_code(defined.file, workspace):
        return finding
    name = getattr(function, "__name__", None) or getattr(getattr(function, "function", None), "__name__", "?")
    related = list(finding.related)
    if finding.location is not None:
        related.insert(0, Related(file=finding.location.file, line=finding.location.line,
                                  column=finding.location.column, message=f"{first.target} is called here"))
    return Finding(code=finding.code, severity=finding.severity, stage=finding.stage, location=defined,
                   related=related, source_line=source_line(defined.file, defined.line),
                   message=f"your ONNX translation of {first.target} (`{name}`) does not compute what torch does: "
                           + finding.message)


def _definition(function: Any) -> Location | None:
    """The `def` line of a translation (a plain function, or an onnxscript function's Python one)."""
    function = getattr(function, "function", function)  # onnxscript's OnnxFunction keeps the Python function
    try:
        function = inspect.unwrap(function)
        file = inspect.getsourcefile(function)
        line = inspect.getsourcelines(function)[1]
    except (OSError, TypeError):
        return None
    return Location(file=file, line=line) if file else None
