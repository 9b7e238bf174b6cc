"""The graph-only .onnx of a weights-free model (weights.py): the model without its weights.
(The check stage checks every model in this form: onnx.checker needs no weights.)

The stock exporter cannot save a model whose weights have no data (it reads every initializer:
"Cannot copy out of meta tensor; no data!"), and `export_params=False` drops the initializers
altogether, which leaves nodes reading names nothing defines (onnx.checker rejects it). Here
each initializer stays declared with its name, dtype and shape, as an external-data reference
(`data_location: EXTERNAL`, with location, offset and length) into a data file that is never
written: `<name>.graph.onnx.data`, a name no export writes, so the file can never be paired
with the weights of another model. The layout follows the stock save (`ir.save`): tensors over
256 bytes go to the data file, densely packed in declaration order, and smaller ones stay inline
if they have data (a small constant the model made on the CPU); smaller ones without data go to
the data file too. The model's `metadata_props` say it is graph-only.

Nothing here reads a tensor's data, so memory does not grow with the weights: the proto holds
the graph and the tensors' descriptions only. Load the file with
`onnx.load(path, load_external_data=False)`.

It goes to `TargetSpec.graph_output` (`<name>.graph.onnx` next to the output), never to the
output itself: the .onnx with weights of an earlier export is the last good model, and a file
without weights must never replace it. Written atomically (exporter/atomic.py).
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator

import onnx
import onnx_ir as ir

from onnxlens.exporter import atomic
from onnxlens.exporter.types import WrittenFile
from onnxlens.exporter.pipeline.target.weights import has_no_data

# ir.save's `size_threshold_bytes`: the stock save keeps tensors up to this size in the .onnx.
INLINE_LIMIT = 256
METADATA_KEY = "onnxlens.graph_only"


def graph_only_model(model: ir.Model, data_file: str) -> onnx.ModelProto:
    """The model as a ModelProto whose initializers name `data_file` for their data.

    `data_file` is relative to the .onnx, as external data locations are."""
    with _without_data(model, data_file):
        proto = ir.serde.serialize_model(model)
    proto.metadata_props.add(key=METADATA_KEY, value=(
        f"weights not included: the model's weights had no data (meta device or FakeTensors) when "
        f"it was exported; {data_file}, which the initializers name, was not written"))
    return proto


@contextlib.contextmanager
def _without_data(model: ir.Model, data_file: str) -> Iterator[None]:
    """Each initializer's tensor replaced by an external reference of its size, then put back
    (as ir.save does: the model is unchanged afterwards)."""
    replaced: list[tuple[ir.Value, Any]] = []
    offset = 0
    try:
        for graph in model.graphs():
            for value in graph.initializers.values():
                tensor = value.const_value
                if tensor is None or (tensor.nbytes <= INLINE_LIMIT and not _lacks_data(tensor)):
                    continue
                replaced.append((value, tensor))
                value.const_value = ir.ExternalTensor(data_file, offset, tensor.nbytes, tensor.dtype,
                                                      shape=tensor.shape, name=value.name)
                offset += tensor.nbytes
        yield
    finally:
        for value, tensor in replaced:
            value.const_value = tensor


def _lacks_data(tensor: Any) -> bool:
    """A TorchTensor (the exporter's initializer) wrapping a tensor without data."""
    import torch

    raw = getattr(tensor, "raw", None)
    return isinstance(raw, torch.Tensor) and has_no_data(raw)


def checkable(proto: onnx.ModelProto) -> onnx.ModelProto:
    """A copy for onnx.checker: the external initializers declared as graph inputs instead.

    The checker opens external data files (a reference to a missing one is an error); as
    inputs of the same name, dtype and shape, the graph checks and its shapes infer just the
    same, without data. The main graph only: the exporter puts every weight there (subgraphs
    of torch.cond and loops read them from the outer scope), and a subgraph's inputs are fixed
    by its op."""
    checked = onnx.ModelProto()
    checked.CopyFrom(proto)
    graph = checked.graph
    kept = []
    for tensor in graph.initializer:
        if tensor.data_location == onnx.TensorProto.EXTERNAL:
            graph.input.append(onnx.helper.make_tensor_value_info(tensor.name, tensor.data_type, list(tensor.dims)))
        else:
            kept.append(tensor)
    del graph.initializer[:]
    graph.initializer.extend(kept)
    return checked


def save(proto: onnx.ModelProto, destination: str) -> WrittenFile:
    """The graph-only model written atomically to `destination`, as written."""
    return atomic.write_recorded(destination, proto.SerializeToString())
