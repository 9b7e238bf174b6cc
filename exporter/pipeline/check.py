"""The check stage: onnx.checker on the ONNX model (full check), as a finding on the op's line."""

from __future__ import annotations

from onnxlens.exporter.pipeline.errors import fail_on
from onnxlens.exporter.pipeline.job import Job

# A protobuf message cannot exceed 2 GB: the checker cannot take such a model in memory.
_CHECKER_LIMIT = 1_800_000_000


def run(job: Job) -> None:
    import onnx
    from torch.onnx._internal.exporter import _onnx_program

    if _onnx_program._count_initializer_size(job.onnx_program.model.graph) > _CHECKER_LIMIT:
        job.log("model weights over 2 GB: onnx.checker skipped")
        return
    try:
        onnx.checker.check_model(job.onnx_program.model_proto, full_check=True)
    except Exception as error:  # noqa: BLE001 - checker errors come in several types
        fail_on(job, error, "onnx-checker", "onnx.checker rejected the model")
