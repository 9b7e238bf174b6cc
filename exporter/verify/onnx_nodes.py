"""ONNX nodes named in errors (onnx.checker, shape inference, onnxruntime): which node it is, what
it computes, and which line produced it.

onnx.checker and onnxruntime name the ONNX node they reject, each in its own words
(`(op_type:Cast, node name: node_Cast_3)`, `Could not find an implementation for Mul(14) node
with name 'node_mul_4'`), and shape inference speaks of element types by number
(`Inferred elem type differs from existing elem type: (14) vs (1)`). Every node the exporter
writes keeps, in its metadata, the FX node it came from (`pkg.torch.onnx.fx_node`) and that
node's stack trace (`pkg.torch.onnx.stack_trace`): through them such an error lands on the line
that produced the node, by the one rule of exporter/locations, like every other finding.
"""

from __future__ import annotations

import re
from typing import Any, Iterator

from onnxlens.exporter.locations import Place, Workspace, call_names_for_op, from_stack_trace, locate, module_stack
from onnxlens.exporter.pipeline.tracing.stacks import full_stack_trace, graph_modules
from onnxlens.exporter.verify.divergence import FX_NODE_META, FX_NODE_NAME

STACK_TRACE_META = "pkg.torch.onnx.stack_trace"
# How onnx.checker / shape inference and onnxruntime name a node.
_NODE_NAMES = (
    re.compile(r"node name: ([^\s,)]+)"),  # onnx: (op_type:Cast, node name: node_Cast_3)
    re.compile(r"node with name '([^']+)'"),  # onnxruntime: no kernel for the types
    re.compile(r"Name:'([^']+)'"),  # onnxruntime: a kernel failed while running
    re.compile(r"[Nn]ode \(([^)]+)\)"),  # onnxruntime: type errors when loading
)
_ELEMENT_TYPES = re.compile(r"(elem type[^:]*: )\((\d+)\) vs \((\d+)\)")


def named_node(text: str, model: Any) -> Any:
    """The node of the ONNX `model` (onnx_ir; subgraphs and functions included) that `text`
    names, or None."""
    names = [match for pattern in _NODE_NAMES for match in pattern.findall(text)]
    if not names or model is None:
        return None
    by_name = {node.name: node for node in _all_nodes(model) if node.name}
    return next((by_name[name] for name in names if name in by_name), None)


def fx_node(onnx_node: Any, program: Any) -> Any:
    """The FX node of the exported `program` that `onnx_node` was translated from, or None."""
    match = FX_NODE_NAME.match(onnx_node.metadata_props.get(FX_NODE_META, ""))
    if match is None or program is None:
        return None
    return next((node for module in graph_modules(program) for node in module.graph.nodes
                 if node.name == match.group(1)), None)


def origin(node: Any, program: Any) -> Any:
    """The node of `program` that `node` (of a program derived from it: the decomposed one) was
    made from, through the provenance torch.fx records (`meta["from_node"]`), or None."""
    graph_id = id(program.graph)
    sources = list(node.meta.get("from_node") or []) if node is not None else []
    while sources:
        source = sources.pop(0)
        if getattr(source, "graph_id", None) == graph_id:
            return next((n for n in program.graph.nodes if n.name == source.name), None)
        sources.extend(getattr(source, "from_node", None) or [])
    return None


def place(onnx_node: Any, node: Any, workspace: Workspace | None) -> Place:
    """Where an FX `node` came from (its full stack trace: helper frames kept), else the ONNX
    node (the stack trace the exporter wrote into it)."""
    if node is not None:
        torch_fn = node.meta.get("torch_fn")
        return locate(from_stack_trace(full_stack_trace(node)), workspace, call_names=call_names_for_op(
            torch_fn[1] if isinstance(torch_fn, tuple) else None, str(node.target)))
    return locate(from_stack_trace(onnx_node.metadata_props.get(STACK_TRACE_META)), workspace)


def describe_fx(node: Any) -> str:
    """`node view_4 (aten.view.default) in module `encoder.block.0.layer.0.SelfAttention` (T5Attention)`."""
    text = f"node {node.name} ({node.target})"
    modules = module_stack(node.meta)
    if modules and modules[-1][0]:
        path, cls = modules[-1]
        text += f" in module `{path}` ({cls.rsplit('.', 1)[-1]})"
    return text


def describe(onnx_node: Any) -> str:
    """`ONNX node `node_mul_4` (Mul: bfloat16, bfloat16 -> bfloat16)`."""
    op = onnx_node.op_type if not onnx_node.domain else f"{onnx_node.domain}::{onnx_node.op_type}"
    inputs = ", ".join(_type(value) for value in onnx_node.inputs)
    outputs = ", ".join(_type(value) for value in onnx_node.outputs)
    return f"ONNX node `{onnx_node.name}` ({op}: {inputs} -> {outputs})"


def with_type_names(text: str) -> str:
    """`... elem type: (14) vs (1)` -> `... elem type: complex64 (14) vs float (1)`."""
    def named(match: re.Match) -> str:
        return f"{match[1]}{_type_name(int(match[2]))} ({match[2]}) vs {_type_name(int(match[3]))} ({match[3]})"

    return _ELEMENT_TYPES.sub(named, text)


def _type(value: Any) -> str:
    if value is None:
        return "none"
    dtype = getattr(value, "dtype", None)
    return dtype.name.lower() if dtype is not None else "?"


def _type_name(number: int) -> str:
    import onnx_ir

    try:
        return onnx_ir.DataType(number).name.lower()
    except ValueError:
        return "unknown type"


def _all_nodes(model: Any) -> Iterator[Any]:
    yield from model.graph.all_nodes()
    for function in model.functions.values():
        yield from function.all_nodes()
