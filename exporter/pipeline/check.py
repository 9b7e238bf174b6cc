"""The check stage: onnx.checker on the ONNX model (full check), as a finding on the op's line.

A weights-free model (weights.py) cannot be serialized with its weights: its graph-only model
(graph_only.py) is built here, once, for the save to write, and the checker runs on a copy of
it with the initializers as declared inputs: no data is read, so no size limit applies.
"""

from __future__ import annotations

import os

import onnxlens.exporter.pipeline.graph_only as graph_only
from onnxlens.exporter.pipeline.errors import fail_on
from onnxlens.exporter.pipeline.job import Job

# A protobuf message cannot exceed 2 GB: the checker cannot take such a model in memory.
_CHECKER_LIMIT = 1_800_000_000


def run(job: Job) -> None:
    from torch.onnx._internal.exporter import _onnx_program

    if job.weights_free is not None:
        data_file = os.path.basename(job.spec.graph_output) + ".data"  # never written
        try:
            job.graph_only = graph_only.graph_only_model(job.onnx_program.model, data_file)
        except Exception as error:  # noqa: BLE001 - a tensor of a kind we did not foresee
            fail_on(job, error, "translation", "building the graph-only model (without weights) failed")
        _check(job, graph_only.checkable(job.graph_only))
        return
    if _onnx_program._count_initializer_size(job.onnx_program.model.graph) > _CHECKER_LIMIT:
        job.log("model weights over 2 GB: onnx.checker skipped")
        return
    _check(job, job.onnx_program.model_proto)


def _check(job: Job, proto: object) -> None:
    import onnx

    try:
        onnx.checker.check_model(proto, full_check=True)
    except Exception as error:  # noqa: BLE001 - checker errors come in several types
        fail_on(job, error, "onnx-checker", "onnx.checker rejected the model")
