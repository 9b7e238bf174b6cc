"""What an exported model is, as the regression gate compares it: read from the saved .onnx.

The ONNX operators and their counts (subgraphs of If/Loop/Scan included), the inputs' and
outputs' dimensions (a name for a dynamic axis, a number for a fixed one), and the initializers'
sizes in bytes, summed per module (an initializer `layers.0.ff.weight` belongs to module
`layers.0.ff`). Read with `onnx.load(..., load_external_data=False)`: the weights' data is never
read (dims and element type give the size), so a weights-free model's graph-only file works too.
The `onnx` package is imported here only (the server imports this module when a baseline is saved
or compared).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any


@dataclass
class GateGraph:
    """A saved model as the gate compares it, kept in the baseline JSON (docs/cli.md).

    Not the result's `exporter.types.GraphSummary`, which the worker builds for the editor and
    the next export's comparison: the gate needs the initializers' bytes per module (a weight
    that grew names its module), which the result does not carry, and the baseline's format is
    a contract of its own."""

    ops: dict[str, int] = field(default_factory=dict)  # ONNX op type -> nodes
    # The graph's inputs and outputs in order: {"name", "dims"}, a dim a name (dynamic), a size, or None
    inputs: list[dict[str, Any]] = field(default_factory=list)
    outputs: list[dict[str, Any]] = field(default_factory=list)
    initializers: dict[str, int] = field(default_factory=dict)  # module path -> bytes (CONSTANTS: no module)

    @property
    def node_count(self) -> int:
        return sum(self.ops.values())

    @property
    def initializer_bytes(self) -> int:
        return sum(self.initializers.values())

    def to_dict(self) -> dict[str, Any]:
        return {"node_count": self.node_count, "ops": dict(sorted(self.ops.items())),
                "inputs": self.inputs, "outputs": self.outputs,
                "initializer_bytes": self.initializer_bytes, "initializers": self.initializers}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> GateGraph:
        return cls(ops=dict(data.get("ops") or {}), inputs=list(data.get("inputs") or []),
                   outputs=list(data.get("outputs") or []), initializers=dict(data.get("initializers") or {}))


# Initializers of no module: the exporter's constants (`val_5`) and the root module's own tensors.
CONSTANTS = "(constants)"


def module_of(initializer: str) -> str:
    """`layers.0.ff.weight` -> `layers.0.ff`; a name without a dot belongs to no module (CONSTANTS)."""
    return initializer.rpartition(".")[0] or CONSTANTS


def summarize(path: str) -> GateGraph | None:
    """The summary of the model at `path`; None when it cannot be read."""
    import onnx
    from onnx import helper

    try:
        model = onnx.load(path, load_external_data=False)
    except Exception:  # noqa: BLE001 - a missing or damaged file: nothing to compare
        return None
    summary = GateGraph()
    ops: Counter[str] = Counter()
    graphs = [model.graph]
    while graphs:
        graph = graphs.pop()
        for node in graph.node:
            ops[node.op_type] += 1
            for attribute in node.attribute:
                graphs.extend([attribute.g] if attribute.HasField("g") else [])
                graphs.extend(attribute.graphs)
    summary.ops = dict(ops)
    initializer_names = {tensor.name for tensor in model.graph.initializer}
    summary.inputs = [{"name": value.name, "dims": _dims(value)}
                      for value in model.graph.input if value.name not in initializer_names]
    summary.outputs = [{"name": value.name, "dims": _dims(value)} for value in model.graph.output]
    sizes: Counter[str] = Counter()
    for tensor in model.graph.initializer:
        try:
            itemsize = helper.tensor_dtype_to_np_dtype(tensor.data_type).itemsize
        except Exception:  # noqa: BLE001 - an element type numpy lacks (float8 ...): one byte
            itemsize = 1
        count = 1
        for dim in tensor.dims:
            count *= dim
        sizes[module_of(tensor.name)] += count * itemsize
    summary.initializers = dict(sizes)
    return summary


def _dims(value: Any) -> list[int | str | None]:
    shape = value.type.tensor_type.shape
    return [dim.dim_param if dim.HasField("dim_param") else dim.dim_value if dim.HasField("dim_value") else None
            for dim in shape.dim]
