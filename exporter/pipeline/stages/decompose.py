"""The decompose stage: the captured program run through the ONNX-friendly decompositions.

As `_core._prepare_exported_program_for_export` does it, with the decomposition tables built
once per process (tables.py) and the target's extra decompositions (decompositions.py).
Afterwards each node's stack_trace is put back to the stock one (stacks.py): the stack_trace that
reaches translation is the stock one (byte identity). The full traces kept for our own use reach
through the code torch.fx generated for higher-order op bodies to the lines it came from
(generated_code.py).
"""

from __future__ import annotations

from onnxlens.exporter.pipeline.decompositions import decompose, job_decompositions
from onnxlens.exporter.pipeline.failures.errors import fail_on
from onnxlens.exporter.pipeline.job import Job
from onnxlens.exporter.pipeline.tracing.generated_code import trace_generated_code
from onnxlens.exporter.pipeline.tracing.stacks import restore_stock_traces


def run(job: Job) -> None:
    try:
        job.decomposed = decompose(job.program, job_decompositions(job))
        restore_stock_traces(job.decomposed, job.anchors)
    except Exception as error:  # noqa: BLE001 - any decomposition failure is a finding
        fail_on(job, error, "decomposition", "decomposing the exported program failed")
        return
    try:
        trace_generated_code(job.decomposed, job.program)
    except Exception as error:  # noqa: BLE001 - our own addition: the lines stay as torch recorded them
        job.log(f"could not trace generated code back to its lines: {type(error).__name__}: {error}")
