"""The optimize stage: the rest of `_core.export`'s steps on the translated model, then what
each source line became.

onnxscript's optimizer (constant folding, rewrite rules) and the renames of inputs, outputs and
dynamic axes, in the public API's order, so the model is byte-identical to
`torch.onnx.export(..., dynamo=True)`'s. Its own stage, after translation has settled the
export's errors: the editor already shows them while it runs (the optimizer is a large part of
a real model's export: ~0.85 s of the examples' encoder's ~5 s). A weights-free model
(weights.py) is not optimized, as `optimize=False` does it: constant folding reads weights they
do not have. Then the line data for hover, lens and inlay hints, and the graph's summary the
next export is compared with (lines.py), from the final model's node metadata and the program it
was translated from (no weights needed).
"""

from __future__ import annotations

from typing import Any

import onnxlens.exporter.pipeline.output.lines as lines
import onnxlens.exporter.pipeline.pattern_matching as pattern_matching
import onnxlens.exporter.pipeline.tracing.traced_state as traced_state
from onnxlens.exporter.pipeline.failures.errors import error_finding
from onnxlens.exporter.pipeline.job import Job
from onnxlens.exporter.pipeline.tracing.stacks import full_traces
from onnxlens.exporter.torch_internals.active import internals


def run(job: Job) -> None:
    try:
        optimize(job.onnx_program, job.spec.input_names, job.spec.output_names,
                 optimize=job.weights_free is None)
        if job.need_axis_mapping and job.raw_dynamic_shapes is not None:
            internals.rename_dynamic_axes(job.onnx_program, job.raw_dynamic_shapes)
    except Exception as error:  # noqa: BLE001 - any optimizer failure is a finding
        finding = error_finding(job, error, "translation", "optimizing the ONNX model failed")
        # Constant folding is where a trace value kept as a constant fails (traced_state.py).
        traced_state.explain(job, finding)
        job.error = error
        job.fail([finding])
    job.result.node_count = len(job.onnx_program.model.graph)
    lines.record(job, full_traces(job.decomposed))


def optimize(onnx_program: Any, input_names: list[str] | None = None, output_names: list[str] | None = None,
             *, optimize: bool = True) -> None:
    """`_core.export`'s steps after the opset conversion: optimize (unless told not to, as the
    public API's `optimize=False`), rename inputs and outputs."""
    if optimize:
        pattern_matching.install()  # the same rewrites, without a walk of the graph per node and rule
        onnx_program.optimize()
    if input_names:
        internals.rename_inputs(onnx_program.model, input_names)
    if output_names:
        internals.rename_outputs(onnx_program.model, output_names)
