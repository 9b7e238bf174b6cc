"""Run an ONNX model (onnx_ir) with onnxruntime on torch inputs, optionally with extra outputs.

The inputs are matched to the ONNX graph inputs through the exported program's signature, not
by zipping flattened arguments: a Python int or None argument is baked into the graph as a
constant and has no ONNX input (the stock `ONNXProgram.__call__` zips and then feeds the wrong
tensor to the wrong input).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from typing import Any, Iterator, Sequence

import numpy as np
import torch
from torch.export import graph_signature
from torch.onnx._internal.exporter import _onnx_program  # to/from OrtValue incl. bfloat16

# Above this, protobuf cannot hold the model in memory: go through a file with external data.
_LARGE_MODEL_BYTES = 1_500_000_000


class RuntimeProblem(Exception):
    """A reason verification cannot run, phrased for the user."""


def user_inputs(exported_program: Any, args: tuple, kwargs: dict) -> list[Any]:
    """The flat user arguments that became ONNX graph inputs, in graph-input order."""
    try:
        flat, _ = exported_program._get_flat_args_with_check(args, kwargs)
    except Exception as error:  # noqa: BLE001 - torch raises several types for a bad structure
        raise RuntimeProblem(f"the example inputs do not match the exported program: {error}") from error
    specs = [s for s in exported_program.graph_signature.input_specs
             if s.kind == graph_signature.InputKind.USER_INPUT]
    if len(specs) != len(flat):
        return [a for a in flat if a is not None]
    return [arg for spec, arg in zip(specs, flat)
            if not isinstance(spec.arg, graph_signature.ConstantArgument) and arg is not None]


def ort_feeds(model: Any, inputs: Sequence[Any]) -> dict[str, Any]:
    graph_inputs = list(model.graph.inputs)
    if len(graph_inputs) != len(inputs):
        raise RuntimeProblem(
            f"the ONNX model has {len(graph_inputs)} inputs but the example inputs give "
            f"{len(inputs)} tensors")
    feeds = {}
    for value, arg in zip(graph_inputs, inputs):
        if isinstance(arg, torch.Tensor) and arg.is_complex():
            arg = torch.view_as_real(arg.resolve_conj())
        if isinstance(arg, (torch.SymInt, torch.SymFloat, torch.SymBool)):
            arg = arg.node.hint
        if isinstance(arg, (bool, int, float)):
            # A symbolic scalar input: use the dtype the graph declares.
            import onnxruntime as ort

            dtype = value.dtype.numpy() if value.dtype is not None else None
            feeds[value.name] = ort.OrtValue.ortvalue_from_numpy(np.array(arg, dtype=dtype))
        elif isinstance(arg, torch.Tensor):
            feeds[value.name] = _onnx_program._to_ort_value(arg)
        else:
            raise RuntimeProblem(f"input {value.name!r} is a {type(arg).__name__}, not a tensor")
    return feeds


@contextlib.contextmanager
def _model_source(model: Any) -> Iterator[str | bytes]:
    """The model as bytes, or as a file path when it is too large for one protobuf."""
    size = sum(v.const_value.nbytes for v in model.graph.initializers.values()
               if v.const_value is not None)
    if size < _LARGE_MODEL_BYTES:
        import onnx_ir as ir

        yield ir.serde.serialize_model(model).SerializeToString()
        return
    import onnx_ir as ir

    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as tmp:
        path = os.path.join(tmp, "model.onnx")
        ir.save(model, path, external_data="model.onnx.data")
        yield path


def make_session(model: Any, extra_outputs: Sequence[Any] = ()) -> Any:
    """An onnxruntime CPU session; `extra_outputs` (ir.Values) are appended as graph outputs.

    The graph's outputs are restored before returning: the caller's model is never changed.
    """
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 3  # errors only
    original = list(model.graph.outputs)
    try:
        model.graph.outputs.extend(extra_outputs)
        with _model_source(model) as source:
            return ort.InferenceSession(source, sess_options=options,
                                        providers=["CPUExecutionProvider"])
    finally:
        model.graph.outputs.clear()
        model.graph.outputs.extend(original)


def run(session: Any, feeds: dict[str, Any], output_names: Sequence[str] | None = None) -> list[torch.Tensor]:
    import onnxruntime as ort

    options = ort.RunOptions()
    options.log_severity_level = 3
    names = list(output_names) if output_names is not None else [o.name for o in session.get_outputs()]
    values = session.run_with_ort_values(names, feeds, run_options=options)
    return [_to_torch(v) for v in values]


def _to_torch(value: Any) -> Any:
    if not value.is_tensor():
        return None  # a sequence or map output: nothing torch compares directly
    return _onnx_program._from_ort_value(value)
