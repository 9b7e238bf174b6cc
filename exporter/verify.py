"""Verification: run the ONNX model with onnxruntime on the example inputs and compare with torch.

STUB (interface only): the verification helper implements it.
"""

from __future__ import annotations

from typing import Any

from onnxlens.exporter.types import Finding


def verify(exported_program: Any, onnx_program: Any, args: tuple, kwargs: dict, *,
           rtol: float = 1e-3, atol: float = 1e-5) -> tuple[dict[str, Any], list[Finding]]:
    """Compare onnxruntime with torch on (args, kwargs).

    Returns the verification summary {"max_abs_diff", "max_rel_diff", "passed"} and, on a
    mismatch, one `mismatch` Finding on the source line of the FIRST intermediate value past
    tolerance (found with a single onnxruntime session), naming its module path.
    `exported_program` is the torch.export ExportedProgram the ONNX model was built from
    (after decomposition), `onnx_program` the torch.onnx.ONNXProgram.
    """
    raise NotImplementedError
