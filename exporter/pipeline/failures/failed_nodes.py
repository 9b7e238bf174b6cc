"""Which FX node a failure is about, when torch's error names no line.

A node's stack trace says which line of the model's code made it, so a failure placed on a node
lands on that line (errors.py). The node is found, in this order, as:

* **named**: the exporter's own wording (`Error when translating node %name : ...`), or a quoted
  node name (onnx.checker names ONNX nodes after the FX nodes they came from);
* **interpreted**: `run_decompositions` and the type promotion pass re-trace the program with a
  `torch.fx.Interpreter`, whose frames on the traceback hold the node it was running (a
  decomposition raising `Cannot view a tensor ...`, a custom op with alias annotations);
* **a subgraph's owner**: a pass over a higher-order op's subgraph (a `torch.cond` branch, a loop
  body) that fails before it runs any node (`Cannot detect fake_mode.` when a branch computes
  no tensor: it returns a Python int) holds that subgraph in its frames; the node is the
  higher-order op that calls it, in the graph the traceback also holds;
* **a named input**: an error that names one of the program's inputs by its name in the
  program's signature (a buffer, a parameter, a tensor constant: `Constant foo is mutated in
  the forward method`) is about the node of the captured program that wrote to it in place,
  else the first that read it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterator

from onnxlens.exporter.pipeline.job import Job
from onnxlens.exporter.pipeline.tracing.stacks import graph_modules
from onnxlens.exporter.torch_internals.active import internals


def node_named_in(job: Job, chain: list[BaseException]) -> Any:
    """The FX node an exporter error names (`Error when translating node ...`, checker node names)."""
    program = job.decomposed
    if program is None:
        return None
    text = _text(chain)
    nodes = [node for module in graph_modules(program) for node in module.graph.nodes
             if node.op == "call_function"]
    # The exporter's own wording first ("Error when translating node %name : ..."), then any
    # quoted node name (onnx.checker names ONNX nodes after the FX nodes they came from).
    for node in nodes:
        if node.format_node() in text:
            return node
    for node in nodes:
        if (f"'{node.name}'" in text or f'"{node.name}"' in text
                or re.search(rf"\bnode[ _]{re.escape(node.name)}\b", text)):
            return node
    return None


def interpreted_node(chain: list[BaseException]) -> Any:
    """The FX node a `torch.fx.Interpreter` was running when the error was raised: the innermost
    traceback frame of an interpreter's method with the node in hand (`run_node(self, n)`, the
    `node` of `run`'s loop), along the exception chain. None if no interpreter was running."""
    import torch

    for item in chain:
        found = None
        for local in _frame_locals(item):
            if isinstance(local.get("self"), torch.fx.Interpreter):
                node = local.get("n", local.get("node"))
                if isinstance(node, torch.fx.Node) and node.op in ("call_function", "call_method", "call_module"):
                    found = node  # keep going: the innermost frame wins
        if found is not None:
            return found
    return None


@dataclass
class LayoutChange:
    """An op whose output's memory layout a re-run of the graph computed differently from the
    one the graph was built with, upstream of the node that failed."""

    node: Any  # the FX node whose output's strides changed (its inputs' did not)
    built: tuple  # the strides the graph recorded for it (node.meta["val"])
    now: tuple | None  # the strides the interpreter that failed computed, when it still holds them


def layout_change(chain: list[BaseException]) -> LayoutChange | None:
    """Why a node a `torch.fx.Interpreter` was running failed on its input's layout: the graph was
    built with other strides than the interpreter met. A pass records each node's output
    (`meta["val"]`) and makes its decisions from it (a `reshape` becomes a `view` where the
    recorded strides allow one); a later pass re-runs the graph and an op's fake kernel may lay
    its output out otherwise (scaled_dot_product_attention with a mask), so the view the earlier
    pass chose cannot be made: `Cannot view a tensor ... with strides ...`. The culprit is the op
    where the strides first differ: followed upstream from the failing node through inputs whose
    computed strides differ from the recorded ones (same shape), and through views (a view's
    layout is its input's, rearranged: the interpreter has dropped values it no longer needs), to
    the op that made the tensor. None when no input of the failing node has changed strides."""
    import torch

    for item in chain:
        running = None
        for local in _frame_locals(item):
            interpreter, node = local.get("self"), local.get("n", local.get("node"))
            if isinstance(interpreter, torch.fx.Interpreter) and isinstance(node, torch.fx.Node):
                running = (interpreter, node)  # keep going: the innermost frame wins
        if running is None:
            continue
        interpreter, node = running
        changed = [source for source in node.all_input_nodes if _strides_changed(interpreter, source)]
        if not changed:
            return None
        origin, seen = changed[0], set()
        while origin not in seen:
            seen.add(origin)
            upstream = ([source for source in origin.all_input_nodes if _strides_changed(interpreter, source)]
                        or [source for source in internals.aliased_arguments(origin)
                            if isinstance(source, torch.fx.Node) and source not in interpreter.env])
            if not upstream:
                now = interpreter.env.get(origin)
                return LayoutChange(origin, tuple(origin.meta["val"].stride()),
                                    tuple(now.stride()) if isinstance(now, torch.Tensor) else None)
            origin = upstream[0]
        return None
    return None


def _strides_changed(interpreter: Any, node: Any) -> bool:
    """The interpreter computed `node`'s output with the recorded shape but other strides than
    the graph recorded."""
    import torch

    built, now = node.meta.get("val"), interpreter.env.get(node)
    if not (isinstance(built, torch.Tensor) and isinstance(now, torch.Tensor)):
        return False
    try:
        return tuple(built.shape) == tuple(now.shape) and tuple(built.stride()) != tuple(now.stride())
    except Exception:  # noqa: BLE001 - symbolic sizes torch cannot compare here: no claim
        return False


def subgraph_owner(chain: list[BaseException]) -> Any:
    """The higher-order op node whose subgraph was being worked on when the error was raised: the
    innermost graph module on the traceback that is a subgraph of another one there, and the
    node of its parent graph that calls it. None if no such pair is on the traceback."""
    import torch

    for item in chain:
        modules: list[Any] = []  # outermost first
        for local in _frame_locals(item):
            for value in local.values():
                if isinstance(value, torch.fx.GraphModule) and not any(value is known for known in modules):
                    modules.append(value)
        for inner in reversed(modules):
            for outer in modules:
                node = _caller_of(outer, inner) if outer is not inner else None
                if node is not None:
                    return node
    return None


def input_named_in(job: Job, chain: list[BaseException]) -> Any:
    """The node of the captured program that wrote in place to the program input the error names
    by its target (`foo`, `model.layers.0.attn.lifted_tensor_0`), else the first node that read
    it. The longest target named wins; without one, the first input whose target ends in a
    dotted name the error gives (decomposition drops the module path: `lifted_tensor_0`)."""
    program = job.program
    if program is None:
        return None
    text = _text(chain)
    inputs = [(spec.target, spec.arg.name) for spec in program.graph_signature.input_specs
              if getattr(spec, "target", None) and getattr(spec.arg, "name", None)]
    named = [(len(target), name) for target, name in inputs if _names(text, target)]
    if not named:
        named = [(0, name) for target, name in inputs
                 if "." in target and _names(text, target.rsplit(".", 1)[1])][:1]
    if not named:
        return None
    placeholder = next((node for node in program.graph_module.graph.nodes
                        if node.op == "placeholder" and node.name == max(named)[1]), None)
    return _writer_of(placeholder) if placeholder is not None else None


def _names(text: str, name: str) -> bool:
    """`text` has `name` as a whole (dotted) name."""
    return re.search(rf"(?<![\w.]){re.escape(name)}(?![\w.])", text) is not None


def _writer_of(value: Any) -> Any:
    """The first node that writes to `value` in place, directly or through a view or alias of it
    (`self.foo.to(device).add_(1)`); else the first that reads it."""
    aliases = [value]
    reader = None
    for node in value.graph.nodes:
        if not any(source in aliases for source in node.all_input_nodes):
            continue
        if any(written in aliases for written in internals.written_arguments(node)):
            return node
        if any(aliased in aliases for aliased in internals.aliased_arguments(node)):
            aliases.append(node)
        elif reader is None:
            reader = node
    return reader


def _caller_of(root: Any, subgraph: Any) -> Any:
    """The call_function node of `root`'s graphs that calls `subgraph` (through its get_attr)."""
    for path, module in root.named_modules():
        if module is not subgraph or not path:
            continue
        parent_path, _, attribute = path.rpartition(".")
        parent = root.get_submodule(parent_path) if parent_path else root
        for node in parent.graph.nodes:
            if node.op == "get_attr" and node.target == attribute:
                return next((user for user in node.users if user.op == "call_function"), None)
    return None


def _frame_locals(error: BaseException) -> Iterator[dict]:
    """The local variables of each frame of the error's traceback, outermost first."""
    traceback = error.__traceback__
    while traceback is not None:
        yield traceback.tb_frame.f_locals
        traceback = traceback.tb_next


def _text(chain: list[BaseException]) -> str:
    """What the error and its first causes say."""
    return "\n".join(str(item) for item in chain[:5])
