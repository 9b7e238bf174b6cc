"""The markdown export report, written for every export, success or failure.

STUB (interface only): the report helper implements it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from onnxlens.exporter.types import ExportResult, TargetSpec


@dataclass
class ReportInputs:
    """What the pipeline got as far as producing; every field is optional."""

    exported_program: Any = None  # torch.export.ExportedProgram as captured
    decomposed_program: Any = None  # after run_decompositions
    onnx_program: Any = None  # torch.onnx.ONNXProgram
    registry: Any = None  # the ONNX registry used
    error: BaseException | None = None  # the exception that stopped the pipeline, if any
    model: Any = None  # the nn.Module


def write_report(spec: TargetSpec, result: ExportResult, inputs: ReportInputs) -> str:
    """Write the report to spec.report (atomically) and return its path.

    Our findings first (each with file:line, code and source excerpt), then the torch report
    sections (exported program, analysis, decomposition comparison, verification).
    """
    raise NotImplementedError
