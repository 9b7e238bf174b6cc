"""The translate stage: the decomposed program to an ONNX model, as `_core.export` does it.

Translation with the job's registry, conversion to the target opset, optimisation and the
renames of inputs/outputs: the public API's own steps, so the model is byte-identical to
`torch.onnx.export(..., dynamo=True)`'s. A weights-free model (weights.py) is translated as
`optimize=False` does it: optimization constant-folds, which reads weights they do not have.
Then what each source line became (lines.py): node metadata only, no weights needed.
"""

from __future__ import annotations

from typing import Any

import onnxlens.exporter.pipeline.lines as lines
from onnxlens.exporter.pipeline.errors import fail_on
from onnxlens.exporter.pipeline.job import Job
from onnxlens.exporter.pipeline.stacks import full_traces


def run(job: Job) -> None:
    try:
        job.onnx_program = translate(job.decomposed, job.registry, job.opset, job.spec.input_names,
                                     job.spec.output_names, optimize=job.weights_free is None)
        if job.need_axis_mapping and job.raw_dynamic_shapes is not None:
            job.onnx_program._rename_dynamic_axes(job.raw_dynamic_shapes)
    except Exception as error:  # noqa: BLE001 - any translation failure is a finding
        fail_on(job, error, "translation", "translating to ONNX failed")
    job.result.node_count = len(job.onnx_program.model.graph)
    job.result.lines = lines.line_infos(job.onnx_program.model, job.workspace, full_traces(job.decomposed))


def translate(decomposed: Any, registry: Any, opset: int, input_names: list[str] | None = None,
              output_names: list[str] | None = None, *, optimize: bool = True) -> Any:
    """`_core.export` steps 3+: translate, convert to the opset, optimize (unless told not to, as
    the public API's `optimize=False`), rename."""
    from torch.onnx._internal._lazy_import import onnxscript_apis
    from torch.onnx._internal.exporter import _core, _ir_passes

    onnx_program = _core._exported_program_to_onnx_program(decomposed, registry=registry)
    onnx_program.model = onnxscript_apis.convert_version(onnx_program.model, opset)
    if optimize:
        onnx_program.optimize()
    if input_names:
        _ir_passes.rename_inputs(onnx_program.model, input_names)
    if output_names:
        _ir_passes.rename_outputs(onnx_program.model, output_names)
    return onnx_program
