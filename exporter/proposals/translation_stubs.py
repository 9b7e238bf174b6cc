"""Translation stubs: the start of an ONNX translation for an op that has none.

The quick fix "Write an ONNX translation for aten.X" (server/fixits/translation.py) writes one
into the target's custom-translations module. What it writes is decided here, in the worker,
because only torch knows the op's schema: a Python function the exporter traces as an
onnxscript function (as `torch.onnx.export(custom_translation_table=...)` does), its
parameters following the schema so the exporter can bind the node's arguments to them:

* tensors (`Tensor`, `Tensor?`, `Tensor[]`) and `Scalar`s are ONNX inputs: no annotation (the
  exporter treats an unannotated parameter as an input), `= None` when optional;
* `int`, `float`, `bool`, `str` and their lists are ONNX attributes: annotated with the Python
  type (the exporter reads attributes from the annotations), with the schema's default;
* optional non-tensors (`ScalarType? dtype=None`, `Device? device=None`) keep `= None` and no
  annotation, so binding by name still works;
* keyword-only arguments stay keyword-only.

The body raises: until it is written the export fails on that line (a `translation` finding
with the stub's line related), and once written, verification compares it with torch.
"""

from __future__ import annotations

import keyword
import re
from typing import Any

from onnxlens.exporter.proposals.decomposition_offers import where_defined
from onnxlens.exporter.torch_internals.active import internals
from onnxlens.exporter.types import TranslationStub

# Schema types the exporter takes as attributes, by the Python annotation that says so.
_ATTRIBUTES = {
    "int": "int", "SymInt": "int", "float": "float", "bool": "bool", "str": "str", "ScalarType": "int",
    "int[]": "Sequence[int]", "SymInt[]": "Sequence[int]", "float[]": "Sequence[float]", "bool[]": "Sequence[bool]",
}


def stub_for(op: Any, opset: int) -> TranslationStub | None:
    """The stub for an op overload (`torch.ops.aten.linalg_eig.default`); None for anything else
    (a Python function in the graph has no schema to follow)."""
    schema = getattr(op, "_schema", None)
    namespace, name, overload = getattr(op, "namespace", None), getattr(schema, "name", ""), getattr(op, "_overloadname", None)
    if schema is None or not namespace or overload is None:
        return None
    base = name.split("::", 1)[-1]
    qualified = f"{namespace}.{base}.{overload}"
    function = _identifier(f"{namespace}_{base}" + ("" if overload == "default" else f"_{overload}"))
    parameters, annotated = _parameters(schema)
    outputs = [_identifier(r.name) if r.name else "" for r in schema.returns]
    returns = "the output" if len(outputs) == 1 else f"the {len(outputs)} outputs ({', '.join(o or '?' for o in outputs)}) as a tuple"
    lines = [
        f"def {function}({', '.join(parameters)}):",
        f'    """ONNX translation of {schema}',
        "",
        f"    Build {returns} from `op.*` calls on the inputs",
        f"    (ONNX opset {opset}: https://onnx.ai/onnx/operators/). onnxlens re-exports the target",
        "    when this file is saved and compares the ONNX model with torch on the example inputs.",
        '    """',
        f'    raise NotImplementedError("write the ONNX translation of {qualified}")',
    ]
    return TranslationStub(op=qualified, key=f"torch.ops.{namespace}.{base}.{overload}", function=function,
                           source="\n".join(lines) + "\n", opset=opset, needs_sequence=annotated,
                           decomposition=_decomposition(op))


def _parameters(schema: Any) -> tuple[list[str], bool]:
    """The function's parameters from the schema's arguments, and whether `Sequence` is used."""
    parameters, keyword_only, uses_sequence = [], False, False
    for argument in schema.arguments:
        if argument.kwarg_only and not keyword_only:
            parameters.append("*")
            keyword_only = True
        name = _identifier(argument.name)
        schema_type = _schema_type(str(argument.type))
        annotation = _ATTRIBUTES.get(schema_type)
        uses_sequence |= bool(annotation and annotation.startswith("Sequence"))
        default = _default(argument)
        if annotation and not str(argument.type).startswith("Optional"):
            parameters.append(f"{name}: {annotation}" + (f" = {default}" if default is not None else ""))
        elif default is not None or str(argument.type).startswith("Optional"):
            parameters.append(f"{name}={default if default is not None else 'None'}")
        else:
            parameters.append(name)
    return parameters, uses_sequence


def _schema_type(jit_type: str) -> str:
    """torch's JIT type names as schemas spell them: `List[int]` -> `int[]`."""
    match = re.fullmatch(r"List\[(\w+)\]", jit_type)
    if match:
        return f"{match.group(1)}[]"
    return {"number": "Scalar"}.get(jit_type, jit_type)


def _default(argument: Any) -> str | None:
    """The schema's default as Python source, or None when there is none."""
    if not argument.has_default_value():
        return None
    value = argument.default_value
    if value is None or isinstance(value, (bool, int, float, str)):
        return repr(value)
    if isinstance(value, (list, tuple)):
        return repr(tuple(value))
    return None  # a device, layout or memory format: keep the parameter required-free below


def _decomposition(op: Any) -> str | None:
    """Where torch's own decomposition of the op is written (`torch/_refs/special/__init__.py:123`),
    worth reading before writing a translation; None when torch has none."""
    function = internals.torch_decomposition(op)
    return where_defined(function) if function is not None else None


def _identifier(name: str) -> str:
    """A Python name for a schema name (`from` -> `from_`, `self` kept)."""
    cleaned = re.sub(r"\W", "_", name)
    return cleaned + "_" if keyword.iskeyword(cleaned) else cleaned
