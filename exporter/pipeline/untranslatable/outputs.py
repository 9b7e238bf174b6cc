"""What the model returns that cannot become ONNX outputs: which value, where it was made and
returned, how to fix it. Two failures, neither with a line of anyone's code:

* torch.export flattens what `forward` returns into tensors; an object of a type it does not
  know (not a registered pytree node: a transformers cache, an x-transformers dataclass) stops
  the capture after `forward` ran:

      non-strict: Found <class 'transformers.cache_utils.DynamicCache'> in output, which is not a known type
      strict:     Encountered unrecognized type UserDefinedObjectVariable(DynamicCache) at output 1

* a value the capture keeps as a constant output (a string, a float, a size the example fixed)
  stops the translation: the exporter's output node has no ONNX value for it
  (`'str' object has no attribute 'name'`, at `return (mul, 'doubled')`).

Either finding names the value, where it sits in the output (`['past_key_values']`), the
`return` statements that handed it up from the code that made it to the model's forward, and
for an object the call that constructed it (returns.py: the capture runs once more, on these
failures' path only), with the fixes that exist for it (output_fixes.py).
"""

from __future__ import annotations

import inspect
import linecache
import re
import sys
from typing import Any

import onnxlens.exporter.pipeline.untranslatable.output_fixes as output_fixes
import onnxlens.exporter.pipeline.untranslatable.returns as returns
from onnxlens.exporter.locations import Frame, locate
from onnxlens.exporter.pipeline.failures.errors import exception_chain, first_line, headline
from onnxlens.exporter.pipeline.job import Job
from onnxlens.exporter.pipeline.tracing.strategies import Capture
from onnxlens.exporter.types import Finding, Related

DOCS_URL = "https://pytorch.org/docs/stable/export.html"
_NON_STRICT = re.compile(r"Found <class '(?P<name>[\w.]+)'> in output, which is not a known type")
_STRICT = re.compile(r"Encountered unrecognized type \w+\((?P<name>\w+)\) at output (?P<index>\d+)")


def unflattenable_type(errors: list[BaseException]) -> str | None:
    """The (qualified, when torch says it) name of the output type the capture errors reject."""
    short = None
    for error in errors:
        for item in exception_chain(error):
            if match := _NON_STRICT.search(str(item)):
                return match["name"]
            if match := _STRICT.search(str(item)):
                short = short or match["name"]
    return short


def rejection(error: BaseException) -> str | None:
    """torch's sentence rejecting the output type, after the exception's class as torch's summary
    names it, without its boilerplate (None: not that error)."""
    for item in exception_chain(error):
        if match := _NON_STRICT.search(str(item)) or _STRICT.search(str(item)):
            return f"{type(item).__name__}: {match[0]}"
    return None


def finding(job: Job, type_name: str, notes: list[str]) -> Finding:
    """The capture finding for an output of type `type_name` torch.export cannot flatten;
    `notes` are what each capture strategy said."""
    target = job.target
    cls = _resolve(type_name)
    model = target.model
    forward = inspect.unwrap(type(model).forward)
    traced = returns.trace(job, lambda value: type(value) is cls, cls) if cls is not None else returns.Traced()
    owner = f"{type(model).__name__}.forward"
    shown = (cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}") \
        if cls is not None else type_name
    where = f"`{traced.path}` of what {owner} returns" if traced.path else f"what {owner} returns"
    article = "an" if shown[:1].lower() in "aeiou" else "a"
    message = (f"torch.export cannot flatten the model's output: {where} is {article} {shown}, a type torch.export "
               f"does not know (not a registered pytree node), so it cannot become ONNX outputs. Fixes:")
    switches = output_fixes.switches(traced.built[-1:] + traced.returns, forward, target.kwargs, _inputs_factory(job),
                                     model)
    for fix in _fixes(cls, type_name, switches, job):
        message += f"\n• {fix}"
    frames = _forward_frame(forward, owner, traced.returns[0].line if traced.returns else None) + traced.built
    innermost = len(frames) - 1
    name = type_name.rsplit(".", 1)[-1]

    def describe(index: int, frame: Frame, outer: bool) -> str:
        if index == 0 and frames[0].func == owner:
            return f"{owner} returns the {name}" + (f" as `{traced.path}`" if traced.path else "")
        if index == innermost and traced.built:
            return f"the {name} is built here, in {frame.func}"
        return "called from here" if outer else f"inside {frame.func or 'a call'} (library code)"

    place = locate(frames, job.workspace, describe=describe)
    if place.at_fallback(job.fallback):
        message += "\n(the object is built and returned in library code: shown at the model's definition)"
    related = place.related + [Related(file=switch.passed.file, line=switch.passed.line, column=switch.passed.column,
                                       message=f"the inputs pass {switch.name}={switch.value!r} here")
                               for switch in switches if switch.passed is not None and switch.value]
    message += "".join(f"\n({note})" for note in notes)
    return Finding(code="torch-export", stage="capture", location=place.location, related=related,
                   source_line=place.source_line, docs_url=DOCS_URL, message=message)


def unflattenable_finding(job: Job, captured: Capture, type_name: str) -> Finding | None:
    """The finding for an output type torch.export cannot flatten (the first failure above); None if working
    it out failed (the strategies' own findings then stand)."""
    notes = [f"torch.export {attempt.strategy}: {rejection(attempt.error) or headline(attempt.error)}"
             for attempt in captured.attempts]
    try:
        return finding(job, type_name, notes)
    except Exception as error:  # noqa: BLE001 - a bug here must not hide the capture failure
        job.log(f"could not explain the unflattenable output {type_name}: {type(error).__name__}: {error}")
        return None


def untranslatable_output_finding(job: Job, node: Any, error: BaseException) -> Finding:
    """The translation finding for the program's `output` node: values among the model's outputs
    that are no tensor (constants the capture kept), on the `return` that returned them."""
    import torch

    constants = [(index, item) for index, item in enumerate(_flat(node.args[0]))
                 if item is not None and not isinstance(item, torch.fx.Node)]
    model = job.target.model
    forward = inspect.unwrap(type(model).forward)
    owner = f"{type(model).__name__}.forward"
    root = list(exception_chain(error))[-1]
    cause = f"{type(root).__name__}: {first_line(str(root))}"
    if not constants:
        message = f"translating to ONNX failed at the model's outputs: {cause}"
        traced = returns.Traced()
    else:
        _, value = constants[0]
        traced = returns.trace(job, lambda candidate: candidate is value or (
            type(candidate) is type(value) and candidate == value))
        named = ", ".join(f"{item!r} ({_a(type(item).__name__)}) as output {position}" for position, item in constants)
        several = len(constants) > 1
        numbers = all(isinstance(item, (bool, int, float)) for _, item in constants)
        instead = (f"return {'them' if several else 'it'} as {'tensors' if several else 'a tensor'} "
                   f"(`torch.tensor(...)`), or " if numbers else "")
        message = (f"translating to ONNX failed at the model's outputs: {owner} returns {named}; the outputs of an "
                   f"ONNX model are tensors: {instead}leave {'them' if several else 'it'} out of what forward returns "
                   f"(a wrapper module returning only the tensors). {cause}")
    if root is not error:
        message += f"\n({type(error).__name__}: {first_line(str(error))})"
    frames = traced.returns or _forward_frame(forward, owner, None)

    def describe(index: int, frame: Frame, outer: bool) -> str:
        if traced.returns:
            return f"{frame.func} returns it here"
        return "called from here" if outer else f"inside {frame.func or 'a call'} (library code)"

    place = locate(frames, job.workspace, describe=describe)
    if place.at_fallback(job.fallback):
        message += "\n(no line of your code returns this value: shown at the model's definition)"
    return Finding(code="translation", stage="translate", location=place.location, related=place.related,
                   source_line=place.source_line, message=message)


def _flat(value: Any) -> list[Any]:
    if isinstance(value, (tuple, list)):
        return [leaf for item in value for leaf in _flat(item)]
    return [value]


def _a(name: str) -> str:
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}"


def _inputs_factory(job: Job) -> Any:
    if job.loader is None:
        return None
    try:
        return job.loader.resolve(job.spec.inputs, "inputs")
    except Exception:  # noqa: BLE001 - the fix is still named, without the inputs' line
        return None


def _resolve(type_name: str) -> type | None:
    """The class torch names: `transformers.cache_utils.DynamicCache`, or a builtin (`object`,
    written without its module: torch 2.14's strict capture no longer names the line that
    returns one, so this finding is the one that must)."""
    module, _, name = type_name.rpartition(".")
    owner = sys.modules.get(module or "builtins")
    found = getattr(owner, name, None)
    return found if isinstance(found, type) else None


def _forward_frame(forward: Any, owner: str, returned_at: int | None) -> list[Frame]:
    """The forward's `return` statement that returned the object (else its `def` line) as the
    outermost frame of the chain."""
    try:
        file = inspect.getsourcefile(forward)
        _, line = inspect.getsourcelines(forward)
    except (OSError, TypeError):
        return []
    if not file:
        return []
    if returned_at is not None:
        return [Frame(file, returned_at, owner)]
    # A decorator's line comes first in getsourcelines: point at the `def`.
    while line and linecache.getline(file, line).strip().startswith("@"):
        line += 1
    return [Frame(file, line, owner)]


def _fixes(cls: type | None, type_name: str, switches: list[output_fixes.Switch], job: Job) -> list[str]:
    """What the user can do, most direct first; only what exists in the installed versions."""
    name = type_name.rsplit(".", 1)[-1]
    fixes = [output_fixes.describe_switch(switch, job.workspace) for switch in switches]
    if output_fixes.is_dataclass_type(cls):
        fixes.append(f"register it with torch.export: `torch.export.register_dataclass({name})` before exporting")
    else:
        library = output_fixes.registrations(cls) if cls is not None else []
        if library:
            package = cls.__module__.split(".", 1)[0]
            fixes.append(f"register it as a pytree node with what {package} has for that, in the model factory: "
                         + ", or ".join(library) + "; its tensors become ONNX outputs")
        else:
            fixes.append(f"register it as a pytree node before exporting: `torch.utils._pytree.register_pytree_node("
                         f"{name}, flatten_fn, unflatten_fn)`")
    fixes.append("or return only tensors (in tuples, lists or dicts) from forward, e.g. with a wrapper module")
    return fixes
