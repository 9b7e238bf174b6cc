"""No adapter for this torch: the public `torch.onnx.export(..., dynamo=True)`, nothing private.

A torch release onnxlens has no adapter for (a newer minor release, or one older than the
oldest adapter: torch_internals/__init__.py) is not refused. Its exports take the public API in
one call (pipeline/stages/public_export.py): the model exports exactly as the user's own
`torch.onnx.export` call would, and a failure becomes findings from its exception alone, placed
only where it says so (a user frame on its traceback, or the FX node it names, whose recorded
stack trace holds `forward`'s line). The findings may be coarser than with an adapter — one
problem per export, no helper-function lines, no verification — but never on a wrong line; a
`torch-version` note on every export says so.

Everything here is torch's public API, or plain Python on what it returns.
"""

from __future__ import annotations

from typing import Any, Callable

NAME = "public"
FULL = False  # the pipeline runs the public path (pipeline/__init__.py: PUBLIC_STAGE_ORDER)
DEFAULT_OPSET = None  # the public API's own default


def export(model: Any, args: tuple, kwargs: dict, *, dynamic_shapes: Any, opset: int | None,
           custom_translations: dict | None, optimize: bool, input_names: list[str] | None,
           output_names: list[str] | None) -> Any:
    """The user's own `torch.onnx.export(..., dynamo=True)` call, in memory (an ONNXProgram)."""
    import torch

    table = {op: function for torch_op, function in (custom_translations or {}).items()
             for op in overloads(torch_op)}
    return torch.onnx.export(model, args, kwargs=kwargs, dynamic_shapes=dynamic_shapes, opset_version=opset,
                             custom_translation_table=table or None, input_names=input_names,
                             output_names=output_names, optimize=optimize, dynamo=True, verbose=False)


def _is_a(value: Any, class_name: str) -> bool:
    """`value` is an instance of torch's class of that name (the class lives in a private module)."""
    return any(cls.__name__ == class_name and cls.__module__.startswith("torch.")
               for cls in type(value).__mro__)


def is_fake(tensor: Any) -> bool:
    return _is_a(tensor, "FakeTensor")


def is_torch_op(value: Any) -> bool:
    return _is_a(value, "OpOverload") or _is_a(value, "OpOverloadPacket")


def overloads(torch_op: Any) -> list[Any]:
    """An overload packet (`torch.ops.aten.add`) means all its overloads, as for the adapters."""
    if _is_a(torch_op, "OpOverloadPacket"):
        return [getattr(torch_op, name) for name in torch_op.overloads()]
    return [torch_op]


def tree_map(function: Callable[[Any], Any], value: Any) -> Any:
    """`value` with `function` applied to each leaf of its tuples, lists and dicts (the containers
    example inputs are made of; torch's pytree, which knows more, is private)."""
    if isinstance(value, (tuple, list)):
        return type(value)(tree_map(function, item) for item in value)
    if isinstance(value, dict):
        return {key: tree_map(function, item) for key, item in value.items()}
    return function(value)


def format_exported_program(program: Any) -> str:
    """The program as its public `str()` prints it, fenced (the report's section)."""
    return f"```python\n{program}\n```"


def analysis(program: Any, registry: Any | None) -> str:
    """torch's analysis helpers are private: the report says so instead."""
    return "_Not available without an onnxlens adapter for this torch (torch's analysis helpers are private)._\n"


__all__ = ["NAME", "FULL", "DEFAULT_OPSET", "export", "is_fake", "is_torch_op", "overloads", "tree_map",
           "format_exported_program", "analysis"]
