"""Run an ONNX model (onnx_ir) with onnxruntime on torch inputs, optionally with extra outputs.

The inputs are matched to the ONNX graph inputs through the exported program's signature, not
by zipping flattened arguments: a Python int or None argument is baked into the graph as a
constant and has no ONNX input (the stock `ONNXProgram.__call__` zips and then feeds the wrong
tensor to the wrong input).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import torch
from torch.export import graph_signature

from onnxlens.exporter.torch_internals.active import internals

class RuntimeProblem(Exception):
    """A reason verification cannot run, phrased for the user."""


class TorchFailed(Exception):
    """torch raised while running the program: the error and the FX node it was running.

    `assertion`: the runtime assertion torch.export put in the program that failed first, when
    the op it guards failed once the assertions were left out (the op is where the line is: an
    assertion node sits where its sizes became known, not where the guard came from)."""

    def __init__(self, error: BaseException, node: Any, assertion: str | None = None) -> None:
        super().__init__(str(error))
        self.error = error
        self.node = node  # torch.fx.Node, None when no node was running
        self.assertion = assertion

    @property
    def text(self) -> str:
        """`RuntimeError: DefaultCPUAllocator: can't allocate memory: ...` (its first line)."""
        lines = [line.strip() for line in str(self.error).strip().splitlines() if line.strip()]
        return f"{type(self.error).__name__}: {lines[0][:500] if lines else ''}".rstrip(": ")


def is_assertion(node: Any) -> bool:
    """A runtime assertion torch.export inserted (`aten._assert_scalar`, `sym_constrain_range` ...)."""
    name = str(getattr(node, "target", ""))
    return node.op == "call_function" and (name.startswith("aten._assert") or name.startswith("aten.sym_constrain_range"))


def run_torch(program: Any, graph_inputs: Sequence[Any]) -> tuple:
    """The program's outputs on its graph inputs (internals.graph_module_inputs), run node by node
    by a torch.fx.Interpreter, so that a failure names the node that raised (TorchFailed). Values
    are freed after their last use, as the graph module's own code does. A failed runtime
    assertion is run again without the assertions, to name the op that fails at these sizes."""
    try:
        return _interpret(program, graph_inputs, skip_assertions=False)
    except TorchFailed as failed:
        if failed.node is None or not is_assertion(failed.node):
            raise
        try:
            _interpret(program, graph_inputs, skip_assertions=True)
        except TorchFailed as op_failed:
            if op_failed.node is not None:
                raise TorchFailed(op_failed.error, op_failed.node, assertion=failed.text) from op_failed.error
        raise


def _interpret(program: Any, graph_inputs: Sequence[Any], *, skip_assertions: bool) -> tuple:
    class _Run(torch.fx.Interpreter):
        def run_node(self, n):
            if skip_assertions and is_assertion(n):
                return None
            try:
                return super().run_node(n)
            except TorchFailed:
                raise
            except Exception as error:  # noqa: BLE001 - whatever the op raised
                raise TorchFailed(error, n) from error

    try:
        with torch.no_grad():
            outputs = _Run(program.graph_module).run(*graph_inputs)
    except TorchFailed as failed:
        raise TorchFailed(failed.error, failed.node) from failed.error  # without the interpreter's note
    except Exception as error:  # noqa: BLE001 - outside any node (the inputs' placeholders)
        raise TorchFailed(error, None) from error
    return tuple(outputs) if isinstance(outputs, (tuple, list)) else (outputs,)


def user_inputs(exported_program: Any, args: tuple, kwargs: dict) -> list[Any]:
    """The flat user arguments that became ONNX graph inputs, in graph-input order."""
    try:
        flat = internals.flat_user_args(exported_program, args, kwargs)
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
    return {value.name: ort_value(value, arg) for value, arg in zip(graph_inputs, inputs)}


def ort_value(value: Any, arg: Any) -> Any:
    """torch's `arg` as onnxruntime takes it for the ONNX value `value`: a tensor as it is
    (bfloat16 included; complex as real pairs), a Python or symbolic scalar as an array of the
    element type the graph declares, of the value's shape when it is static."""
    if isinstance(arg, torch.Tensor) and arg.is_complex():
        arg = torch.view_as_real(arg.resolve_conj())
    if isinstance(arg, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        arg = internals.size_hint(arg)
    if isinstance(arg, (bool, int, float)):
        import onnxruntime as ort

        array = np.array(arg, dtype=value.dtype.numpy() if value.dtype is not None else None)
        if value.shape is not None and value.shape.is_static():
            array = array.reshape([int(dim) for dim in value.shape])
        return ort.OrtValue.ortvalue_from_numpy(array)
    if isinstance(arg, torch.Tensor):
        return internals.to_ort_value(arg)
    raise RuntimeProblem(f"input {value.name!r} is a {type(arg).__name__}, not a tensor")


class Sessions:
    """onnxruntime CPU sessions for one model, optionally with extra graph outputs.

    The weights are never serialized: the session gets the model without its weights' data
    (graph_only.py: each initializer over 256 bytes an external reference) and the weights
    themselves as OrtValues over the tensors' own memory (`add_external_initializers`, which
    replaces external initializers by name). Serializing BERT-base's 440 MB into the proto and
    having onnxruntime parse it back cost ~10 s of a ~12 s verification; no protobuf size limit
    applies either. A session with extra outputs appends them to that small proto only, so the
    caller's model is never changed.
    """

    def __init__(self, model: Any) -> None:
        self.model = model
        self._proto = None
        self._weights: tuple[list[str], list[Any]] | None = None  # kept alive with the sessions
        self._plain: Any = None  # the session without extra outputs, once made

    def session(self, extra_outputs: Sequence[Any] = (), *, only: bool = False, profiler: Any = None) -> Any:
        """A session with `extra_outputs` added to the model's; `only`: with those outputs alone
        and the nodes they need (the values before a node that fails, without running it).
        `profiler` (profiling.py: Profiler) profiles the session: a session of its own, never the
        kept plain one (its profile ends with the run it was made for)."""
        import onnx_ir as ir

        from onnxlens.exporter.pipeline.target.graph_only import graph_only_model

        if not extra_outputs and not only and profiler is None and self._plain is not None:
            return self._plain
        if self._proto is None:
            self._proto = graph_only_model(self.model, _WEIGHTS_IN_MEMORY)
            self._weights = _external_weights(self.model, self._proto)
        extra = [ir.serde.serialize_value(v) for v in extra_outputs]
        if only:
            data = _pruned(self._proto, extra).SerializeToString()
        else:
            outputs = self._proto.graph.output
            count = len(outputs)
            outputs.extend(extra)
            try:
                data = self._proto.SerializeToString()
            finally:
                del outputs[count:]
        session = new_session(data, self._weights, profiler)
        if not extra_outputs and not only and profiler is None:
            self._plain = session  # the plain session serves every run of the model's own outputs
        return session


def _pruned(proto: Any, outputs: list[Any]) -> Any:
    """A copy of `proto` whose graph has `outputs` as its outputs and only the nodes they need
    (onnxruntime runs every node of a graph, needed or not)."""
    copy = type(proto)()
    copy.CopyFrom(proto)
    graph = copy.graph
    needed = {output.name for output in outputs}
    kept = []
    for node in reversed(graph.node):  # topologically sorted: users after producers
        if any(name in needed for name in node.output):
            kept.append(_copy(node))
            needed.update(node.input)
            needed.update(_names_in_subgraphs(node))
    del graph.node[:]
    graph.node.extend(reversed(kept))
    del graph.output[:]
    graph.output.extend(outputs)
    return copy


def _names_in_subgraphs(node: Any) -> set[str]:
    """Every value name a node's subgraphs read (outer-scope values among them)."""
    names: set[str] = set()
    for attribute in node.attribute:
        for sub in [attribute.g] if attribute.HasField("g") else list(attribute.graphs):
            for inner in sub.node:
                names.update(inner.input)
                names.update(_names_in_subgraphs(inner))
    return names


def _copy(message: Any) -> Any:
    copy = type(message)()
    copy.CopyFrom(message)
    return copy


# The location the session's proto gives its initializers: never a file, onnxruntime gets the
# data from memory.
_WEIGHTS_IN_MEMORY = "onnxlens-weights-in-memory"


def _external_weights(model: Any, proto: Any) -> tuple[list[str], list[Any]]:
    """Names and OrtValues of the initializers `proto` declares as external."""
    import onnx

    tensors = {name: value.const_value for graph in model.graphs() for name, value in graph.initializers.items()}
    names, values = [], []
    for graph in _graphs(proto.graph):
        for initializer in graph.initializer:
            if initializer.data_location == onnx.TensorProto.EXTERNAL:
                names.append(initializer.name)
                values.append(_ort_value(tensors[initializer.name]))
    return names, values


def _graphs(graph: Any) -> Any:
    """A GraphProto and every subgraph in its nodes' attributes."""
    yield graph
    for node in graph.node:
        for attribute in node.attribute:
            for sub in [attribute.g] if attribute.HasField("g") else list(attribute.graphs):
                yield from _graphs(sub)


def _ort_value(tensor: Any) -> Any:
    """An OrtValue over the tensor's data (torch tensors as the exporter converts them, bfloat16
    and 8-bit floats included)."""
    import onnxruntime as ort

    raw = getattr(tensor, "raw", None)
    if isinstance(raw, torch.Tensor):
        return internals.to_ort_value(raw.detach().cpu().contiguous())
    array = np.ascontiguousarray(tensor.numpy())
    if type(array.dtype).__module__.startswith("ml_dtypes") or array.dtype.type.__module__.startswith("ml_dtypes"):
        # bfloat16 and the 8-bit floats (folded constants hold them as ml_dtypes arrays, which
        # onnxruntime cannot take as such): their bits, with the ONNX element type beside them.
        bits = array.view(np.uint8 if array.dtype.itemsize == 1 else np.uint16)
        return ort.OrtValue.ortvalue_from_numpy_with_onnx_type(bits, onnx_element_type=int(tensor.dtype))
    return ort.OrtValue.ortvalue_from_numpy(array)


def new_session(source: str | bytes, weights: tuple[list[str], list[Any]] | None = None, profiler: Any = None) -> Any:
    import onnxruntime as ort

    options = ort.SessionOptions()
    if weights and weights[0]:
        options.add_external_initializers(*weights)
    options.log_severity_level = 3  # errors only
    # As many threads as torch may use in this process (the worker's children run with 1 unless
    # raised), and no busy-waiting: on a shared machine (several jobs, other processes) a
    # spinning pool sized to every core ran the encoder 2-3x slower than one thread.
    options.intra_op_num_threads = max(1, torch.get_num_threads())
    options.inter_op_num_threads = 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    if profiler is not None:
        profiler.configure(options)
    return ort.InferenceSession(source, sess_options=options, providers=["CPUExecutionProvider"])


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
    return internals.from_ort_value(value)
