"""What the user called to get an FX node: the torch function as they write it, for messages.

An unsupported op is named by its ATen or prims overload (`aten._linalg_svd.default`), which
is not what anyone wrote. torch.export records the torch-level call of each node in
`node.meta["torch_fn"]` as `(id, "<type>.<__name__>")`, e.g. "builtin_function_or_method.linalg_svd",
which says neither the namespace nor that `linalg_svd` is spelt `torch.linalg.svd`: the public
namespaces are indexed once per process by (type, __name__) to get the spelling back. Nodes
kept their `torch_fn` through decomposition, so every op a call decomposed into names it.

Two kinds of nodes are no torch function: higher-order ops (`torch.ops.higher_order.map_impl`,
from `map(f, xs)`) and Python's own functions on symbolic sizes (`round(x.shape[0] / 2)`
becomes a `builtins.round` node); they get their own wording and the names a user wrote them
with, so the column finder can find the call on the line.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from typing import Any

from onnxlens.exporter.torch_internals.active import internals

# What a user writes for a higher-order op, and what to do instead: ONNX has no counterpart
# torchlib translates for these.
_HIGHER_ORDER = {
    "map_impl": ("map", "functorch.experimental.control_flow.map",
                 "write the body as batched tensor ops over the first dimension"),
}

# Python's modules whose functions show up as FX targets when they run on symbolic sizes.
_PYTHON_MODULES = ("builtins", "math", "operator", "_operator")


@dataclass(frozen=True)
class OpSource:
    """How an op came to be: the function the user called and the names it may be written with."""

    call: str | None  # "torch.linalg.svd", "Tensor.sum", None: unknown
    call_names: tuple[str, ...] = ()  # for finding the call on the line ("linalg.svd", "svd")
    hint: str | None = None  # what to do instead, when it is not a plain torch op
    kind: str | None = None  # how to name the op when it is no ATen op ("the higher-order op map_impl")


def op_source(node: Any) -> OpSource:
    """The source of an FX call_function node (see the module docstring)."""
    import torch

    target = node.target
    if internals.is_higher_order_op(target) and target.name() == "with_effects" and (
            len(node.args) > 1 and internals.is_op_overload(node.args[1])):
        # An op with side effects (`aten._linalg_check_errors` of torch.linalg.solve) is wrapped:
        # name the op, and what was called to get it, as for any other op.
        kind = f"the side-effecting op {internals.op_name(node.args[1])}"
        return dataclasses.replace(_torch_function(node), kind=kind)
    if internals.is_higher_order_op(target):
        name = target.name()
        written, origin, advice = _HIGHER_ORDER.get(name, (name, None, None))
        return OpSource(origin, (written,), advice, f"the higher-order op torch.ops.higher_order.{name}")
    module = getattr(target, "__module__", None)
    if callable(target) and not internals.is_op_overload(target) and module in _PYTHON_MODULES:
        name = getattr(target, "__name__", str(target))
        symbolic = any(isinstance(arg, torch.fx.Node) and isinstance(arg.meta.get("val"), (torch.SymInt, torch.SymFloat))
                       for arg in node.args)
        on = " on a symbolic (dynamic) size" if symbolic else ""
        hint = ("write it with integer operations on the size (`//`, `+`, `*`), or keep the dimension "
                "static") if symbolic else None
        return OpSource(None, (name,), hint, f"Python's {name}(){on}")
    return _torch_function(node)


def _torch_function(node: Any) -> OpSource:
    """The torch function recorded for the node (`torch_fn`), in its public spelling."""
    import torch

    target = node.target
    torch_fn = node.meta.get("torch_fn")
    recorded = torch_fn[1] if isinstance(torch_fn, tuple) and len(torch_fn) > 1 else None
    call = public_name(recorded) if recorded else None
    if call is None and internals.is_op_overload(target) and recorded and recorded.startswith("method-wrapper."):
        call = f"Tensor.{internals.op_base_name(target)}"  # an attribute read (x.mH, x.real): torch_fn says `__get__`
    names: tuple[str, ...] = ()
    if call:
        short = call.removeprefix("torch.").removeprefix("nn.functional.").removeprefix("Tensor.")
        names = tuple(dict.fromkeys((short, short.rsplit(".", 1)[-1])))
    return OpSource(call, names)


def public_name(recorded: str) -> str | None:
    """"builtin_function_or_method.linalg_svd" -> "torch.linalg.svd" (None: not a public torch
    function, e.g. `wrapper_descriptor.__getitem__` for indexing)."""
    kind, _, name = recorded.partition(".")
    return _public_functions().get((kind, name))


@functools.lru_cache(maxsize=1)
def _public_functions() -> dict[tuple[str, str], str]:
    """(type name, __name__) -> the public spelling, the most specific namespace first."""
    import torch
    import torch.nn.functional as functional

    index: dict[tuple[str, str], str] = {}
    for prefix, namespace in (("torch.linalg", torch.linalg), ("torch.special", torch.special),
                              ("torch.fft", torch.fft), ("torch.nn.functional", functional),
                              ("torch", torch), ("Tensor", torch.Tensor)):
        for attribute in dir(namespace):
            if attribute.startswith("_"):
                continue
            value = getattr(namespace, attribute, None)
            name = getattr(value, "__name__", None)
            if callable(value) and isinstance(name, str):
                index.setdefault((type(value).__name__, name), f"{prefix}.{attribute}")
    return index
