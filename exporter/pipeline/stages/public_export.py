"""The public path: torch without an adapter exports through `torch.onnx.export(..., dynamo=True)`.

When onnxlens has no adapter for the installed torch (torch_internals/public.py), the capture,
decompose, scan, translate and optimize stages are one call of the public API, run as the
translate stage (it settles the export's errors as translate does). The model is exactly what
the user's own call gives. A failure becomes ONE finding, placed only where the exception says
(failures/public_path.py); inputs or dynamic shapes that do not fit the model are the one
exception: on the factory's `return` that built them, as with an adapter (input_mistakes.py).

Coarser than the full pipeline (one problem per export, no helper-function lines, no early
findings, no verification), never on a wrong line. Every export on this path carries the
`torch-version` note (public_path.py: `notice`) saying so.
"""

from __future__ import annotations

import onnxlens.exporter.pipeline.failures.input_mistakes as input_mistakes
import onnxlens.exporter.pipeline.output.lines as lines
from onnxlens.exporter.pipeline.failures.public_path import failure_finding, torch_version
from onnxlens.exporter.pipeline.job import Job
from onnxlens.exporter.torch_internals.active import internals


def run(job: Job) -> None:
    target = job.target
    if job.spec.extra_decompositions:
        job.log(f"{job.spec.name}: extra-decompositions not applied: torch {torch_version()} has no onnxlens adapter")
    try:
        job.onnx_program = internals.export(
            target.model, target.args, target.kwargs, dynamic_shapes=target.dynamic_shapes, opset=job.opset or None,
            custom_translations=target.custom_translations, optimize=job.weights_free is None,
            input_names=job.spec.input_names, output_names=job.spec.output_names)
    except Exception as error:  # noqa: BLE001 - any export failure is a finding
        job.error = error
        job.fail([input_mistakes.finding(job, [error]) or failure_finding(job, error)])
    job.decomposed = job.onnx_program.exported_program  # what the ONNX graph was translated from
    job.result.node_count = len(job.onnx_program.model.graph)
    # Hover, lens, hints and the graph's summary: from the ONNX nodes' metadata, which the public
    # export writes too, and its program.
    lines.record(job)
    if job.spec.verify:
        job.log(f"{job.spec.name}: verification skipped: torch {torch_version()} has no onnxlens adapter")
