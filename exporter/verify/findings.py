"""The `mismatch` findings of verification, on the user's line, named by module path.

Where the finding lands is decided by exporter/locations (`locate_node`: the one rule and
builder, with the module-aware messages of a mismatch); this module says what it says.
"""

from __future__ import annotations

import re
from typing import Any

from onnxlens.exporter.locations import Workspace, locate_node, module_stack
from onnxlens.exporter.types import Finding, FirstMismatch, VerificationSummary
from onnxlens.exporter.verify.divergence import FX_NODE_META, FX_NODE_NAME, Divergence, onnx_op, target_name


def describe(divergence: Divergence) -> FirstMismatch:
    node = divergence.node
    modules = module_stack(getattr(node, "meta", {}) or {})
    return FirstMismatch(
        node=getattr(node, "name", str(node)), target=target_name(node), onnx_op=onnx_op(divergence.value),
        module=modules[-1][0] if modules else None, output=divergence.output_name or None,
        max_abs_diff=divergence.comparison.max_abs_diff, max_rel_diff=divergence.comparison.max_rel_diff)


def mismatch_finding(divergence: Divergence, summary: VerificationSummary, workspace: Workspace | None) -> Finding:
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
        if comparison.nan_mismatches:
            diff += f", {comparison.nan_mismatches} NaN/inf on one side only"
    else:
        diff = comparison.note
    tolerance = f"rtol={summary.rtol:g}, atol={summary.atol:g}"
    if divergence.is_output:
        message = (f"onnxruntime and torch differ at output `{divergence.output_name}` of "
                   f"{where}, {what}: {diff} ({tolerance}); no intermediate value was past "
                   f"tolerance before it")
    else:
        message = (f"onnxruntime and torch differ first in {where}, {what}: {diff} "
                   f"({tolerance}); the outputs differ by up to "
                   f"{summary.max_abs_diff:.3g}")
    return Finding(code="mismatch", severity="warning", stage="verify", message=message,
                   location=place.location, related=place.related, source_line=place.source_line)


def runtime_failure_finding(message: str, program: Any, model: Any, workspace: Workspace | None) -> Finding:
    """onnxruntime refused the model: put it on the line of the node it names, if any."""
    location, related, source_line = None, [], None
    # onnxruntime names the node as "Name:'node_view'" (kernel errors), "Node (x)" or
    # "node with name 'x'" (no kernel for the type).
    match = re.search(r"Name:'([^']+)'|[Nn]ode \(([^)]+)\)|node with name '([^']+)'", message)
    if match:
        node_name = next(group for group in match.groups() if group)
        for onnx_node in model.graph:
            if onnx_node.name == node_name:
                fx_name = FX_NODE_NAME.match(onnx_node.metadata_props.get(FX_NODE_META, ""))
                fx_node = next((n for n in program.graph.nodes
                                if fx_name and n.name == fx_name.group(1)), None)
                if fx_node is not None:
                    place = locate_node(fx_node.meta, workspace)
                    location, related, source_line = place.location, place.related, place.source_line
                break
    return Finding(code="mismatch", severity="warning", stage="verify",
                   message=f"onnxruntime could not run the exported model: {message}",
                   location=location, related=related, source_line=source_line)


def _traced_meta(node: Any) -> dict:
    """The node's metadata, or that of the nearest node with a stack trace: nodes a
    decomposition or a pass added may have none (their inputs, then their users, are the
    closest user code)."""
    meta = getattr(node, "meta", None) or {}
    if meta.get("stack_trace") or not hasattr(node, "all_input_nodes"):
        return meta
    for neighbours in (lambda n: n.all_input_nodes, lambda n: list(n.users)):
        seen, frontier = {node}, [node]
        while frontier:
            following = []
            for current in frontier:
                for other in neighbours(current):
                    if other in seen:
                        continue
                    if other.meta.get("stack_trace"):
                        return {**other.meta, "nn_module_stack": meta.get(
                            "nn_module_stack", other.meta.get("nn_module_stack"))}
                    seen.add(other)
                    following.append(other)
            frontier = following
    return meta
