"""The exported graph in brief (GraphSummary): node counts by op type, initializer bytes, the
inputs and outputs with their dtypes and dynamic axes, the dimensions the code fixed. The next
export of the target is compared with it (exporter/graph_change.py); a few kB for any model.
"""

from __future__ import annotations

from typing import Any, Callable

import onnx_ir as ir

from onnxlens.exporter.pipeline.failures.dynamic_dims import conflicts
from onnxlens.exporter.pipeline.job import Job
from onnxlens.exporter.types import FixedAxis, GraphSummary, GraphValue, Location

# An ONNX node -> the user's line it came from (lines.NodeLines.line): (real path, 1-based line).
LineOf = Callable[[ir.Node], "tuple[str, int] | None"]


def summarize(job: Job, model: ir.Model, line_of: LineOf) -> GraphSummary:
    ops: dict[str, int] = {}
    for node in ir.traversal.RecursiveGraphIterator(model.graph):
        ops[node.op_type] = ops.get(node.op_type, 0) + 1

    def graph_value(value: ir.Value, *, output: bool) -> GraphValue:
        line = None
        producer = value.producer() if output else None
        if producer is not None and (key := line_of(producer)) is not None:
            line = Location(file=key[0], line=key[1])
        return GraphValue(name=value.name or "", dtype=dtype_name(value.dtype) if value.dtype is not None else "?",
                          dims=dims_of(value) or [], line=line)

    return GraphSummary(
        ops=ops,
        initializer_bytes=sum(value_bytes(value) for value in model.graph.initializers.values()),
        inputs=[graph_value(value, output=False) for value in model.graph.inputs],
        outputs=[graph_value(value, output=True) for value in model.graph.outputs],
        fixed_axes=fixed_axes(job),
        shapes_location=job.shapes_location,
    )


def fixed_axes(job: Job) -> list[FixedAxis]:
    """The input dimensions declared dynamic that the code fixed to one size, each on the user's
    line that did (dynamic_dims.conflicts); an ONNX input carries the name of a top-level input."""
    if job.shape_facts is None:
        return []
    return [FixedAxis(input=conflict.size.path[0], dim=conflict.size.dim, size=conflict.fixed_to,
                      location=conflict.place.location)
            for conflict in conflicts(job, went_on=True)
            if conflict.fixed_to is not None and conflict.size.dim is not None and len(conflict.size.path) == 1
            and isinstance(conflict.size.path[0], str) and conflict.place.location is not None
            and not conflict.in_library]


def value_bytes(value: ir.Value) -> int:
    """An initializer's size from its type and shape (a weights-free model's have no data)."""
    if value.dtype is None or value.shape is None or not value.shape.is_static():
        return 0
    count = 1
    for dim in value.shape:
        count *= int(dim)
    return int(count * value.dtype.itemsize)


def dtype_name(dtype: Any) -> str:
    """numpy's name of an ONNX element type ("float32"); ONNX's for those numpy lacks (bfloat16)."""
    try:
        return dtype.numpy().name
    except Exception:  # noqa: BLE001 - types numpy lacks (bfloat16, float8) keep ONNX's name
        return dtype.name.lower()


def dims_of(value: Any) -> list[int | str] | None:
    """A value's sizes: numbers, and dynamic axes by name ("?" when unnamed)."""
    if value.shape is None:
        return None
    return [dim if isinstance(dim, int) else (getattr(dim, "value", None) or "?") for dim in value.shape]


def describe_value(value: Any) -> str | None:
    """'float32[batch, 16, 256]' for a tensor value with known type and shape."""
    if value.dtype is None:
        return None
    dims = dims_of(value)
    if dims is None:
        return f"{dtype_name(value.dtype)}[?]"
    return f"{dtype_name(value.dtype)}[{', '.join(str(d) for d in dims)}]"
