"""The check stage: onnx.checker on the ONNX model (full check), as a finding on the op's line.

The checker checks the graph: its ops, types and shapes. It never needs the weights' data, so
it gets the model without it (graph_only.py): the initializers over 256 bytes declared as graph
inputs of the same dtype and shape, the small ones (shape constants that shape inference reads)
kept with their data. Serializing the weights only to check them cost ~2 s on BERT-base
(440 MB) and made the checker refuse models over 2 GB (the protobuf limit); without them, a
model of any size is checked in the time its graph takes.

A weights-free model (weights.py) has no data to serialize anyway: its graph-only model is built
here, once, for the save to write, and checked the same way.
"""

from __future__ import annotations

import os

import onnxlens.exporter.pipeline.target.graph_only as graph_only
from onnxlens.exporter.pipeline.failures.errors import fail_on
from onnxlens.exporter.pipeline.job import Job

# The data file the checked copy's initializers would name: none is read (checkable() declares
# them as inputs instead).
_NOT_READ = "weights-not-read-by-the-checker"


def run(job: Job) -> None:
    import onnx

    weights_free = job.weights_free is not None
    # A weights-free model's graph-only file names its (never written) data file; the save writes it.
    data_file = os.path.basename(job.spec.graph_output) + ".data" if weights_free else _NOT_READ
    try:
        without_data = graph_only.graph_only_model(job.onnx_program.model, data_file)
    except Exception as error:  # noqa: BLE001 - a tensor of a kind we did not foresee
        fail_on(job, error, "translation", "building the model without its weights' data failed")
    if weights_free:
        job.graph_only = without_data
    try:
        onnx.checker.check_model(graph_only.checkable(without_data), full_check=True)
    except Exception as error:  # noqa: BLE001 - checker errors come in several types
        fail_on(job, error, "onnx-checker", "onnx.checker rejected the model")
