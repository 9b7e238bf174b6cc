"""A dynamic-shapes factory proposed for a target that declares none, from its example inputs.

Without `dynamic-shapes` the ONNX model only accepts the example inputs' sizes: a model
exported with a batch of 2 fails in production on a batch of 8. The quick fix "Declare dynamic
shapes" (server/fixits/dynamic_shapes.py) writes the factory proposed here; the next export captures with
it, and a dimension the model's code fixes comes back as a warning on the line that fixed it.

Which dimensions (the ones nearly every model means to vary):

* batch: dimension 0 of every tensor input whose size there is the most common one among the
  inputs' first dimensions;
* sequence: dimension 1 of integer or boolean inputs of rank 2 (token ids, masks), and of the
  other inputs of rank >= 2 whose dimension 1 has that size (embeddings, float masks).

Named dims are strings, which name the ONNX model's axes (docs/configuration.md). The spec is a
dict by `forward`'s parameter names (no proposal when the inputs go to `*args` or `**kwargs`);
inputs that are no tensors get None. Decided in the worker because only the worker has the inputs; the
text is plain data for the server.
"""

from __future__ import annotations

import inspect
from collections import Counter
from typing import Any

from onnxlens.exporter.types import ShapesProposal

BATCH, SEQUENCE = "batch", "seq"


def propose(model: Any, args: tuple, kwargs: dict, function: str = "dynamic_shapes") -> ShapesProposal | None:
    """The factory for these inputs, or None when no tensor input has a dimension to declare."""
    import torch

    named = _named_inputs(model, args, kwargs)
    tensors = {name: value for name, value in named if isinstance(value, torch.Tensor) and value.dim() >= 1}
    if not tensors:
        return None
    batch = Counter(int(t.shape[0]) for t in tensors.values()).most_common(1)[0][0]
    sequence = next((int(t.shape[1]) for t in tensors.values()
                     if t.dim() == 2 and not t.dtype.is_floating_point and not t.dtype.is_complex), None)
    dims: dict[str, dict[int, str]] = {}
    for name, value in tensors.items():
        declared = {}
        if int(value.shape[0]) == batch:
            declared[0] = BATCH
        if sequence is not None and value.dim() >= 2 and int(value.shape[1]) == sequence:
            declared[1] = SEQUENCE
        if declared:
            dims[name] = declared
    if not dims:
        return None
    sizes = {BATCH: batch, **({SEQUENCE: sequence} if any(1 in d for d in dims.values()) else {})}
    entries = {name: _dims(dims.get(name)) for name, _ in named}
    body = "{\n" + "".join(f'        "{name}": {entry},\n' for name, entry in entries.items()) + "    }"
    warning = "".join(
        f"    # The example's {dim} is {size}: torch.export fixes sizes 0 and 1, so use example inputs with\n"
        f"    # a {dim} of 2 or more for it to stay dynamic.\n"
        for dim, size in sizes.items() if size < 2)
    described = ", ".join(f"{dim} (now {size})" for dim, size in sizes.items())
    source = (
        f"def {function}():\n"
        f'    """The inputs\' dynamic dimensions (torch.export dynamic_shapes): {described}.\n\n'
        "    Each string names a dimension that may vary; it becomes the ONNX model's axis name.\n"
        "    Started by onnxlens from the example inputs; yours to edit.\n"
        '    """\n'
        f"{warning}"
        f"    return {body}\n"
    )
    return ShapesProposal(function=function, source=source, dims=list(sizes), sizes=list(sizes.values()),
                          entries=entries)


def _named_inputs(model: Any, args: tuple, kwargs: dict) -> list[tuple[str, Any]]:
    """The inputs by `forward`'s parameter names, as torch.export keys a dict spec; [] when they
    do not bind to plain parameters (`*args`, `**kwargs`: nested specs, left to the user)."""
    try:
        signature = inspect.signature(model.forward)
        bound = signature.bind(*args, **kwargs)
    except (TypeError, ValueError):
        return []
    variadic = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    if any(signature.parameters[name].kind in variadic for name in bound.arguments):
        return []
    return list(bound.arguments.items())


def _dims(declared: dict[int, str] | None) -> str:
    if not declared:
        return "None"
    return "{" + ", ".join(f'{axis}: "{name}"' for axis, name in declared.items()) + "}"
