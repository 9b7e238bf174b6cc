"""Inputs and dynamic shapes that do not fit the model, on the line of the factory that returned them.

torch.export takes the model, the example inputs and the dynamic shapes; when these do not fit
together, it fails at the call of forward (an argument forward does not take), before it (a
numpy array, a dynamic-shapes spec naming other inputs than forward is given) or inside it (a
`str` where forward computes with a tensor), and its error names no line of the user's code —
or forward's, which is not where the mistake is. The mistake is in the factory that built the
value: the finding goes on the `return` of that factory that ran (target/code.py records it), names
forward's signature and what it was given, and quotes torch. It is a `setup` finding, as a
factory that raised is.

Only after a capture that failed (the outcome is torch's); each rule checks the values
themselves, and what torch said only to tell which rule it is:

* the inputs do not bind to forward's signature (`inspect.Signature.bind`, as torch binds
  them): the unexpected keyword (and the parameter it may mean), the missing or extra
  positional inputs;
* torch rejected the dynamic shapes (its validation errors: a dict whose keys are not the
  inputs given, a structure that does not follow the inputs): the inputs the spec misses, the
  names it has that forward was not given;
* an input of a type torch.export cannot take (a numpy array, an object, a dict subclass
  without a pytree registration): torch names the type, and that is the type of this input;
* an input that is no tensor nor a number (a `str`) where forward computes with a tensor:
  forward raised a TypeError or AttributeError naming the input's type; where it raised is
  related.

A factory outside the workspace (`package.module:inputs`) has no line of the user's to blame:
the finding names the config key (`Finding.reference`) and is shown there.
"""

from __future__ import annotations

import ast
import difflib
import inspect
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Iterator

from onnxlens.exporter.locations import from_traceback, is_user_code, locate, node_span, source_line, statement_at
from onnxlens.exporter.pipeline.failures.errors import exception_chain, first_line
from onnxlens.exporter.pipeline.job import Job
from onnxlens.exporter.pipeline.target.code import definition_location
from onnxlens.exporter.types import Finding, Location, Related

SHAPES_DOCS_URL = "https://pytorch.org/docs/stable/export.html#dynamic-shapes"
INPUTS_DOCS_URL = "https://pytorch.org/docs/stable/export.html#torch.export.export"

# How torch says it rejected the dynamic shapes (torch/export/dynamic_shapes.py's validation:
# `case_name="dynamic_shapes_validation"` ends its messages with that ExportDB anchor).
_SHAPES_REJECTED = ("dynamic-shapes-validation", "`dynamic_shapes", "for the same symbolic dimension",
                    "input integers as dynamic through named Dims")
# Values forward may well take that are no tensors: numbers and None (a str is not among them).
_SCALARS = (bool, int, float, complex, type(None))


@dataclass
class Given:
    """One value the model is given, named as forward's parameters name it (`x`, `x[0]`,
    `mask['a']`), with its place among the factory's inputs (`index` of args, `key` of kwargs)."""

    path: str
    value: Any
    index: int | None = None
    key: str | None = None


def finding(job: Job, errors: list[BaseException]) -> Finding | None:
    """The finding for a failed capture whose cause is what the inputs or dynamic-shapes factory
    returned, or None when it is not, or working it out failed (the capture's own findings stand)."""
    try:
        return _finding(job, errors)
    except Exception as error:  # noqa: BLE001 - a bug here must not hide the capture failure
        job.log(f"could not check the inputs against the model: {type(error).__name__}: {error}")
        return None


def _finding(job: Job, errors: list[BaseException]) -> Finding | None:
    target = job.target
    if target is None or not errors:
        return None
    signature = _signature(target.model)
    chains = [list(exception_chain(error)) for error in errors]
    bound = None
    if signature is not None:
        try:
            bound = signature.bind(*target.args, **target.kwargs)
        except TypeError as error:
            unexpected = _unexpected_keyword(signature, target.kwargs)
            problem = (f"it takes no argument `{unexpected}`{_close(unexpected, _parameters(signature))}"
                       if unexpected else str(error))
            return _inputs_finding(job, signature, f"it is given {_given_text(target.args, target.kwargs)}, and {problem}",
                                   chains[0], Given(unexpected, None, key=unexpected) if unexpected else None)
    # torch's own error, not the wrappers that repeat its text (the public API's TorchExportError).
    rejected = next((item for chain in chains for item in reversed(chain)
                     if any(marker in str(item) for marker in _SHAPES_REJECTED)), None)
    if job.raw_dynamic_shapes is not None and rejected is not None:
        return _shapes_finding(job, signature, bound, rejected)
    given = list(_given(target.args, target.kwargs, signature))
    for chain in chains:
        text = "\n".join(str(item) for item in chain)
        for item in given:
            if _named_type(item.value) and _type_named(item.value) in text:
                return _inputs_finding(job, signature, f"`{item.path}` is {_describe(item.value)}, a type torch.export "
                                                       f"does not take as an input{_instead(item.value)}", chain, item)
    return _computed_with(job, signature, given, chains)


def _computed_with(job: Job, signature: inspect.Signature | None, given: list[Given],
                   chains: list[list[BaseException]]) -> Finding | None:
    """An input that is no tensor nor a number, which forward failed on (the error names its type)."""
    for chain in chains:
        root = chain[-1]
        if not isinstance(root, (TypeError, AttributeError)):
            continue
        for item in given:
            if not _odd(item.value) or not re.search(rf"\b{re.escape(type(item.value).__name__)}\b", str(root)):
                continue
            place = locate(from_traceback(root), job.workspace)
            related = ([Related(file=place.location.file, line=place.location.line, column=place.location.column,
                                message=f"forward fails on `{item.path}` here")] if place.location else [])
            return _inputs_finding(job, signature, f"`{item.path}` is {_describe(item.value)}, and forward computes "
                                                   f"with it as a tensor{_instead(item.value)}", chain, item,
                                   related=related + place.related)
    return None


def _inputs_finding(job: Job, signature: inspect.Signature | None, problem: str, chain: list[BaseException],
                    culprit: Given | None, related: list[Related] | None = None) -> Finding:
    target = job.target
    returned = _returned(job, "inputs")
    location = _narrowed(returned, job.raw_inputs, culprit) if returned else None
    message = (f"the inputs returned here do not fit {_forward_text(target.model, signature)}: {problem}"
               f"{_whole_value_hint(job.raw_inputs)}\n(torch.export: {_torch_says(chain[-1])})")
    return Finding(code="setup", stage="capture", location=location, related=(related or []) + _forward_related(target.model),
                   source_line=_line_text(location), docs_url=INPUTS_DOCS_URL, message=message,
                   reference=None if location else "inputs")


def _shapes_finding(job: Job, signature: inspect.Signature | None, bound: inspect.BoundArguments | None,
                    rejected: BaseException) -> Finding:
    target = job.target
    spec = job.raw_dynamic_shapes
    problems = []
    if isinstance(spec, dict) and bound is not None:
        names = list(bound.arguments)
        missing = [name for name in names if name not in spec]
        extra = [str(key) for key in spec if key not in bound.arguments]
        if missing:
            problems.append(f"the spec has no entry for {_names(missing)} (give {'each' if len(missing) > 1 else 'it'} "
                            "one: None for an input without dynamic dimensions)")
        if extra:
            problems.append(f"it names {_names(extra)}, which forward is not given{_close(extra[0], names)}")
    elif isinstance(spec, (tuple, list)) and not target.kwargs and len(spec) != len(target.args):
        problems.append(f"the spec has {len(spec)} entries for {len(target.args)} positional inputs")
    returned = _returned(job, "dynamic-shapes")
    inputs = _returned(job, "inputs")
    related = ([Related(file=inputs.file, line=inputs.line, column=inputs.column, message="the inputs are returned here")]
               if inputs else [])
    message = (f"the dynamic shapes returned here do not fit the inputs: {_forward_text(target.model, signature)} is "
               f"given {_given_text(target.args, target.kwargs, bound)}"
               f"{', and ' + '; '.join(problems) if problems else ''}\n(torch.export: {_torch_says(rejected)})")
    return Finding(code="setup", stage="capture", location=returned, related=related + _forward_related(target.model),
                   source_line=_line_text(returned), docs_url=SHAPES_DOCS_URL, message=message,
                   reference=None if returned else "dynamic-shapes")


# -- what forward takes and what it was given ----------------------------------------------------

def _signature(model: Any) -> inspect.Signature | None:
    try:
        return inspect.signature(model.forward)
    except (TypeError, ValueError, AttributeError):
        return None


def _parameters(signature: inspect.Signature) -> list[str]:
    return [name for name, p in signature.parameters.items() if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]


def _unexpected_keyword(signature: inspect.Signature, kwargs: dict) -> str | None:
    """A keyword forward has no parameter for (nor **kwargs to take it)."""
    if any(p.kind is p.VAR_KEYWORD for p in signature.parameters.values()):
        return None
    return next((key for key in kwargs if key not in signature.parameters), None)


def _forward_text(model: Any, signature: inspect.Signature | None) -> str:
    """`TextDecoder.forward(x: Tensor, xa: Tensor, kv_cache: Optional[dict] = None)`."""
    owner = f"{type(model).__name__}.forward"
    if signature is None:
        return owner
    text = str(signature).replace("torch.Tensor", "Tensor")
    return owner + (text if len(text) <= 240 else text[:240] + " …)")


def _forward_related(model: Any) -> list[Related]:
    """forward's `def` line, where its parameters are."""
    defined = definition_location(type(model).forward)
    return [Related(file=defined.file, line=defined.line, column=defined.column,
                    message=f"{type(model).__name__}.forward's parameters")] if defined else []


def _given(args: tuple, kwargs: dict, signature: inspect.Signature | None) -> Iterator[Given]:
    """Every value given, containers opened (tuples, lists, dicts), named by forward's parameters."""
    names = _parameters(signature) if signature is not None else []
    for index, value in enumerate(args):
        name = names[index] if index < len(names) else f"args[{index}]"
        yield from _leaves(Given(name, value, index=index))
    for key, value in kwargs.items():
        yield from _leaves(Given(str(key), value, key=str(key)))


def _leaves(item: Given, depth: int = 0) -> Iterator[Given]:
    yield item
    if depth >= 3:
        return
    value = item.value
    inner = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, (tuple, list)) else ()
    for key, child in inner:
        yield from _leaves(Given(f"{item.path}[{key!r}]", child, item.index, item.key), depth + 1)


def _given_text(args: tuple, kwargs: dict, bound: inspect.BoundArguments | None = None) -> str:
    """`(x=Tensor(int64[1, 8]), xa=Tensor(float32[1, 10, 32]))`."""
    if bound is not None:
        parts = [f"{key}={_describe(value, short=True)}" for key, value in bound.arguments.items()]
    else:
        parts = [_describe(value, short=True) for value in args]
        parts += [f"{key}={_describe(value, short=True)}" for key, value in kwargs.items()]
    return "(" + ", ".join(parts) + ")"


def _close(name: str, names: list[str]) -> str:
    close = difflib.get_close_matches(name, names, n=1)
    return f" (did you mean `{close[0]}`?)" if close else ""


def _names(names: list[str]) -> str:
    return ", ".join(f"`{name}`" for name in names)


def _is_tensor(value: Any) -> bool:
    import torch

    return isinstance(value, torch.Tensor)


def _named_type(value: Any) -> bool:
    """A value torch may name as a type it does not take: no tensor, number or None, and no
    plain tuple, list or dict (other containers it may reject: a tokenizer's BatchEncoding)."""
    return not (_is_tensor(value) or isinstance(value, _SCALARS) or type(value) in (tuple, list, dict))


def _odd(value: Any) -> bool:
    """A value that is no tensor, no number or None, and no container: a str, an array, an object."""
    return not (_is_tensor(value) or isinstance(value, _SCALARS) or isinstance(value, (tuple, list, dict)))


def _type_named(value: Any) -> str:
    """How torch's messages name a value's type: `<class 'numpy.ndarray'>`."""
    return str(type(value))


def _describe(value: Any, short: bool = False) -> str:
    """`a float32 tensor [2, 4]`, `a str ('hello')`, `a numpy.ndarray (float32 [2, 4])`; short:
    `Tensor(float32[2, 4])`, `'hello'`, `numpy.ndarray(float32 [2, 4])`."""
    if _is_tensor(value):
        dtype = str(value.dtype).removeprefix("torch.")
        return f"Tensor({dtype}{list(value.shape)})" if short else f"a {dtype} tensor {list(value.shape)}"
    if isinstance(value, _SCALARS) or (short and isinstance(value, str)):
        return _short_repr(value)
    if short and isinstance(value, (tuple, list)):
        inner = ", ".join(_describe(item, short=True) for item in value[:4])
        return ("(" if isinstance(value, tuple) else "[") + inner + (", …" if len(value) > 4 else "") + (
            ")" if isinstance(value, tuple) else "]")
    kind = type(value)
    name = kind.__name__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"
    shape, dtype = getattr(value, "shape", None), getattr(value, "dtype", None)
    detail = f"{dtype} {list(shape)}" if shape is not None and dtype is not None else _short_repr(value)
    return f"{name}({detail})" if short else f"{_a(name)} ({detail})"


def _short_repr(value: Any) -> str:
    try:
        text = repr(value)
    except Exception:  # noqa: BLE001 - a repr of the user's object may raise
        return type(value).__name__
    return text if len(text) <= 40 else text[:37] + "…"


def _a(name: str) -> str:
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}"


def _instead(value: Any) -> str:
    """What to give instead, when it is clear."""
    if type(value).__module__ == "numpy":
        return ": give `torch.from_numpy(...)` of it"
    if isinstance(value, Mapping):  # a tokenizer's BatchEncoding, say: its entries are forward's keywords
        return ": return `dict(...)` of it, the keyword inputs, instead"
    return ""


def _whole_value_hint(raw: Any) -> str:
    """The factory returned one value that is neither a tensor nor a container, taken as the only
    positional input: say what an inputs factory returns."""
    if _odd(raw):
        return (" (an inputs factory returns a tuple of positional inputs, a dict of keyword inputs, "
                "(args, kwargs), or one tensor)")
    return ""


def _torch_says(error: BaseException) -> str:
    """torch's own sentence: the error's first lines, without the ExportDB trailer."""
    text = re.split(r"\s*For more information about this error", str(error))[0]
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()][:3]
    return f"{type(error).__name__}: " + (" ".join(lines) if lines else first_line(str(error)))


# -- where ---------------------------------------------------------------------------------------

def _returned(job: Job, what: str) -> Location | None:
    """The statement that returned the factory's value, when it is the user's code."""
    returned = job.loader.returned.get(what) if job.loader is not None else None
    return returned if returned is not None and is_user_code(returned.file, job.workspace) else None


def _narrowed(returned: Location, raw: Any, culprit: Given | None) -> Location:
    """The part of the `return` statement that wrote the culprit: a keyword's key (`"sclae": 2.0`,
    `dict(sclae=2.0)`), a positional input's element of the returned tuple; else the statement."""
    statement = statement_at(returned.file, returned.line)
    value = getattr(statement, "value", None)
    if culprit is None or value is None:
        return returned
    node = None
    if culprit.key is not None:
        node = next((key for sub in ast.walk(value) if isinstance(sub, ast.Dict) for key in sub.keys
                     if isinstance(key, ast.Constant) and key.value == culprit.key), None) or next(
            (keyword for sub in ast.walk(value) if isinstance(sub, ast.Call) for keyword in sub.keywords
             if keyword.arg == culprit.key), None)
    elif culprit.index is not None:
        elements = _args_elements(value, raw)
        node = elements[culprit.index] if elements is not None and culprit.index < len(elements) else None
    if node is None:
        return returned
    span = node_span(returned.file, node)
    return Location(file=returned.file, line=node.lineno, column=span.column, end_line=span.end_line,
                    end_column=span.end_column)


def _args_elements(value: ast.expr, raw: Any) -> list[ast.expr] | None:
    """The returned expression's elements that are the positional inputs, when the code writes
    them out: `return (a, b)`, `return (a, b), {...}`."""
    if not isinstance(value, (ast.Tuple, ast.List)):
        return None
    if (isinstance(raw, tuple) and len(raw) == 2 and isinstance(raw[0], (tuple, list)) and isinstance(raw[1], dict)
            and len(value.elts) == 2):
        first = value.elts[0]
        return first.elts if isinstance(first, (ast.Tuple, ast.List)) and len(first.elts) == len(raw[0]) else None
    return value.elts if isinstance(raw, (tuple, list)) and len(value.elts) == len(raw) else None


def _line_text(location: Location | None) -> str | None:
    return source_line(location.file, location.line) if location else None
