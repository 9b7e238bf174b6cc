"""Where a value the model returns was made: the `return` statements that handed it up to the
model's forward, and, for an object, the call that constructed it.

Failures about what the model returns name no line (torch.export cannot flatten an object of an
unknown type; the exporter cannot make a string an ONNX output). The value is traced by running
the non-strict capture once more — on those failures' path only — with:

* a profile hook noting every `return` of a function that is not torch's or Python's own
  (files.py) whose returned value holds the value (in tuples, lists, dicts, dataclass fields):
  the chain runs from the model's forward down, each step the latest such `return` of a
  function the step above called (through torch's own frames: nn.Module's call);
* for an object, its class's `__init__` recording the stack of each construction;
* a forward hook keeping the model's output, to say where in it the value sits
  (`['past_key_values']`).

The hooks only observe; the capture's outcome is not used (the first capture's errors already
say what failed).
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import sys
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from onnxlens.exporter.locations import Frame, Origin, Workspace, classify, from_traceback
from onnxlens.exporter.pipeline.job import Job
from onnxlens.exporter.torch_internals.active import internals

Wanted = Callable[[Any], bool]

# How deep into containers a returned value is searched (a ModelOutput of tuples of caches: 3).
_DEPTH = 4


@dataclass
class Traced:
    """Where the value came from."""

    path: str | None = None  # where it sits in the model's output: `['past_key_values']`
    returns: list[Frame] = field(default_factory=list)  # the `return` statements, forward's first
    built: list[Frame] = field(default_factory=list)  # the stack that constructed it, outermost first
    found: Any = None  # the value, as the model's output holds it


def trace(job: Job, wanted: Wanted, cls: type | None = None) -> Traced:
    """Capture once more, following the value `wanted` accepts (of class `cls`: its construction
    is recorded too)."""
    target = job.target
    forward = inspect.unwrap(type(target.model).forward)
    events: list[_Return] = []
    built: dict[int, list[Frame]] = {}
    outputs: list[Any] = []
    with (_recording_returns(job.workspace, wanted, events), _keeping_output(target.model, outputs),
          _recording_construction(cls, built, getattr(forward, "__code__", None)) if cls is not None
          else contextlib.nullcontext()):
        try:
            internals.capture("non-strict", target.model, target.args, target.kwargs, target.dynamic_shapes)
        except Exception as error:  # noqa: BLE001 - the first capture's errors already say what failed
            job.log(f"re-capturing to trace a returned value failed: {type(error).__name__}: {error}")
    traced = Traced(returns=_chain(events, getattr(forward, "__code__", None)))
    if outputs:
        traced.path, traced.found = _find(outputs[-1], wanted)
    frames = built.get(id(traced.found)) if traced.found is not None else None
    if frames is None and built:
        frames = list(built.values())[-1]
    traced.built = frames or []
    return traced


@dataclass
class _Return:
    frame: Frame
    key: int  # id() of the returning frame
    caller: int | None  # id() of the nearest calling frame that is not torch's or Python's own
    code: Any


def _chain(events: list[_Return], top: Any) -> list[Frame]:
    """The `return` statements from the model's forward (the last one of its code) down: each the
    latest return, before the one above, of a function that one called."""
    index = next((i for i in range(len(events) - 1, -1, -1) if events[i].code is top), None)
    chain = []
    while index is not None:
        above = events[index]
        chain.append(above.frame)
        index = next((i for i in range(index - 1, -1, -1) if events[i].caller == above.key), None)
    return chain


@contextlib.contextmanager
def _recording_returns(workspace: Workspace, wanted: Wanted, events: list[_Return]) -> Iterator[None]:
    """While active, each `return` of model code (the user's or a library's) whose value holds
    the wanted one (the profile hook costs every Python call a little: failure paths only)."""
    previous = sys.getprofile()

    def own(frame: Any) -> bool:
        return classify(frame.f_code.co_filename, workspace) is not Origin.INTERNAL

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event != "return" or not own(frame) or not _holds(arg, wanted):
            return
        caller = frame.f_back
        while caller is not None and not own(caller):
            caller = caller.f_back
        events.append(_Return(Frame(frame.f_code.co_filename, frame.f_lineno, frame.f_code.co_qualname if hasattr(frame.f_code, "co_qualname") else frame.f_code.co_name),
                              id(frame), id(caller) if caller is not None else None, frame.f_code))

    sys.setprofile(profile)
    try:
        yield
    finally:
        sys.setprofile(previous)


def _holds(value: Any, wanted: Wanted, depth: int = 0) -> bool:
    try:
        if wanted(value):
            return True
    except Exception:  # noqa: BLE001 - a value that cannot be compared is not the one
        return False
    if depth >= _DEPTH:
        return False
    if isinstance(value, dict):
        items = list(value.values())
    elif isinstance(value, (tuple, list)):
        items = list(value)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        items = [getattr(value, item.name, None) for item in dataclasses.fields(value)]
    else:
        return False
    return any(_holds(item, wanted, depth + 1) for item in items)


@contextlib.contextmanager
def _recording_construction(cls: type, built: dict[int, list[Frame]], top: Any) -> Iterator[None]:
    """While active, every `cls(...)` records the stack that built it (by object id), from the
    model's forward (code `top`) in: what called the export is not the model's."""
    had_own = "__init__" in cls.__dict__
    original = cls.__init__

    def recording(self: Any, *args: Any, **kwargs: Any) -> None:
        if type(self) is cls:
            stack = traceback.extract_stack(sys._getframe(1))
            frame, depth = sys._getframe(1), len(stack)
            while frame is not None and frame.f_code is not top:
                frame, depth = frame.f_back, depth - 1
            built[id(self)] = from_traceback(stack[depth - 1:] if frame is not None else stack)
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


def _find(output: Any, wanted: Wanted) -> tuple[str | None, Any]:
    """(`['past_key_values']`-style path, the value) of the first wanted value in `output`."""
    if _holds(output, wanted, _DEPTH):
        return None, output
    try:
        leaves = internals.leaves_with_paths(output, is_leaf=lambda value: _holds(value, wanted, _DEPTH))
    except Exception:  # noqa: BLE001 - a container without keys: the value is still named
        return None, None
    for path, leaf in leaves:
        if _holds(leaf, wanted, _DEPTH):
            return path or None, leaf
    return None, None
