"""Outputs torch.export cannot flatten: which object, where it was built, how to fix it.

torch.export flattens what `forward` returns into tensors. An object of a type it does not know
(not a registered pytree node: a transformers cache, say) stops the capture after `forward`
ran, with no line of anyone's code on the error:

    non-strict: Found <class 'transformers.cache_utils.DynamicCache'> in output, which is not a known type
    strict:     Encountered unrecognized type UserDefinedObjectVariable(DynamicCache) at output 1

The finding names the type, where it sits in the output (`['past_key_values']`), the forward
that returns it and the line that built it, and the fixes that exist for it. The last two are
found by running the non-strict capture once more (on this failure path only) with the type's
`__init__` recording its caller's stack and a forward hook keeping the output.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import inspect
import linecache
import os
import re
import sys
import traceback
from typing import Any, Iterator

from onnxlens.exporter.locations import Frame, from_traceback, locate
from onnxlens.exporter.pipeline.errors import exception_chain
from onnxlens.exporter.pipeline.job import Job
from onnxlens.exporter.torch_internals.active import internals
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
    """torch's sentence rejecting the output type, without its boilerplate (None: not that error)."""
    for item in exception_chain(error):
        if match := _NON_STRICT.search(str(item)) or _STRICT.search(str(item)):
            return match[0]
    return None


def finding(job: Job, type_name: str, notes: list[str]) -> Finding:
    """The capture finding for an output of type `type_name` torch.export cannot flatten;
    `notes` are what each capture strategy said."""
    target = job.target
    cls = _resolve(type_name)
    model = target.model
    forward = inspect.unwrap(type(model).forward)
    path, built, returned_at = _trace(job, cls, forward) if cls is not None else (None, [], None)
    owner = f"{type(model).__name__}.forward"
    shown = (cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}") \
        if cls is not None else type_name
    where = f"`{path}` of what {owner} returns" if path else f"what {owner} returns"
    article = "an" if shown[:1].lower() in "aeiou" else "a"
    message = (f"torch.export cannot flatten the model's output: {where} is {article} {shown}, a type torch.export "
               f"does not know (not a registered pytree node), so it cannot become ONNX outputs. Fixes:")
    for fix in _fixes(cls, type_name, model, forward, target.kwargs):
        message += f"\n• {fix}"
    frames = _forward_frame(forward, owner, returned_at) + built
    innermost = len(frames) - 1

    def describe(index: int, frame: Frame, outer: bool) -> str:
        if index == 0 and frames[0].func == owner:
            return f"{owner} returns the {type_name.rsplit('.', 1)[-1]}" + (f" as `{path}`" if path else "")
        if index == innermost and built:
            return f"the {type_name.rsplit('.', 1)[-1]} is built here, in {frame.func}"
        return "called from here" if outer else f"inside {frame.func or 'a call'} (library code)"

    place = locate(frames, job.workspace, describe=describe)
    if place.at_fallback(job.fallback):
        message += "\n(the object is built and returned in library code: shown at the model's definition)"
    related = place.related + _inputs_turning_the_cache_on(job)
    message += "".join(f"\n({note})" for note in notes)
    return Finding(code="torch-export", stage="capture", location=place.location, related=related,
                   source_line=place.source_line, docs_url=DOCS_URL, message=message)


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


def _trace(job: Job, cls: type, forward: Any) -> tuple[str | None, list[Frame], int | None]:
    """Capture once more: (where the object sits in the output, the frames that built it, the
    line of forward's `return` statement)."""
    target = job.target
    built: dict[int, list[Frame]] = {}
    outputs: list[Any] = []
    returns: list[int] = []
    with (_recording_construction(cls, built), _keeping_output(target.model, outputs),
          _recording_returns(getattr(forward, "__code__", None), returns)):
        try:
            internals.capture("non-strict", target.model, target.args, target.kwargs, target.dynamic_shapes)
        except Exception as error:  # noqa: BLE001 - the first capture's errors already say what failed
            job.log(f"re-capturing to find where the {cls.__name__} is built failed: {type(error).__name__}: {error}")
    path, found = _find(outputs[-1], cls) if outputs else (None, None)
    frames = built.get(id(found)) if found is not None else None
    if frames is None and built:
        frames = list(built.values())[-1]
    return path, frames or [], returns[-1] if returns else None


@contextlib.contextmanager
def _recording_returns(code: Any, lines: list[int]) -> Iterator[None]:
    """While active, the line of each `return` that leaves a frame of `code` (the profile hook
    costs every Python call a little: this capture runs only on this failure's path)."""
    if code is None:
        yield
        return
    previous = sys.getprofile()

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event == "return" and frame.f_code is code:
            lines.append(frame.f_lineno)

    sys.setprofile(profile)
    try:
        yield
    finally:
        sys.setprofile(previous)


@contextlib.contextmanager
def _recording_construction(cls: type, built: dict[int, list[Frame]]) -> Iterator[None]:
    """While active, every `cls(...)` records the stack that built it (by object id)."""
    had_own = "__init__" in cls.__dict__
    original = cls.__init__

    def recording(self: Any, *args: Any, **kwargs: Any) -> None:
        if type(self) is cls:
            built[id(self)] = from_traceback(traceback.extract_stack()[:-1])
        original(self, *args, **kwargs)

    try:
        cls.__init__ = recording
    except (TypeError, AttributeError):  # a built-in or extension type: nothing is recorded
        yield
        return
    try:
        yield
    finally:
        if had_own:
            cls.__init__ = original
        else:
            del cls.__init__


@contextlib.contextmanager
def _keeping_output(model: Any, outputs: list[Any]) -> Iterator[None]:
    handle = model.register_forward_hook(lambda module, args, output: outputs.append(output))
    try:
        yield
    finally:
        handle.remove()


def _find(output: Any, cls: type) -> tuple[str | None, Any]:
    """(`['past_key_values']`-style path, the object) of the first `cls` in `output`."""
    if type(output) is cls:
        return None, output
    try:
        leaves = internals.leaves_with_paths(output, is_leaf=lambda value: type(value) is cls)
    except Exception:  # noqa: BLE001 - a container without keys: the type is still named
        return None, None
    for path, leaf in leaves:
        if type(leaf) is cls:
            return path or None, leaf
    return None, None


def _fixes(cls: type | None, type_name: str, model: Any, forward: Any, kwargs: dict) -> list[str]:
    """What the user can do, most direct first; only what exists in the installed versions."""
    name = type_name.rsplit(".", 1)[-1]
    fixes = []
    is_cache = _is_transformers_cache(cls) or name.endswith("Cache")
    config = getattr(model, "config", None)
    if is_cache and ("use_cache" in _parameters(forward) or hasattr(config, "use_cache")):
        if kwargs.get("use_cache") is True:
            fixes.append("turn the cache off: your inputs pass use_cache=True; pass use_cache=False")
        else:
            fixes.append("turn the cache off: pass use_cache=False in the inputs, or set "
                         "model.config.use_cache = False in the model factory")
    if is_cache and _exists("transformers.exporters.exporter_dynamo", "register_cache_pytrees_for_model"):
        # transformers' own registration, the one its ONNX exporter uses. Its older
        # `integrations.executorch.register_dynamic_cache_export_support()` is not offered: with
        # the ONNX exporter the program it gives fails decomposition (torch 2.13: "Constant
        # tensor lifted_tensor_0 is not in the constants dictionary").
        fixes.append("register transformers' cache classes as pytree nodes in the model factory: "
                     "`from transformers.exporters.exporter_dynamo import register_cache_pytrees_for_model`, "
                     "then `register_cache_pytrees_for_model(model)`; the cache's tensors become ONNX outputs")
    if is_cache and _exists("transformers.exporters", "OnnxExporter"):
        fixes.append("or export with transformers' own ONNX exporter, `transformers.exporters.OnnxExporter`, "
                     "which registers the caches itself")
    if cls is not None and dataclasses.is_dataclass(cls):
        fixes.append(f"register it with torch.export: `torch.export.register_dataclass({name})` before exporting")
    elif not is_cache or not fixes:
        fixes.append(f"register it as a pytree node before exporting: `torch.utils._pytree.register_pytree_node("
                     f"{name}, flatten_fn, unflatten_fn)`")
    fixes.append("or return only tensors (in tuples, lists or dicts) from forward, e.g. with a wrapper module")
    return fixes


def _is_transformers_cache(cls: type | None) -> bool:
    cache_utils = sys.modules.get("transformers.cache_utils")
    base = getattr(cache_utils, "Cache", None)
    return isinstance(cls, type) and isinstance(base, type) and issubclass(cls, base)


def _parameters(function: Any) -> set[str]:
    try:
        return set(inspect.signature(function).parameters)
    except (TypeError, ValueError):
        return set()


def _exists(module: str, attribute: str) -> bool:
    """Whether the installed library has `module.attribute` (importing the module if needed)."""
    try:
        return hasattr(importlib.import_module(module), attribute)
    except Exception:  # noqa: BLE001 - an absent or broken module just offers nothing
        return False


def _inputs_turning_the_cache_on(job: Job) -> list[Related]:
    """A related location on the inputs factory's line that passes use_cache=True, if any."""
    if job.target.kwargs.get("use_cache") is not True or job.loader is None:
        return []
    try:
        factory = job.loader.resolve(job.spec.inputs, "inputs")
        lines, start = inspect.getsourcelines(inspect.unwrap(factory))
        file = inspect.getsourcefile(factory)
    except Exception:  # noqa: BLE001 - the finding stands without this note
        return []
    for offset, text in enumerate(lines):
        if "use_cache" in text and file:
            return [Related(file=os.path.realpath(file), line=start + offset, column=text.index("use_cache") + 1,
                            message="the inputs turn the cache on here")]
    return []
