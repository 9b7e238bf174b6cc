"""What each line of the user's code produced: the values it hands on, in torch's terms, with
symbolic sizes by the names the target declared, and the modules whose forward ran it (for the
inlay hints: `[batch, 16, 256] f32 ×6 in layers.0–5`).

From the program the ONNX graph was translated from: each FX node's value (`meta["val"]`) is
what torch computed there, shapes and dtypes exact, where an ONNX value may have been folded
away. A node belongs to the line the one location rule gives its trace (exporter/locations, as
for findings and hover). A line *produces* the values of its nodes that a node of another line
uses (or the same line run by another module: a block's line feeds the next block's), or the
program returns: the result of its code, not the steps in between.

torch names a symbolic size `s0`, `s77`; the target's dynamic-shapes spec names it (`"batch"`,
`Dim("seq")`), and the exporter wrote those names onto the ONNX model's inputs. The program's
inputs and the model's inputs are the same values in the same order, so pairing their sizes
maps each of torch's symbols to its declared name (`s77*s53` becomes `batch*seq`).
"""

from __future__ import annotations

import dataclasses
import os
import re
from typing import Any

import onnx_ir as ir
import torch

from onnxlens.exporter.locations import (Frame, Workspace, from_stack_trace, module_stack, node_trace,
                                         primary_index, running_module)
from onnxlens.exporter.types import LineInfo

MAX_PRODUCED = 4  # distinct values shown per line
_SYMBOL = re.compile(r"[A-Za-z_]\w*")
_DTYPE = re.compile(r"^(bfloat|float|uint|int|complex)(\d+)$")
_DTYPE_PREFIX = {"bfloat": "bf", "float": "f", "uint": "u", "int": "i", "complex": "c"}


@dataclasses.dataclass(frozen=True)
class _Origin:
    """Where a node comes from: the line, and the module whose forward ran it. A line that runs
    in several modules (a block's line, in 32 layers) hands its value from one run to the next."""

    file: str
    line: int
    module: str | None


def add_values(infos: list[LineInfo], program: Any, model: ir.Model, workspace: Workspace) -> list[LineInfo]:
    """`infos` with each line's produced values and the modules it ran in; lines whose nodes
    the ONNX model no longer has (folded into constants) are added."""
    names = dim_names(program, model)
    by_line = {(info.file, info.line): info for info in infos}
    nodes = [node for node in program.graph.nodes if node.op == "call_function"]
    origin_of = _origins(nodes, workspace)
    for node in nodes:
        origin = origin_of[node]
        value = node.meta.get("val")
        if origin is None or not isinstance(value, torch.Tensor):
            continue
        if all(origin_of.get(user) == origin for user in node.users):
            continue  # a step inside the line (in the same run of it), or a value nothing uses
        info = by_line.get((origin.file, origin.line))
        if info is None:
            info = by_line[(origin.file, origin.line)] = LineInfo(file=origin.file, line=origin.line)
        text = describe_tensor(value, names)
        if text not in info.produced and len(info.produced) < MAX_PRODUCED:
            info.produced.append(text)
        if origin.module is not None and origin.module not in info.ran_in:
            info.ran_in.append(origin.module)
    return sorted(by_line.values(), key=lambda info: (info.file, info.line))


def _origins(nodes: list[Any], workspace: Workspace) -> dict[Any, _Origin | None]:
    """Each node's origin; None without a line of the user's code. Each trace is parsed once."""
    primaries: dict[str | None, tuple[list[Frame], int, str] | None] = {}  # trace -> frames, primary, its real path
    origins: dict[Any, _Origin | None] = {}
    for node in nodes:
        trace = node_trace(node.meta)
        if trace not in primaries:
            frames = from_stack_trace(trace)
            index = primary_index(frames, workspace)
            primaries[trace] = (frames, index, os.path.realpath(frames[index].file)) if index is not None else None
        primary = primaries[trace]
        if primary is None:
            origins[node] = None
            continue
        frames, index, file = primary
        origins[node] = _Origin(file, frames[index].line, running_module(frames, index, module_stack(node.meta)))
    return origins


def dim_names(program: Any, model: ir.Model) -> dict[str, str]:
    """torch's symbol -> the name the ONNX model's inputs give that size ("s77" -> "batch")."""
    user_inputs = {spec.arg.name for spec in program.graph_signature.input_specs
                   if spec.kind.name == "USER_INPUT" and hasattr(spec.arg, "name")}
    tensors = [node.meta.get("val") for node in program.graph.nodes
               if node.op == "placeholder" and node.name in user_inputs]
    tensors = [value for value in tensors if isinstance(value, torch.Tensor)]
    inputs = list(model.graph.inputs)
    if len(tensors) != len(inputs):
        return {}
    names: dict[str, str] = {}
    for value, onnx_input in zip(tensors, inputs):
        if onnx_input.shape is None or len(onnx_input.shape) != value.dim():
            continue
        for size, dim in zip(value.shape, onnx_input.shape):
            symbol = str(size)
            name = getattr(dim, "value", None)
            if isinstance(size, torch.SymInt) and _SYMBOL.fullmatch(symbol) and name and name != symbol:
                names.setdefault(symbol, name)
    return names


def describe_tensor(value: torch.Tensor, names: dict[str, str]) -> str:
    """"[batch, 16, 256] f32"."""
    sizes = [_SYMBOL.sub(lambda m: names.get(m.group(0), m.group(0)), str(size)) for size in value.shape]
    return f"[{', '.join(sizes)}] {short_dtype(value.dtype)}"


def short_dtype(dtype: torch.dtype) -> str:
    """torch.float32 -> "f32", torch.bfloat16 -> "bf16", torch.bool -> "bool"."""
    name = str(dtype).removeprefix("torch.")
    match = _DTYPE.match(name)
    return f"{_DTYPE_PREFIX[match.group(1)]}{match.group(2)}" if match else name
