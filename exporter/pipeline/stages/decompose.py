"""The decompose stage: the captured program run through the ONNX-friendly decompositions.

As `_core._prepare_exported_program_for_export` does it, with the decomposition tables built
once per process (tables.py). Afterwards each node's stack_trace is put back to the stock one
(stacks.py): the stack_trace that reaches translation is the stock one (byte identity).
"""

from __future__ import annotations

from typing import Any

from onnxlens.exporter.proposals.decomposition_offers import extra_table
from onnxlens.exporter.pipeline.failures.errors import fail_on
from onnxlens.exporter.pipeline.job import Job
from onnxlens.exporter.pipeline.tracing.stacks import restore_stock_traces
from onnxlens.exporter.pipeline.tables import DecompositionTables
from onnxlens.exporter.torch_internals.active import internals
from onnxlens.exporter.types import Finding


def run(job: Job) -> None:
    try:
        job.decomposed = decompose(job.program, job_decompositions(job))
        restore_stock_traces(job.decomposed, job.anchors)
    except Exception as error:  # noqa: BLE001 - any decomposition failure is a finding
        fail_on(job, error, "decomposition", "decomposing the exported program failed")


def job_decompositions(job: Job) -> DecompositionTables:
    """The process's tables for the job's registry, with the target's `extra-decompositions`
    (decomposition_offers.py) added; a name torch cannot resolve is a warning, once a job."""
    tables = job.tables.decompositions(job.registry, job.custom_key)
    names = job.spec.extra_decompositions
    if not names:
        return tables
    extra, problems = extra_table(names)
    if problems and not any(f.stage == "decompose" and f.code == "config" for f in job.result.findings):
        job.result.findings.append(Finding(
            code="config", severity="warning", stage="decompose", location=job.fallback,
            message="extra-decompositions: " + "; ".join(problems)))
    for op in extra:
        tables.cia_to_decomp.pop(op, None)  # decomposed with torch's function, not kept
    tables.python_decomp_table.update(extra)
    return tables


def decompose(program: Any, tables: Any) -> Any:
    """`_core._prepare_exported_program_for_export`, with the decomposition tables given
    (tables.py's DecompositionTables)."""
    return internals.decompose(program, tables.cia_to_decomp, tables.python_decomp_table, tables.recorded_override)
