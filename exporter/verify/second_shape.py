"""The second-shape check: the example inputs again, with other sizes for every dimension that
stayed dynamic, run through onnxruntime and torch.

A dynamic dimension in the exported program can still be fixed in the ONNX graph: a
translation that reads the example's size (an adaptive pooling's kernel and stride, a
`Reshape` to constants, a `Range` with a fixed end). Verification at the example size cannot
see it: the model passes, and onnxruntime fails, or computes something else, in production on
the first other size.

Which sizes (`candidates`): each symbol of the inputs' shapes gets another value within the
program's range constraints, larger ones first — half as large again (a strided backbone's
feature maps must change size too), twice as large, one more — then smaller ones — half, one
less; never 0 or 1, which torch.export treats apart. A symbol whose range does not allow a
candidate's value keeps the example's; derived sizes follow (`2*s0`). The inputs are made
anew with those sizes: floats drawn with the example's mean and spread; integers and booleans
tiled from the example's own values (token ids stay ids of the vocabulary, a mask keeps its
pattern); inputs with no dynamic dimension kept.

The ranges are not all torch knows: its guards can refuse sizes inside them (vit-pytorch's
ViT adds its positional embedding, `num_patches + 1` rows long, to the patch tokens: any image
with more patches than the example's fails in torch itself). The verification's runs (runs.py)
try the candidates in order; one torch refuses is remembered, and when torch refuses every
larger one the model has a size limit the ONNX model does not know of — reported where torch
failed. verify() compares onnxruntime with torch on the first candidate torch runs, so a
failure or difference lands where verification puts its own: on the line of the ONNX node
onnxruntime names, or of the first value past tolerance.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from onnxlens.exporter.torch_internals.active import internals

_SMALLEST = 2  # torch.export specializes 0 and 1

# Other values for an example size, in the order they are tried: larger, then smaller.
_LARGER: tuple[Callable[[int], int], ...] = (lambda size: size + max(1, size // 2), lambda size: 2 * size,
                                             lambda size: size + 1)
_SMALLER: tuple[Callable[[int], int], ...] = (lambda size: size // 2, lambda size: size - 1)


@dataclass
class OtherSizes:
    """The example inputs with other sizes for their dynamic dimensions."""

    args: tuple
    kwargs: dict
    sizes: dict[str, tuple[list[int], list[int]]] = field(default_factory=dict)  # input: (example, other)
    larger: bool = True  # the sizes grew (else they shrank)

    def describe(self) -> str:
        """`x: [3, 17] instead of [2, 16]; mask: [3, 17] instead of [2, 16]`."""
        return "; ".join(f"{name}: {other} instead of {example}" for name, (example, other) in self.sizes.items())


def candidates(program: Any, args: tuple, kwargs: dict, seed: int = 0) -> list[OtherSizes]:
    """The example inputs with other sizes for the dynamic dimensions, in the order to try them
    (larger first); [] when no user input has one, or none can take another value in its range."""
    inputs = dynamic_inputs(program, args, kwargs)
    if not inputs:
        return []
    found, seen = [], set()
    for larger, choices in ((True, _LARGER), (False, _SMALLER)):
        for choose in choices:
            values = other_values(program, inputs, choose)
            key = tuple(sorted((str(symbol), value) for symbol, value in values.items()))
            if not values or key in seen:
                continue
            seen.add(key)
            other = with_sizes(inputs, values, args, kwargs, seed)
            if other is not None:
                other.larger = larger
                found.append(other)
    return found


def dynamic_inputs(program: Any, args: tuple, kwargs: dict) -> list[tuple[str, Any, list[Any]]]:
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


def other_values(program: Any, inputs: list[tuple[str, Any, list[Any]]],
                 choose: Callable[[int], int], smallest: int = _SMALLEST) -> dict[Any, int]:
    """A value for each symbol of the inputs' shapes: `choose(example size)` where the program's
    range allows it (and it is at least `smallest`), else the example's; {} when no symbol changes."""
    import sympy

    examples: dict[Any, int] = {}
    for _, example, dims in inputs:
        for size, expression in zip(example.shape, dims):
            if isinstance(expression, sympy.Symbol):
                examples[expression] = int(size)
    ranges = {str(symbol): bounds for symbol, bounds in program.range_constraints.items()}
    chosen = dict(examples)
    for symbol, size in examples.items():
        bounds = ranges.get(str(symbol))
        lower = max(smallest, _bound(bounds.lower if bounds is not None else None, smallest))
        upper = _bound(bounds.upper if bounds is not None else None, None)
        other = choose(size)
        if other >= lower and (upper is None or other <= upper):
            chosen[symbol] = other
    return chosen if chosen != examples else {}


def with_sizes(inputs: list[tuple[str, Any, list[Any]]], values: dict[Any, int], args: tuple, kwargs: dict,
               seed: int = 0, make: Callable[..., Any] | None = None) -> OtherSizes | None:
    """The example inputs with each dynamic input remade at the sizes `values` give its symbols
    (`make(example, shape, generator)`, default `like`); None when the sizes are not determined
    or nothing changes."""
    import torch

    make = make or like
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
            replaced[id(example)] = make(example, shape, generator)
            sizes[name] = (list(example.shape), shape)
    if not replaced:
        return None
    swap = lambda value: replaced.get(id(value), value)  # noqa: E731
    return OtherSizes(args=internals.tree_map(swap, tuple(args)), kwargs=internals.tree_map(swap, dict(kwargs)),
                      sizes=sizes)


def _bound(value: Any, default: int | None) -> int | None:
    """A range bound as an int; `default` for an infinite or missing one (sympy's `oo` and
    torch's `int_oo` do not convert)."""
    if value is None or getattr(value, "is_finite", True) is False:
        return default
    try:
        return int(value)
    except (TypeError, ValueError, OverflowError, AttributeError):
        return default


def like(example: Any, shape: list[int], generator: Any) -> Any:
    """A new tensor of `shape` with values like the example's: floats drawn with its mean and
    spread, integers and booleans tiled from its own values (ids stay valid ids)."""
    import torch

    dtype = example.dtype
    if dtype.is_floating_point:
        sample = example.float()
        mean = float(sample.mean()) if sample.numel() else 0.0
        spread = float(sample.std()) if sample.numel() > 1 else 1.0
        return (torch.randn(shape, generator=generator) * (spread or 1.0) + mean).to(dtype)
    if dtype.is_complex:
        return torch.randn(shape, dtype=dtype, generator=generator)
    if example.numel() == 0:
        return torch.zeros(shape, dtype=dtype)
    return tiled(example, shape)


def tiled(example: Any, shape: list[int], generator: Any = None) -> Any:
    """The example repeated along each dimension as often as `shape` needs, cut to `shape`."""
    repeats = [-(-new // old) if old else 1 for new, old in zip(shape, example.shape)]
    grown = example.repeat(*repeats) if any(r > 1 for r in repeats) else example
    return grown[tuple(slice(0, new) for new in shape)].clone()
