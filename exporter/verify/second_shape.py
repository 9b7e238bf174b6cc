"""The second-shape check: the example inputs again, with other sizes for every dimension that
stayed dynamic, run through onnxruntime and torch.

A dynamic dimension in the exported program can still be fixed in the ONNX graph: a
translation that reads the example's size (an adaptive pooling's kernel and stride, a
`Reshape` to constants, a `Range` with a fixed end). Verification at the example size cannot
see it: the model passes, and onnxruntime fails, or computes something else, in production on
the first other size. Here each symbol of the inputs' shapes gets another value within the
program's range constraints: half as large again (a strided backbone's feature maps must
change size too; + 1 or - 1 near the top of the range; never 0 or 1, which torch.export treats
apart), derived sizes follow (`2*s0`), and the inputs are made
anew with those sizes (floats drawn with the example's mean and spread, integers within the
example's values, booleans at random; inputs with no dynamic dimension kept). verify() then
compares onnxruntime with torch on them, so a failure or difference lands where verification
puts its own: on the line of the ONNX node onnxruntime names, or of the first value past
tolerance.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from onnxlens.exporter.torch_internals.active import internals

_SMALLEST = 2  # torch.export specializes 0 and 1


@dataclass
class OtherSizes:
    """The example inputs with other sizes for their dynamic dimensions."""

    args: tuple
    kwargs: dict
    sizes: dict[str, tuple[list[int], list[int]]] = field(default_factory=dict)  # input: (example, other)

    def describe(self) -> str:
        """`x: [3, 17] instead of [2, 16]; mask: [3, 17] instead of [2, 16]`."""
        return "; ".join(f"{name}: {other} instead of {example}" for name, (example, other) in self.sizes.items())


def other_sizes(program: Any, args: tuple, kwargs: dict, seed: int = 0) -> OtherSizes | None:
    """The example inputs with other sizes for the dynamic dimensions; None when no user input
    has one (or none can take another value within its range)."""
    import torch

    inputs = _dynamic_inputs(program, args, kwargs)
    if not inputs:
        return None
    values = _other_values(program, inputs)
    if not values:
        return None
    generator = torch.Generator().manual_seed(seed)
    replaced: dict[int, Any] = {}
    sizes = {}
    for name, example, dims in inputs:
        shape = []
        for size, expression in zip(example.shape, dims):
            if expression is None:
                shape.append(int(size))
                continue
            other = expression.subs(values)
            if not other.is_Integer or int(other) < 0:
                return None  # a size the substitution does not determine
            shape.append(int(other))
        if shape != list(example.shape):
            replaced[id(example)] = _like(example, shape, generator)
            sizes[name] = (list(example.shape), shape)
    if not replaced:
        return None
    swap = lambda value: replaced.get(id(value), value)  # noqa: E731
    return OtherSizes(args=internals.tree_map(swap, tuple(args)), kwargs=internals.tree_map(swap, dict(kwargs)),
                      sizes=sizes)


def _dynamic_inputs(program: Any, args: tuple, kwargs: dict) -> list[tuple[str, Any, list[Any]]]:
    """(name, example tensor, per dimension its symbolic expression or None) of each user input
    with a symbolic dimension."""
    import torch
    from torch.export import graph_signature

    specs = [spec for spec in program.graph_signature.input_specs if spec.kind == graph_signature.InputKind.USER_INPUT]
    flat = internals.flat_user_args(program, args, kwargs)
    if len(flat) != len(specs):
        return []
    values = {node.name: node.meta.get("val") for node in program.graph.nodes if node.op == "placeholder"}
    found = []
    for spec, example in zip(specs, flat):
        value = values.get(getattr(spec.arg, "name", None))
        if not isinstance(example, torch.Tensor) or not isinstance(value, torch.Tensor):
            continue
        dims = [internals.symbolic_expression(size) if isinstance(size, torch.SymInt) else None for size in value.shape]
        if any(d is not None for d in dims):
            found.append((spec.arg.name, example, dims))
    return found


def _other_values(program: Any, inputs: list[tuple[str, Any, list[Any]]]) -> dict[Any, int]:
    """Another value for each symbol of the inputs' shapes, within the program's ranges."""
    import sympy

    examples: dict[Any, int] = {}
    for _, example, dims in inputs:
        for size, expression in zip(example.shape, dims):
            if isinstance(expression, sympy.Symbol):
                examples[expression] = int(size)
    ranges = {str(symbol): bounds for symbol, bounds in program.range_constraints.items()}
    chosen = dict(examples)  # a symbol with no other value in its range keeps the example's
    for symbol, size in examples.items():
        bounds = ranges.get(str(symbol))
        lower = max(_SMALLEST, _bound(bounds.lower if bounds is not None else None, _SMALLEST))
        upper = _bound(bounds.upper if bounds is not None else None, None)
        for other in (size + max(1, size // 2), size + 1, size - 1):
            if other >= lower and (upper is None or other <= upper):
                chosen[symbol] = other
                break
    return chosen if chosen != examples else {}


def _bound(value: Any, default: int | None) -> int | None:
    """A range bound as an int; `default` for an infinite or missing one (sympy's `oo` and
    torch's `int_oo` do not convert)."""
    if value is None or getattr(value, "is_finite", True) is False:
        return default
    try:
        return int(value)
    except (TypeError, ValueError, OverflowError, AttributeError):
        return default


def _like(example: Any, shape: list[int], generator: Any) -> Any:
    """A new tensor of `shape` with values like the example's."""
    import torch

    dtype = example.dtype
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=generator).bool()
    if dtype.is_floating_point:
        sample = example.float()
        mean = float(sample.mean()) if sample.numel() else 0.0
        spread = float(sample.std()) if sample.numel() > 1 else 1.0
        return (torch.randn(shape, generator=generator) * (spread or 1.0) + mean).to(dtype)
    if dtype.is_complex:
        return torch.randn(shape, dtype=dtype, generator=generator)
    low, high = (int(example.min()), int(example.max())) if example.numel() else (0, 0)
    return torch.randint(low, high + 1, shape, generator=generator, dtype=dtype)
