"""The job's decomposition tables and the decomposition run with them.

The process's tables (tables.py) for the job's registry, with the target's
`extra-decompositions` (proposals/decomposition_offers.py) added; the decomposition is
`_core._prepare_exported_program_for_export` with those tables. The decompose stage runs it on
the captured program, the scan on a strict re-capture when it locates ops in torch.cond branches.
"""

from __future__ import annotations

from typing import Any

from onnxlens.exporter.pipeline.job import Job
from onnxlens.exporter.pipeline.tables import DecompositionTables
from onnxlens.exporter.proposals.decomposition_offers import extra_table
from onnxlens.exporter.torch_internals.active import internals
from onnxlens.exporter.types import Finding


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
