"""The translate stage: the decomposed program to an ONNX model, as `_core.export` does it.

Translation with the job's registry and conversion to the target opset: the public API's own
steps (optimize.py does the rest of them), so the model is byte-identical to
`torch.onnx.export(..., dynamo=True)`'s. When this stage ends, every error the stock exporter
could raise is known (pipeline/__init__.py: `settles`). On failure, every node whose translation
fails is a finding of its own (translation_failures.py); a translation that succeeds is never run
twice.
"""

from __future__ import annotations

from typing import Any

from onnxlens.exporter.pipeline.job import Job
from onnxlens.exporter.pipeline.untranslatable.translation_failures import failure_findings
from onnxlens.exporter.torch_internals.active import internals


def run(job: Job) -> None:
    try:
        job.onnx_program = translate(job.decomposed, job.registry, job.opset)
    except Exception as error:  # noqa: BLE001 - any translation failure is a finding
        job.error = error
        job.fail(failure_findings(job, error))


def translate(decomposed: Any, registry: Any, opset: int) -> Any:
    """`_core.export` step 3: translate, then convert to the opset."""
    return internals.translate(decomposed, registry, opset)
