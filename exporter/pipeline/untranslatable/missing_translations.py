"""Ops without an ONNX translation in a program: every call of one, with what the quick fixes
offer for it (the start of a translation, a decomposition torch has), located on the deepest
line of the user's code a capture recorded (`located_in_branches`: a strict re-capture for ops
in torch.cond branches).

The stock exporter dispatches node by node while it builds the graph and stops at the first op
it cannot translate. Dispatching is cheap (~0.1 ms a node), so the scan dispatches every
call_function node of the decomposed program, subgraphs of torch.cond / while_loop / scan
included, with the same dispatch (`internals.dispatch`) and registry the translation will use.
"""

from __future__ import annotations

import operator
from typing import Any, Callable

from onnxlens.exporter.locations import Workspace, is_user_code
from onnxlens.exporter.pipeline.decompositions import decompose, job_decompositions
from onnxlens.exporter.pipeline.job import Job
from onnxlens.exporter.pipeline.tracing.stacks import graph_modules
from onnxlens.exporter.pipeline.untranslatable.op_findings import UnsupportedOp, unsupported_op
from onnxlens.exporter.proposals.translation_stubs import stub_for
from onnxlens.exporter.torch_internals.active import internals
from onnxlens.exporter.types import DecompositionOffer


def located_in_branches(job: Job, missing: list[UnsupportedOp]) -> list[UnsupportedOp]:
    """Re-capture strictly to blame the innermost user line of ops in torch.cond branches.

    Non-strict capture (with helper frames kept, see stacks.py) traces torch.cond branches
    through dynamo-generated code and records them only down to the `torch.cond(...)` call;
    strict capture records the whole user stack, branches included. On this failure path
    only, each op gets the deepest user chain either capture found.
    """
    target = job.target
    try:
        outcome = internals.capture("strict", target.model, target.args, target.kwargs, target.dynamic_shapes)
        if outcome.program is None:
            return missing
        decomposed = decompose(outcome.program, job_decompositions(job))
        strict = unsupported_ops(decomposed, job.registry)
    except Exception as error:  # noqa: BLE001 - the non-strict lines still stand
        job.log(f"strict re-capture to locate ops failed: {type(error).__name__}: {error}")
        return missing
    return deepest_frames(missing, [strict], job.workspace)


def unsupported_ops(program: Any, registry: Any, opset: int | None = None,
                    offer: Callable[[Any], DecompositionOffer | None] | None = None) -> list[UnsupportedOp]:
    """Every call of an op the registry cannot translate; with `opset`, each with the stub of a
    translation to that opset (the quick fix's); with `offer`, with the decomposition it offers
    (decomposition_offers.py), asked once per op."""
    offers: dict[Any, DecompositionOffer | None] = {}
    found = []
    for module in graph_modules(program):
        for node in module.graph.nodes:
            reason = _missing_translation(node, registry)
            if reason is None:
                continue
            found.append(unsupported_op(node, reason))
            if opset is not None:
                found[-1].stub = stub_for(node.target, opset) if internals.is_op_overload(node.target) else None
            if offer is not None:
                if node.target not in offers:
                    offers[node.target] = offer(node)
                found[-1].offer = offers[node.target]
    return found


def lacks_translation(node: Any, registry: Any) -> bool:
    """The node is one the scan reports: its op has no translation in the registry."""
    return _missing_translation(node, registry) is not None


def _missing_translation(node: Any, registry: Any) -> str | None:
    """Why the registry has no translation for the node's op; None when it has one, or the node
    needs none (not a call, `getitem`, an ONNX op already)."""
    if node.op != "call_function" or node.target is operator.getitem or internals.is_onnx_op(node.target):
        return None
    function, reason = internals.dispatch(node, registry)
    return reason if function is None else None


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
        return sum(1 for frame in op.frames if is_user_code(frame.file, workspace))

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
                                         module_path=op.module_path,
                                         source=op.source if op.source.call else matches[index].source,
                                         stub=op.stub, offer=op.offer, node=op.node)
            located.append(best)
    return located
