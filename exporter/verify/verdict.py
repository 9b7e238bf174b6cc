"""A wrong op told apart from drift: the first diverging op run alone on torch's own inputs.

Verification names the first value past tolerance (divergence.py). That op is either wrong
(its translation computes something else than torch does) or right on inputs that already
differ, by float error accumulated upstream and amplified here. To tell them apart:

1. torch's side: the exported program runs up to the op (torch.fx.Interpreter); its inputs and
   its output are torch's own.
2. The op's ONNX nodes (those the exporter made of it: their `pkg.torch.onnx.fx_node` names it)
   become a model of their own, its inputs the values they read from the rest of the graph,
   fed with torch's values for them (the FX node, or program input, each stands for); the
   initializers and constants they read come along.
3. onnxruntime runs that model; its output is compared with torch's output for the op, as
   verification compares (the same tolerance). The whole model's values of those inputs
   (one session of it, the inputs as extra outputs) against torch's say how far the inputs
   had drifted.

Alone within the tolerance: drift (the inputs differ; the op is not to blame). Alone past it:
the op, unless the float64 check says rounding — the op computed in float64 on the same inputs,
and ONNX's result alone no further from it than 10× torch's own float rounding there (torch's
result's distance from it, or the dtype's epsilon at the values' scale). An op whose inputs or
ONNX nodes cannot be fed this way (a value of the rest of the graph no torch value stands for,
a control-flow body) gets no verdict, and the note says why.

Runs on a mismatch only; it never raises (a verdict that cannot be made is a note).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from onnxlens.exporter.types import InputDrift, MismatchVerdict
from onnxlens.exporter.verify.tolerance import Tolerance

# Past this many times torch's own float rounding (against float64), a difference is the op's.
ROUNDING_FACTOR = 10.0


class NoVerdict(Exception):
    """Why the op cannot be judged alone, phrased for the user."""


@dataclass
class _TorchAt:
    """torch's run up to the op: its arguments, its output, and every value still live then."""

    args: tuple
    kwargs: dict
    output: Any
    env: dict[str, Any]  # FX node name -> value


def add(summary: Any, finding: Any, node: Any, program: Any, model: Any, sessions: Any, feeds: dict[str, Any],
        graph_inputs: list, *, tolerance: Tolerance) -> None:
    """Judge the first mismatch: the verdict (or why there is none) on `summary.first_mismatch`,
    its sentence in `finding`'s message (after the first line: notes follow it). `tolerance`:
    verification's."""
    first = summary.first_mismatch
    first.verdict, first.verdict_note = judge(program, model, sessions, feeds, graph_inputs, node,
                                              tolerance=tolerance)
    if first.verdict is not None:
        head, newline, rest = finding.message.partition("\n")
        finding.message = f"{head} — {first.verdict.sentence()}{newline}{rest}"


def judge(program: Any, model: Any, sessions: Any, feeds: dict[str, Any], graph_inputs: list, node: Any,
          *, tolerance: Tolerance) -> tuple[MismatchVerdict | None, str | None]:
    """The verdict on `node` (the first diverging FX node of `program`, which `model` was
    translated from), or None and why not. `sessions`, `feeds`, `graph_inputs`: verification's."""
    started = time.perf_counter()
    try:
        verdict = _judge(program, model, sessions, feeds, graph_inputs, node, tolerance=tolerance)
    except NoVerdict as reason:
        return None, str(reason)
    except Exception as error:  # noqa: BLE001 - the mismatch stands without a verdict
        from onnxlens.exporter.verify.divergence import first_line

        return None, f"the op could not be run alone: {type(error).__name__}: {first_line(error)}"
    verdict.seconds = round(time.perf_counter() - started, 4)
    return verdict, None


def _judge(program: Any, model: Any, sessions: Any, feeds: dict[str, Any], graph_inputs: list, node: Any,
           *, tolerance: Tolerance) -> MismatchVerdict:
    from onnxlens.exporter.verify.compare import compare
    from onnxlens.exporter.verify.findings import describe_tolerance
    from onnxlens.exporter.verify.runtime import RuntimeProblem, new_session, ort_value, run

    if node is None or getattr(node, "op", None) != "call_function":
        raise NoVerdict("the first difference is at no op of the program")
    nodes, output = _onnx_nodes(program, model, node)
    torch_at = _torch_at(program, graph_inputs, node)
    inputs, initializers = _boundary(nodes)
    counterparts = {value.name: _counterpart(value, torch_at) for value in inputs}

    alone_model = _alone(model, nodes, inputs, initializers, output)
    session = new_session(alone_model.SerializeToString())
    try:
        feeds_alone = {value.name: ort_value(value, counterparts[value.name]) for value in inputs}
    except RuntimeProblem as problem:
        raise NoVerdict(f"torch's value for it is no tensor: {problem}") from problem
    (alone,) = run(session, feeds_alone, [output.name])
    del session
    compared = compare(torch_at.output, alone, tolerance=tolerance)
    if not compared.comparable:
        raise NoVerdict(f"the op's output alone cannot be compared with torch's: {compared.note}")

    verdict = MismatchVerdict(kind="", onnx_nodes=[n.op_type for n in nodes if n.op_type != "Constant"],
                              alone_max_abs_diff=compared.max_abs_diff, alone_max_rel_diff=compared.max_rel_diff,
                              alone_passed=compared.passed, alone_tolerance=describe_tolerance(compared))
    verdict.inputs = _drift(model, sessions, feeds, inputs, counterparts, tolerance=tolerance)
    verdict.inputs_max_abs_diff = max((drift.max_abs_diff for drift in verdict.inputs), default=0.0)
    if compared.passed:
        verdict.kind = "drift" if verdict.inputs_max_abs_diff > 0 else "context"
        return verdict
    rounding = _float64_check(node, torch_at, alone)
    if rounding is not None:
        verdict.torch_float64_diff, verdict.onnx_float64_diff, scale = rounding
        verdict.kind = "rounding" if verdict.onnx_float64_diff <= ROUNDING_FACTOR * scale else "op"
    else:
        verdict.kind = "op"
    return verdict


def _onnx_nodes(program: Any, model: Any, node: Any) -> tuple[list[Any], Any]:
    """The main graph's ONNX nodes made of `node`, in graph order, and the value that stands for
    its output (as divergence.py compares it)."""
    from onnxlens.exporter.verify.divergence import FX_NODE_META, FX_NODE_NAME, candidates

    made = []
    for onnx_node in model.graph:
        match = FX_NODE_META in onnx_node.metadata_props and FX_NODE_NAME.match(onnx_node.metadata_props[FX_NODE_META])
        if match and match.group(1) == node.name:
            made.append(onnx_node)
    if not made:
        raise NoVerdict("the ONNX model has no node of this op of its own (optimized into its neighbours)")
    if any(attribute.type.name in ("GRAPH", "GRAPHS") for n in made for attribute in n.attributes.values()):
        raise NoVerdict("the op's ONNX nodes have control-flow bodies")
    candidate = next((c for c in candidates(program, model) if c.node is node), None)
    if candidate is None or candidate.value.producer() not in made:
        raise NoVerdict("no value of the op's ONNX nodes stands for its output")
    return made, candidate.value


def _boundary(nodes: list[Any]) -> tuple[list[Any], list[Any]]:
    """The values the nodes read from the rest of the graph, and the initializers they read.
    Constant nodes that feed them join them (a value with no torch counterpart)."""
    made = {id(value) for node in nodes for value in node.outputs}
    inputs, initializers, seen = [], [], set()
    pending = list(nodes)
    while pending:
        node = pending.pop(0)
        for value in node.inputs:
            if value is None or id(value) in made or id(value) in seen:
                continue
            seen.add(id(value))
            producer = value.producer()
            if value.is_initializer() or (value.const_value is not None and producer is None):
                initializers.append(value)
            elif producer is not None and producer.op_type == "Constant" and not producer.inputs:
                nodes.insert(0, producer)
                made.update(id(v) for v in producer.outputs)
            else:
                inputs.append(value)
    return inputs, initializers


def _counterpart(value: Any, torch_at: _TorchAt) -> Any:
    """torch's value for an ONNX value the op's nodes read: the FX node (or program input) of
    its name, else the one whose ONNX nodes produced it as their output."""
    from onnxlens.exporter.verify.divergence import FX_NODE_META, FX_NODE_NAME

    if value.name in torch_at.env:
        return torch_at.env[value.name]
    producer = value.producer()
    if producer is not None and FX_NODE_META in producer.metadata_props:
        match = FX_NODE_NAME.match(producer.metadata_props[FX_NODE_META])
        if match and match.group(1) in torch_at.env and producer.outputs and producer.outputs[0] is value:
            return torch_at.env[match.group(1)]
    raise NoVerdict(f"the op's ONNX nodes read `{value.name}`, which no value of torch's run stands for")


def _torch_at(program: Any, graph_inputs: list, target: Any) -> _TorchAt:
    import torch

    found: dict[str, _TorchAt] = {}

    class _Stop(Exception):
        pass

    class UpTo(torch.fx.Interpreter):
        def run_node(self, node):
            if node is not target:
                return super().run_node(node)
            args, kwargs = self.fetch_args_kwargs_from_env(node)
            output = super().run_node(node)
            found["at"] = _TorchAt(args, kwargs, output, {n.name: v for n, v in self.env.items()})
            raise _Stop

    with torch.no_grad():
        try:
            UpTo(program.graph_module).run(*graph_inputs)
        except _Stop:
            pass
    if "at" not in found:
        raise NoVerdict("torch's run of the program did not reach the op")
    return found["at"]


def _alone(model: Any, nodes: list[Any], inputs: list[Any], initializers: list[Any], output: Any) -> Any:
    """A model of the nodes alone (onnx.ModelProto)."""
    import onnx
    import onnx_ir as ir

    graph = onnx.helper.make_graph(
        [ir.serde.serialize_node(node) for node in nodes], "alone",
        [ir.serde.serialize_value(value) for value in inputs], [ir.serde.serialize_value(output)],
        initializer=[_initializer(value) for value in initializers])
    proto = onnx.helper.make_model(
        graph, ir_version=model.ir_version,
        opset_imports=[onnx.helper.make_opsetid(domain, version) for domain, version in model.opset_imports.items()])
    for function in model.functions.values():
        proto.functions.append(ir.serde.serialize_function(function))
    return proto


def _initializer(value: Any) -> Any:
    import onnx_ir as ir

    tensor = ir.serde.serialize_tensor(value.const_value)
    tensor.name = value.name
    return tensor


def _drift(model: Any, sessions: Any, feeds: dict[str, Any], inputs: list[Any], counterparts: dict[str, Any],
           *, tolerance: Tolerance) -> list[InputDrift]:
    """Each input's value in the whole model's run against torch's (one session, the inputs as
    extra outputs)."""
    import torch

    from onnxlens.exporter.verify.compare import compare
    from onnxlens.exporter.verify.runtime import run

    outputs = {value.name for value in model.graph.outputs}
    graph_inputs = {value.name for value in model.graph.inputs}
    fetched = [value for value in inputs if value.name not in graph_inputs]
    drifts = [InputDrift(value.name) for value in inputs if value.name in graph_inputs]  # fed as torch's: equal
    if not fetched:
        return drifts
    session = sessions.session([value for value in fetched if value.name not in outputs])
    values = run(session, feeds, [value.name for value in fetched])
    del session
    for value, onnx_value in zip(fetched, values):
        expected = counterparts[value.name]
        if not isinstance(expected, torch.Tensor):
            expected = torch.tensor(expected)
        compared = compare(expected, onnx_value.reshape(expected.shape) if onnx_value is not None and
                           onnx_value.numel() == expected.numel() else onnx_value, tolerance=tolerance)
        drifts.append(InputDrift(value.name, compared.max_abs_diff, compared.max_rel_diff))
    return drifts


def _float64_check(node: Any, torch_at: _TorchAt, alone: Any) -> tuple[float, float, float] | None:
    """(torch's distance from the op in float64, ONNX's alone, torch's float rounding scale),
    or None when the op's output is no float tensor or the op does not run in float64."""
    import torch
    from torch.fx.node import map_aggregate

    output = torch_at.output
    if not (isinstance(output, torch.Tensor) and output.is_floating_point() and isinstance(alone, torch.Tensor)
            and alone.shape == output.shape):
        return None

    def wider(value: Any) -> Any:
        return value.double() if isinstance(value, torch.Tensor) and value.is_floating_point() else value

    try:
        with torch.no_grad():
            reference = node.target(*map_aggregate(torch_at.args, wider), **map_aggregate(torch_at.kwargs, wider))
    except Exception:  # noqa: BLE001 - an op without float64 support: no rounding check
        return None
    if not isinstance(reference, torch.Tensor) or reference.shape != output.shape:
        return None
    reference = reference.double()
    finite = torch.isfinite(reference)
    torch_diff = float((output.double() - reference)[finite].abs().max()) if finite.any() else 0.0
    onnx_diff = float((alone.double() - reference)[finite].abs().max()) if finite.any() else 0.0
    magnitude = float(reference[finite].abs().max()) if finite.any() else 0.0
    scale = max(torch_diff, torch.finfo(output.dtype).eps * magnitude)
    return torch_diff, onnx_diff, scale
