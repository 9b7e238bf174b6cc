"""The first value in the graph past tolerance, found with ONE onnxruntime session.

Every FX-named ONNX value is added as an extra graph output and fetched in one run; one
torch.fx.Interpreter run over the exported program compares each FX node's value with its ONNX
counterpart as it is computed and stops at the first past tolerance.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

# The exporter records each ONNX node's FX node as "%name : ..." in this metadata entry.
FX_NODE_META = "pkg.torch.onnx.fx_node"
FX_NODE_NAME = re.compile(r"^%(\S+) :")


@dataclass
class Candidate:
    """An FX node whose value the ONNX graph computes under a name we can fetch."""

    node: Any  # torch.fx.Node
    value: Any  # onnx_ir.Value
    fetch_name: str


@dataclass
class Divergence:
    node: Any
    value: Any
    comparison: Any  # compare.Comparison
    is_output: bool = False
    output_name: str = ""


def candidates(program: Any, model: Any) -> list[Candidate]:
    """FX call_function nodes (in topological order) with an ONNX value to fetch."""
    by_name: dict[str, Any] = {}
    by_meta: dict[str, Any] = {}
    for onnx_node in model.graph:
        for value in onnx_node.outputs:
            if value.name:
                by_name[value.name] = value
        match = FX_NODE_META in onnx_node.metadata_props and FX_NODE_NAME.match(
            onnx_node.metadata_props[FX_NODE_META])
        if match and onnx_node.outputs:
            # The last ONNX node translated from an FX node produces its value (used when
            # an optimisation renamed it).
            by_meta[match.group(1)] = onnx_node.outputs[0]
    skip = {v.name for v in model.graph.inputs} | set(model.graph.initializers)
    found = []
    for node in program.graph.nodes:
        if node.op != "call_function":
            continue
        value = by_name.get(node.name) or by_meta.get(node.name)
        if value is None or not value.name or value.name in skip or value.type is None:
            continue  # (onnxruntime needs a type for each graph output)
        found.append(Candidate(node, value, value.name))
    return found


def first_divergence(program: Any, model: Any, sessions: Any, feeds: dict[str, Any], graph_inputs: list,
                     *, tolerance: Any, shapes_differ: bool = False,
                     before: Any = None) -> tuple[Divergence | None, int]:
    """The first FX value past tolerance (None: none before the outputs), and how many
    intermediate values were compared. Each value is compared within `tolerance`
    (tolerance.Tolerance: its own dtype's bounds, at its own scale).

    `shapes_differ`: the program is the captured one (before decomposition) and the inputs have
    other sizes than the example's (the second-shape check): a value of another shape counts as
    differing, and the blame goes to the nearest node before it that the ONNX model has no value
    of (a decomposed op: a decomposition that read the example's sizes fixed them there).

    `before`: an ONNX node onnxruntime failed at: only the values it depends on are compared,
    fetched with a session pruned to them (onnxruntime computes only what they need, so the
    failing node does not run): a node fails where a wrong shape arrives, not always where it
    was made."""
    import torch

    from onnxlens.exporter.verify.compare import compare
    from onnxlens.exporter.verify.runtime import run

    found_candidates = candidates(program, model)
    if before is not None:
        upstream = _upstream_values(before)
        found_candidates = [c for c in found_candidates if c.fetch_name in upstream]
    if not found_candidates:
        return None, 0
    outputs = {v.name for v in model.graph.outputs} if before is None else set()
    extra, seen = [], set()
    for c in found_candidates:
        if c.fetch_name not in outputs and c.fetch_name not in seen:
            extra.append(c.value)
            seen.add(c.fetch_name)
    fetch = list(dict.fromkeys(c.fetch_name for c in found_candidates))
    session = sessions.session(extra, only=before is not None)
    onnx_values = dict(zip(fetch, run(session, feeds, fetch)))
    del session
    by_node = {c.node: c for c in found_candidates}
    state: dict[str, Any] = {"checked": 0, "found": None}

    class _Stop(Exception):
        pass

    class FirstDivergence(torch.fx.Interpreter):
        def run_node(self, node):
            result = super().run_node(node)
            candidate = by_node.get(node)
            if candidate is not None:
                actual = onnx_values.pop(candidate.fetch_name, None)
                comparison = compare(result, actual, tolerance=tolerance)
                if comparison.comparable or (shapes_differ and comparison.note.startswith("shape ")):
                    state["checked"] += 1
                    if not comparison.passed:
                        blamed = nearest_uncompared(node, by_node) if shapes_differ else None
                        state["found"] = Divergence(blamed or node, None if blamed else candidate.value, comparison)
                        raise _Stop
                # (otherwise a differently shaped value is another thing)
            return result

    with torch.no_grad():
        try:
            FirstDivergence(program.graph_module).run(*graph_inputs)
        except _Stop:
            pass
    return state["found"], state["checked"]


def _upstream_values(onnx_node: Any) -> set[str]:
    """The names of the values `onnx_node` depends on in its graph (its inputs, theirs ...)."""
    names: set[str] = set()
    frontier = [value for value in onnx_node.inputs if value is not None]
    while frontier:
        value = frontier.pop()
        if not value.name or value.name in names:
            continue
        names.add(value.name)
        producer = value.producer()
        if producer is not None:
            frontier.extend(v for v in producer.inputs if v is not None)
    return names


def nearest_uncompared(node: Any, compared: dict) -> Any:
    """The nearest op before `node` (breadth first over its inputs) with no ONNX value compared,
    or None."""
    seen, frontier = {node}, list(node.all_input_nodes)
    while frontier:
        following = []
        for current in frontier:
            if current in seen or current.op != "call_function":
                continue
            seen.add(current)
            if current not in compared:
                return current
            following.extend(current.all_input_nodes)
        frontier = following
    return None


def target_name(node: Any) -> str:
    target = getattr(node, "target", None)
    return str(target).removeprefix("aten::") if target is not None else "?"


def onnx_op(value: Any) -> str | None:
    producer = value.producer() if value is not None else None
    if producer is None:
        return None
    return f"{producer.domain}::{producer.op_type}" if producer.domain else producer.op_type


def first_line(error: BaseException) -> str:
    text = str(error).strip() or type(error).__name__
    return text.splitlines()[0][:500]
