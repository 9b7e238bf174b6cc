"""Weights-free models: tensors on the meta device, or FakeTensors; the one rule, and its note.

A model built under `with torch.device("meta")` (or in a FakeTensorMode) has every parameter's
shape and dtype but no data: a 7B Llama costs nothing to build. torch.export captures it and the
exporter translates it, but three stock steps read weights and fail ("Cannot copy out of meta
tensor; no data!"): `onnx_program.optimize()` (constant folding), onnxruntime verification and
saving the initializers. For such a model the pipeline skips the first two, checks the graph
without data and writes a graph-only .onnx beside the target's output (graph_only.py); this
module decides which models those are (`weights_free`, one rule for every stage: the result is
recorded on the Job at load) and writes the `weights-free` info finding that says what happened.

torch.export needs the inputs on the weights' device: a meta model given CPU example inputs
fails with "Expected all tensors to be on the same device" in both capture strategies. Users
write one `inputs` factory and build the model on meta to save memory, so the example inputs'
tensors are moved to meta (`inputs_on_meta`): tracing only reads their shapes and dtypes, and
nothing runs them (verification is skipped). A FakeTensor model captures with real inputs and
fails with meta ones: its inputs are left alone.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Iterator

from onnxlens.exporter.torch_internals.active import internals
from onnxlens.exporter.types import Finding, Location, TargetSpec

CODE = "weights-free"


@dataclass
class WeightsFree:
    """What a weights-free model lacks: its tensors without data, counted."""

    device: str  # "meta" or "fake": what the tensors without data are
    parameters: int  # parameter elements without data
    tensors: int  # tensors without data: parameters and buffers
    nbytes: int  # what their data would take
    dtypes: list[str] = field(default_factory=list)  # their dtypes, most bytes first
    with_data: int = 0  # parameters and buffers that do have data (a partly materialised model)
    inputs_moved: int = 0  # example input tensors moved to meta (see the module docstring)

    def describe(self) -> str:
        """'6,738,415,616 parameters (26.95 GB as float32) are on the meta device'."""
        where = "on the meta device" if self.device == "meta" else "FakeTensors"
        as_dtype = f" as {'/'.join(self.dtypes)}" if self.dtypes else ""
        if self.parameters:
            what, verb = f"{self.parameters:,} parameters", "are"
        else:  # buffers or tensor attributes only
            what, verb = f"{self.tensors} tensor{'s' * (self.tensors != 1)}", "is" if self.tensors == 1 else "are"
        partly = (f" ({self.with_data} other tensor{'s' * (self.with_data != 1)} of the model "
                  f"{'have' if self.with_data != 1 else 'has'} data)" if self.with_data else "")
        return f"{what} ({_size(self.nbytes)}{as_dtype}) {verb} {where}{partly}"


def has_no_data(tensor: Any) -> bool:
    """The rule: a tensor on the meta device, or a FakeTensor (shape and dtype, no storage)."""
    return bool(tensor.is_meta or internals.is_fake(tensor))


def weights_free(model: Any) -> WeightsFree | None:
    """The model's parameters and buffers without data, counted; None when all have data.

    One tensor without data is enough: optimize, verification and the save all read every
    initializer, so a partly materialised model fails them just the same. Plain tensor
    attributes are not looked at: a stray one on meta must not turn a model with weights into a
    graph-only export (one used in forward fails the capture against CPU inputs anyway)."""
    parameters = tensors = nbytes = with_data = 0
    by_dtype: dict[str, int] = {}
    fake = False
    for tensor, is_parameter in _parameters_and_buffers(model):
        if not has_no_data(tensor):
            with_data += 1
            continue
        fake = fake or not tensor.is_meta
        size = tensor.numel() * tensor.element_size()
        tensors += 1
        nbytes += size
        parameters += tensor.numel() if is_parameter else 0
        name = str(tensor.dtype).removeprefix("torch.")
        by_dtype[name] = by_dtype.get(name, 0) + size
    if not tensors:
        return None
    dtypes = sorted(by_dtype, key=lambda name: -by_dtype[name])
    return WeightsFree(device="fake" if fake else "meta", parameters=parameters, tensors=tensors,
                       nbytes=nbytes, dtypes=dtypes, with_data=with_data)


def _parameters_and_buffers(model: Any) -> Iterator[tuple[Any, bool]]:
    """(tensor, is a parameter) for each distinct parameter and buffer (shared ones once)."""
    yield from ((parameter, True) for parameter in model.parameters())
    yield from ((buffer, False) for buffer in model.buffers())


def inputs_on_meta(args: tuple, kwargs: dict) -> tuple[tuple, dict, int]:
    """The example inputs with every tensor that has data moved to the meta device (same shape
    and dtype), and how many were moved."""
    import torch

    moved = 0

    def to_meta(value: Any) -> Any:
        nonlocal moved
        if isinstance(value, torch.Tensor) and not has_no_data(value):
            moved += 1
            return value.to("meta")
        return value

    args, kwargs = internals.tree_map(to_meta, (tuple(args), dict(kwargs)))
    return args, kwargs, moved


def note(found: WeightsFree, spec: TargetSpec, *, checked: bool, graph_onnx: str | None,
         location: Location | None) -> Finding:
    """The `weights-free` info finding, at the model's definition (`location`): what the model
    lacks, what was skipped, whether the graph was `checked`, and what was written (`graph_onnx`,
    or nothing)."""
    lines = [f"weights-free model: {found.describe()}: onnxlens exports its graph only, without weights."]
    if found.inputs_moved:
        count = found.inputs_moved
        lines.append(f"{count} tensor{'s' * (count != 1)} of the example inputs {'were' if count != 1 else 'was'} "
                     "moved to the meta device: torch.export needs the inputs on the weights' device, and only "
                     "their shapes and dtypes are used.")
    skipped = ["ONNX graph optimization (onnx_program.optimize(): its constant folding reads weights)"]
    if spec.verify:
        skipped.append("verification with onnxruntime (no weights to run)")
    lines.append("Skipped: " + "; ".join(skipped) + ".")
    if checked:
        lines.append("Checked without data: onnx.checker (full check, shape inference included) on the graph, "
                     "the initializers declared as inputs.")
    if graph_onnx:
        data = os.path.basename(graph_onnx) + ".data"
        lines.append(f"Written: the graph-only model {_shown(graph_onnx, spec.root)} (every initializer "
                     f"declared with its dtype and shape, without data: the external data file it names, {data}, "
                     "is not written; load it with onnx.load(..., load_external_data=False)).")
    else:
        lines.append("Written: nothing (the export stopped at an error).")
    output = _shown(spec.output, spec.root)
    if os.path.exists(spec.output):
        lines.append(f"Not touched: {output}, the last .onnx with weights (from an earlier export).")
    else:
        lines.append(f"No .onnx with weights was written ({output} does not exist).")
    return Finding(code=CODE, severity="info", stage="load", location=location, message="\n".join(lines))


def _shown(path: str, root: str) -> str:
    """Workspace-relative when inside the workspace, as the report shows paths."""
    relative = os.path.relpath(path, root)
    return path if relative.startswith("..") else relative


def _size(nbytes: int) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if nbytes >= scale:
            return f"{nbytes / scale:.2f} {unit}"
    return f"{nbytes} bytes"
