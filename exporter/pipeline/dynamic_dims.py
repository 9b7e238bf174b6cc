"""Dimensions declared dynamic that came out static: a warning after a successful capture.

When the model's code forces a dimension to one value (say `x.reshape(16)` of a (batch, 4)
input), torch.export refuses the dynamic shape, and the exporter silently retries with the fixes
torch suggests: the export "works" but the ONNX model has a fixed size. The warning goes on the
dynamic-shapes factory.
"""

from __future__ import annotations

from typing import Any

from onnxlens.exporter.pipeline.job import Job
from onnxlens.exporter.types import Finding

DOCS_URL = "https://pytorch.org/docs/stable/export.html#dynamic-shapes"


def check_dynamic_dims(job: Job) -> None:
    """Warn when dimensions asked to be dynamic came out static."""
    import torch

    requested = count_dynamic(job.target.dynamic_shapes)
    if not requested:
        return
    specs = job.program.graph_signature.input_specs
    user_inputs = {spec.arg.name for spec in specs if spec.kind.name == "USER_INPUT"}
    shapes = []
    dynamic = 0
    for node in job.program.graph.nodes:
        if node.op == "placeholder" and node.name in user_inputs:
            value = node.meta.get("val")
            if isinstance(value, torch.Tensor):
                dynamic += sum(1 for dim in value.shape if isinstance(dim, torch.SymInt))
                shapes.append(f"{node.name}: [{', '.join(str(d) for d in value.shape)}]")
    if dynamic >= requested:
        return
    job.result.findings.append(Finding(
        code="torch-export", severity="warning", stage="capture", location=job.shapes_location or job.fallback,
        source_line=None, docs_url=DOCS_URL,
        message=(f"{requested - dynamic} of the {requested} dimensions declared dynamic came out static: "
                 "the model's code fixes their size, and torch.export specialized them "
                 f"(the exported inputs are {'; '.join(shapes)}). The ONNX model only accepts those sizes.")))


def count_dynamic(shapes: Any) -> int:
    """Dimensions declared dynamic in a dynamic_shapes spec (Dim objects, AUTO/DYNAMIC, names)."""
    import torch

    if shapes is None:
        return 0
    if isinstance(shapes, dict) and all(isinstance(key, int) for key in shapes):
        return sum(1 for value in shapes.values() if _is_dynamic_dim(value, torch))
    if isinstance(shapes, dict):
        return sum(count_dynamic(value) for value in shapes.values())
    if isinstance(shapes, (list, tuple)):
        if shapes and all(not isinstance(v, (dict, list, tuple)) for v in shapes) and any(
                _is_dynamic_dim(v, torch) for v in shapes):
            return sum(1 for value in shapes if _is_dynamic_dim(value, torch))
        return sum(count_dynamic(value) for value in shapes)
    return 0


def _is_dynamic_dim(value: Any, torch: Any) -> bool:
    if value is None or isinstance(value, int):
        return False
    dim_hint = getattr(torch.export, "Dim", None)
    if dim_hint is not None and value in (getattr(dim_hint, "STATIC", object()),):
        return False
    return True
