"""The adapter for torch 2.13's internals, the reference one: also used with torch 2.14 and 2.15,
whose pieces onnxlens uses are the same (measured: every name below, its signature, and the
tests of tests/exporter and tests/worker on each release).

Everything onnxlens needs of torch's private modules, under names that say what it is for; the
pipeline calls these and never a private module itself (torch_internals/__init__.py). Each
function does one thing torch's public API does inside `torch.onnx.export(..., dynamo=True)` or
`torch.export`, or reads one thing those keep private. The private modules only some jobs need
(the report helpers, onnxscript's lazily loaded APIs) are imported inside the functions that use
them: importing this module, which every worker does at start, costs only what every job needs.
"""

from __future__ import annotations

import contextlib
import functools
import io
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, TextIO

import torch
from torch.export import exported_program as _exported_program
from torch.onnx._internal.exporter import (_capture_strategies, _constants, _core, _decomp, _dispatching,
                                           _registration)

from onnxlens.exporter.torch_internals.cia_override import RecordedOverride, recorded_override
from onnxlens.exporter.torch_internals.deferred_graph_code import graph_code_deferred
from onnxlens.exporter.torch_internals.draft_run import DraftFailure, DraftRun, Flip, draft_export_failures

NAME = "torch_2_13"
FULL = True  # the whole pipeline runs (public.py: the public API only)

# The opset the public API targets when none is given (torch.onnx.export(dynamo=True)).
from torch.onnx._constants import ONNX_DEFAULT_OPSET as DEFAULT_OPSET  # noqa: E402

# Below torchlib's own opset the public API builds the registry at torchlib's and converts.
TORCHLIB_OPSET = _constants.TORCHLIB_OPSET


# --- capture ---------------------------------------------------------------------------------

CAPTURE_STRATEGIES = ("non-strict", "strict")  # the stock exporter's order


@dataclass
class Captured:
    """One capture strategy's outcome: the program, or the error it failed with."""

    program: Any = None  # torch.export.ExportedProgram
    error: BaseException | None = None


def capture(strategy: str, model: Any, args: tuple, kwargs: dict, dynamic_shapes: Any) -> Captured:
    """torch.export through the stock exporter's strategy ("non-strict" or "strict"), with the
    graph modules' code made when first needed (deferred_graph_code.py)."""
    strategy_class = {"non-strict": _capture_strategies.TorchExportNonStrictStrategy,
                      "strict": _capture_strategies.TorchExportStrictStrategy}[strategy]
    with graph_code_deferred():
        outcome = strategy_class(verbose=False)(model, args, kwargs, dynamic_shapes=dynamic_shapes)
    return Captured(outcome.exported_program if outcome.success else None, outcome.exception)


@dataclass
class SizeFact:
    """What torch.export learnt about an input size from the code while tracing: fixed to a
    number (`value`), narrowed to a range (`lower`..`upper`, None unbounded) or tied to other
    input sizes (`tied_to`: their sources; `expression`: what it equals), with the stack at
    that moment, outermost first: the Python frames, then the frames dynamo was tracing
    (`traced_from`: the index where those begin; a higher-order op's body is traced so even in
    non-strict capture)."""

    sources: list[str]  # the input sizes the symbol stands for: `L['x'].size()[0]`, `L['n']`
    stack: list[Any]  # traceback.FrameSummary
    traced_from: int
    value: int | None = None
    lower: int | None = None
    upper: int | None = None
    tied_to: list[str] = field(default_factory=list)
    expression: str | None = None  # what the size equals, over the sources of `tied_to`: "L['x'].size()[0] + 1"


@dataclass
class SuggestedFix:
    """torch.export refused the dynamic shapes (a constraint violation) and the stock exporter
    captured again with the fixes torch suggested: its message, the shapes before and after."""

    message: str
    declared: Any
    refined: Any


@dataclass
class ShapeFacts:
    """What capture learnt about the dynamic shapes: size facts in the order torch learnt
    them, and the suggested fixes the stock exporter applied."""

    facts: list[SizeFact] = field(default_factory=list)
    fixes: list[SuggestedFix] = field(default_factory=list)


@contextlib.contextmanager
def shape_facts_recorded() -> Iterator[ShapeFacts]:
    """Every size fact torch's shape environment learns while the block runs, with the stack, and
    every suggested fix the stock capture strategies apply.

    The shape environment notes where a symbol was replaced or its range narrowed
    (`replacements_slocs`, `var_to_range_sloc`), but in non-strict capture only torch's own
    frame (the user's frame comes from dynamo's tracing context, which non-strict capture has
    none of): the stack here has the user's lines. Each hook reads the shape environment's
    dicts and the frames and nothing else (it may run while the tracer holds fresh unbacked
    symbols), and hands torch's own call its arguments and its result or exception unchanged.
    Optional pieces: a torch without `ShapeEnv._set_replacement`, `_update_var_to_range` or
    `refine_dynamic_shapes_from_suggested_fixes` records nothing of that kind, and the findings
    stay on the dynamic-shapes factory."""
    import traceback

    import sympy
    from torch._guards import TracingContext
    from torch.export import dynamic_shapes
    from torch.fx.experimental import symbolic_shapes

    recorded = ShapeFacts()
    # The frames above the block (its caller's and theirs) are no part of any fact's story.
    outside = len(traceback.extract_stack()) - 2  # without contextlib's __enter__ and this frame
    shape_env = symbolic_shapes.ShapeEnv
    stock_replacement = shape_env.__dict__.get("_set_replacement")
    stock_range = shape_env.__dict__.get("_update_var_to_range")
    stock_refine = getattr(dynamic_shapes, "refine_dynamic_shapes_from_suggested_fixes", None)

    def sources(env: Any, symbol: Any) -> list[str]:
        return [source.name() if callable(source.name) else source.name
                for source in env.var_to_sources.get(symbol, [])]

    def fact(env: Any, symbol: Any, **known: Any) -> None:
        named = sources(env, symbol)
        if not named:  # torch's own symbols (unbacked sizes, intermediate values): no input
            return
        python = traceback.extract_stack()[outside:-2]  # from the block's caller, without this hook's frames
        traced = list(TracingContext.extract_stack())
        recorded.facts.append(SizeFact(named, python + traced, len(python), **known))

    def replacement(env: Any, symbol: Any, target: Any, *args: Any, **kwargs: Any) -> None:
        try:
            if symbol not in env.replacements and target != symbol:
                if getattr(target, "is_Integer", False):
                    fact(env, symbol, value=int(target))
                else:
                    named = {free: sources(env, free) for free in target.free_symbols}
                    if all(named.values()):  # input sizes only: the expression over their sources
                        expression = target.xreplace({free: sympy.Symbol(names[0]) for free, names in named.items()})
                        fact(env, symbol, tied_to=[names[0] for names in named.values()], expression=str(expression))
        except Exception:  # noqa: BLE001 - recording is a bonus: never in the way of the capture
            pass
        return stock_replacement(env, symbol, target, *args, **kwargs)

    def narrowing(env: Any, symbol: Any, *args: Any, **kwargs: Any) -> None:
        before = env.var_to_range.get(symbol)
        result = stock_range(env, symbol, *args, **kwargs)
        try:
            after = env.var_to_range.get(symbol)
            if before is not None and after is not None and after != before and not kwargs.get("is_constraint"):
                fact(env, symbol, lower=_bound(after.lower), upper=_bound(after.upper))
        except Exception:  # noqa: BLE001 - as above
            pass
        return result

    def refine(message: Any, shapes: Any, *args: Any, **kwargs: Any) -> Any:
        refined = stock_refine(message, shapes, *args, **kwargs)
        recorded.fixes.append(SuggestedFix(str(message), shapes, refined))
        return refined

    patches = [(shape_env, "_set_replacement", stock_replacement, replacement),
               (shape_env, "_update_var_to_range", stock_range, narrowing),
               (dynamic_shapes, "refine_dynamic_shapes_from_suggested_fixes", stock_refine, refine)]
    patches = [patch for patch in patches if patch[2] is not None]
    for owner, name, _, hook in patches:
        setattr(owner, name, hook)
    try:
        yield recorded
    finally:
        for owner, name, stock, _ in patches:
            setattr(owner, name, stock)


def _bound(value: Any) -> int | None:
    """A range bound as an int, None for an infinite one (torch's `int_oo` is no sympy Integer)."""
    import sympy

    return int(value) if isinstance(value, (int, sympy.Integer)) else None


@dataclass
class StoredTensor:
    """A fake tensor (a value of torch.export's trace) stored in a module's state: the module's
    class, the attribute's name, and the Python stack of the store (outermost first). The class,
    not the object: non-strict capture traces proxies of the modules (`_AttrProxy` subclasses of
    each module's class), whose state reaches the user's module; a module of the user's model
    matches when its class is one of the recorded class's bases."""

    module_class: type
    name: str
    stack: list[Any]  # traceback.FrameSummary


@contextlib.contextmanager
def traced_tensors_stored() -> Iterator[list[StoredTensor]]:
    """Every fake tensor stored in a module's state while the block runs (`register_buffer`,
    attribute assignment), with the Python stack. A model that caches a value it computes in
    forward (`self.register_buffer("bias", bias)`) keeps the trace's fake tensor when capture
    fails and is retried (the stock exporter retries with torch.export's suggested fixes): the
    retry then bakes that fake into the graph. Recording only: the stock methods run unchanged
    and a failure to record is ignored."""
    import traceback

    from torch._subclasses.fake_tensor import is_fake as _is_fake

    recorded: list[StoredTensor] = []
    module = torch.nn.Module
    stock_register, stock_setattr = module.__dict__["register_buffer"], module.__dict__["__setattr__"]

    def note(owner: Any, name: Any, value: Any) -> None:
        try:
            if isinstance(value, torch.Tensor) and _is_fake(value):
                recorded.append(StoredTensor(type(owner), str(name), traceback.extract_stack()[:-2]))
        except Exception:  # noqa: BLE001 - recording is a bonus: never in the way of the capture
            pass

    @functools.wraps(stock_register)
    def register_buffer(owner: Any, name: str, tensor: Any, *args: Any, **kwargs: Any) -> Any:
        note(owner, name, tensor)
        return stock_register(owner, name, tensor, *args, **kwargs)

    @functools.wraps(stock_setattr)
    def setattr_(owner: Any, name: str, value: Any) -> Any:
        note(owner, name, value)
        return stock_setattr(owner, name, value)

    module.register_buffer, module.__setattr__ = register_buffer, setattr_
    try:
        yield recorded
    finally:
        module.register_buffer, module.__setattr__ = stock_register, stock_setattr


def is_data_dependent_guard(error: BaseException) -> bool:
    """torch.export needed a tensor's value to decide a guard (`if x.sum() > 0:`)."""
    return isinstance(error, torch.fx.experimental.symbolic_shapes.GuardOnDataDependentSymNode)


def is_data_dependent_condition(error: BaseException) -> bool:
    """A data-dependent guard on a condition (a branch: `if boxes.numel() > 4000:`), not on an
    integer (`len(rois)`, "Could not extract specialized integer")."""
    from sympy.logic.boolalg import Boolean  # relations are Booleans

    return is_data_dependent_guard(error) and isinstance(getattr(error, "cond", None), Boolean)


@dataclass
class HopBodyFailure:
    """A higher-order op's body that dynamo traced and then rejected as a whole (its output
    aliases an input or another output, it mutates an input): no frame of the error is in the
    body."""

    op: str  # the higher-order op: "cond", "while_loop", "scan", "map_impl"
    problem: str  # "aliasing" (an output is an input or a view of one, or two outputs share one tensor) or "input mutation"
    node_traces: list[str]  # FX stack traces of the body's nodes at fault: in-place calls first, then the nodes named
    functions: list[tuple[str, int, str]]  # the function traced (file, first line, name), then those it wraps
    # For aliasing, which values share a tensor, as torch's check words it: "input-to-output",
    # "output-to-output" or "input-to-input"; "" for a mutation.
    aliasing: str = ""


def hop_body_failure(error: BaseException) -> HopBodyFailure | None:
    """The body behind a capture error raised by dynamo's check of a traced higher-order op body
    (`check_aliasing_and_input_mutation`), read from the frames of the error's traceback: the
    body's graph, what the check found, and the function dynamo traced (the caller's `f`). Reads
    the graph's nodes' names, targets, users and stack traces only."""
    seen: set[int] = set()
    item: BaseException | None = error
    while item is not None and id(item) not in seen:
        seen.add(id(item))
        frames = _traceback_frames(item)
        for index, frame in enumerate(frames):
            if frame.f_code.co_name == "check_aliasing_and_input_mutation" and index > 0:
                return _hop_body_failure(frame.f_locals, frames[index - 1].f_locals)
        item = item.__cause__ or item.__context__
    return None


def hop_bodies_checked_past_failures(strategy: str, model: Any, args: tuple, kwargs: dict,
                                     dynamic_shapes: Any) -> list[tuple[BaseException, HopBodyFailure]]:
    """Every higher-order op body dynamo rejects as a whole, not only the first: a capture with
    `strategy` run again, in which dynamo's check of each traced body
    (`check_aliasing_and_input_mutation`, which raises at the first body it refuses: a cond's
    true branch hides its false branch) records its refusal and lets tracing carry on, as it
    would once that body were fixed. Each refusal comes with the error torch raised (its
    `real_stack` is the call chain to the op's call).

    For after a failed capture only, like draft_export: the capture's own outcome is dropped
    (its program holds bodies torch refuses) and torch's check is put back before this returns.
    Strict capture only: dynamo's export traces leave no compiled code behind, where non-strict
    capture compiles each op's call with torch.compile, whose cache would keep a body torch
    refuses for a later export in the same process."""
    if strategy != "strict":
        raise ValueError(f"bodies are checked past their failures in strict capture only, not {strategy!r}")
    import sys

    from torch._dynamo.variables import higher_order_ops

    stock = higher_order_ops.check_aliasing_and_input_mutation
    found: list[tuple[BaseException, HopBodyFailure]] = []

    def recording(*check_args: Any, **check_kwargs: Any) -> None:
        try:
            stock(*check_args, **check_kwargs)
        except Exception as error:
            checked = next((frame.f_locals for frame in _traceback_frames(error)
                            if frame.f_code is stock.__code__), None)
            failure = _hop_body_failure(checked, sys._getframe(1).f_locals) if checked is not None else None
            if failure is None:
                raise
            found.append((error, failure))

    higher_order_ops.check_aliasing_and_input_mutation = recording
    try:
        capture(strategy, model, args, kwargs, dynamic_shapes)
    finally:
        higher_order_ops.check_aliasing_and_input_mutation = stock
    return found


def _traceback_frames(error: BaseException) -> list[Any]:
    """The frames of an exception's own traceback, outermost first."""
    frames = []
    traceback_ = error.__traceback__
    while traceback_ is not None:
        frames.append(traceback_.tb_frame)
        traceback_ = traceback_.tb_next
    return frames


def _hop_body_failure(check: dict[str, Any], caller: dict[str, Any]) -> HopBodyFailure | None:
    import operator
    import re

    graph = check.get("graph")
    target = check.get("source_target")
    aliasing, mutation = check.get("aliasing_info"), check.get("mutation_info")
    if getattr(mutation, "has_mutation", False):
        problem, detail = "input mutation", mutation.msg
    elif getattr(aliasing, "has_aliasing", False):
        problem, detail = "aliasing", aliasing.msg
    else:
        return None
    nodes = {node.name: node for node in graph.nodes} if graph is not None else {}
    named = [nodes[name] for name in re.findall(r"\w+", detail) if name in nodes]
    at_fault = list(named)
    if problem == "input mutation":  # the in-place calls on the input or a view of it
        pending, seen = list(named), set()
        while pending:
            node = pending.pop(0)
            if node in seen:
                continue
            seen.add(node)
            if node.op in ("call_method", "call_function") and (
                    getattr(node.target, "__name__", str(node.target)).endswith("_") or node.target is operator.setitem):
                at_fault.insert(0, node)
            pending.extend(node.users)
    traces = [node.meta["stack_trace"] for node in at_fault if node.meta.get("stack_trace")]
    # "Output-to-output aliasing detected at nodes ...": torch's wording of which values share a tensor.
    which = re.match(r"\s*(\w+-to-\w+) aliasing", detail) if problem == "aliasing" else None
    return HopBodyFailure(getattr(target, "__name__", None) or str(getattr(target, "name", lambda: "")()),
                          problem, traces, _traced_functions(caller.get("f")),
                          which.group(1).lower() if which else "")


@dataclass
class HopBodyOutput:
    """A higher-order op's traced body whose outputs torch's code for the op could not read: the
    check that raised had the body's output value in hand (scan's `_extract_carry_and_out` taking
    `len()` of a body that returned a bare tensor instead of its list of carries then outputs).
    The call's operands are not the body's output: an error about them is not this."""

    op: str  # the higher-order op: "scan", ...
    functions: list[tuple[str, int, str]]  # the body function given to the op (file, first line, name), then those it wraps
    output_traces: list[str]  # FX stack traces of the nodes the body returned
    # torch's next check of the op, on the body's outputs read as it reads them once they are a
    # list: scan's carries (its first len(init) outputs) against init (`check_meta_consistency`).
    # Its refusal, as torch words it; "" when it passes or cannot be run.
    next_refusal: str = ""


def hop_body_output_failure(error: BaseException) -> HopBodyOutput | None:
    """The body behind a capture error that torch's code for a higher-order op raised on the
    body's output value: a frame of the error's traceback holds the op, the body traced into a
    graph module and that graph's output value (`outputs` in trace_scan), and the frame that
    raised holds that same value. Reads frames' locals and the graph's nodes only."""
    from torch._ops import HigherOrderOperator

    seen: set[int] = set()
    item: BaseException | None = error
    while item is not None and id(item) not in seen:
        seen.add(id(item))
        frames = _traceback_frames(item)
        raised = frames[-1].f_locals.values() if frames else ()
        for frame in frames:
            values = list(frame.f_locals.values())
            op = next((value for value in values if isinstance(value, HigherOrderOperator)), None)
            for body in (value for value in values if isinstance(value, torch.fx.GraphModule)):
                output = next((node.args[0] for node in body.graph.nodes if node.op == "output" and node.args), None)
                if op is None or output is None or not any(value is output for value in raised):
                    continue
                returned = [node for node in torch.utils._pytree.tree_leaves(output) if isinstance(node, torch.fx.Node)]
                functions = [found for value in values if callable(value) and not isinstance(value, HigherOrderOperator)
                             for found in _traced_functions(value)]
                return HopBodyOutput(op.name(), functions,
                                     [node.meta["stack_trace"] for node in returned if node.meta.get("stack_trace")],
                                     _scan_carry_refusal(op, frame.f_locals, output))
        item = item.__cause__ or item.__context__
    return None


def _scan_carry_refusal(op: Any, local: dict[str, Any], output: Any) -> str:
    """What torch's scan checks next once the body returns a list (trace_scan): its carries
    against `init` (shape, dtype, ...: a carry must keep its init's). A body that returned one
    bare tensor for a scan of one carry gives that carry. "" when there is nothing to check or
    the check passes."""
    from torch._higher_order_ops.utils import check_meta_consistency

    init = local.get("init")
    if op.name() != "scan" or not isinstance(init, (list, tuple)) or len(init) != 1 or not (
            isinstance(output, torch.fx.Node) and isinstance(output.meta.get("val"), torch.Tensor)):
        return ""
    try:
        check_meta_consistency(list(init), [output.meta["val"]], "init", "carry", include_contiguity=False)
    except torch._dynamo.exc.UncapturedHigherOrderOpError as refusal:  # the check's own refusal
        return str(refusal)
    except Exception:  # noqa: BLE001 - the check cannot run outside the trace: no claim
        return ""
    return ""


def _traced_functions(variable: Any) -> list[tuple[str, int, str]]:
    """The functions behind a dynamo variable, outermost first (file, first line, name): the one
    dynamo traced, then those it calls through partials, closure cells and `__wrapped__`. torch's
    own wrappers call the user's body that way (while_loop's flat_body_fn, scan's partial of
    wrap_combine_fn_flat)."""
    from torch._dynamo.variables.base import VariableTracker

    found: list[tuple[str, int, str]] = []
    pending, seen = [variable], set()
    while pending and len(seen) < 64:
        item = pending.pop(0)
        if item is None or id(item) in seen:
            continue
        seen.add(id(item))
        if isinstance(item, VariableTracker):  # a function dynamo traced, a partial of one
            try:
                code = item.get_code()
            except Exception:  # noqa: BLE001 - a partial: its function and arguments below
                code = None
            parts = [getattr(item, "fn", None), getattr(item, "func", None), *(getattr(item, "args", None) or ()),
                     *(getattr(item, "keywords", None) or {}).values()]
        elif isinstance(item, functools.partial):
            code, parts = None, [item.func, *item.args, *item.keywords.values()]
        elif callable(item) and hasattr(item, "__code__"):
            code = item.__code__
            parts = [getattr(item, "__wrapped__", None),
                     *(cell.cell_contents for cell in (item.__closure__ or ()) if _filled(cell))]
        else:
            continue
        if code is not None and (code.co_filename, code.co_firstlineno, code.co_name) not in found:
            found.append((code.co_filename, code.co_firstlineno, code.co_name))
        pending.extend(part for part in parts if isinstance(part, VariableTracker) or callable(part))
    return found


def _filled(cell: Any) -> bool:
    try:
        cell.cell_contents
    except ValueError:  # an empty cell
        return False
    return True


def is_missing_fake_kernel(error: BaseException) -> bool:
    """torch.export met an op it cannot run on fake tensors: a torch.library op or custom op
    with no fake (meta) implementation."""
    from torch._subclasses.fake_tensor import UnsupportedOperatorException

    return isinstance(error, UnsupportedOperatorException) or "no fake impl registered" in str(error)


@contextlib.contextmanager
def stack_frames_kept(keep: Callable[[str, str], bool]) -> Iterator[bool]:
    """While active, non-strict capture's stack traces also keep each frame (file, function)
    that `keep` accepts; torch asks only about frames its own rule drops (not `forward`, not
    torch/__init__.py, not a registered anchor). Yields whether this torch can (stacks.py).

    2.13 keeps the frames of `forward` and of the anchors in `torch.fx.proxy._STACK_TRACE_ANCHORS`
    (a set of (file, function)): the set is replaced by one that also says yes when `keep` does."""
    from torch.fx import proxy

    stock = proxy._STACK_TRACE_ANCHORS

    class Anchors(set):
        def __contains__(self, key: object) -> bool:
            return set.__contains__(self, key) or keep(*key)  # type: ignore[misc]

    anchors = Anchors(stock)
    proxy._STACK_TRACE_ANCHORS = anchors
    try:
        yield True
    finally:
        proxy._STACK_TRACE_ANCHORS = stock
        # Anchors torch itself registered meanwhile (annotate_fn) belong to the stock set.
        stock.update(set.__iter__(anchors))


@contextlib.contextmanager
def nodes_observed(observe: Callable[[Any], None]) -> Iterator[None]:
    """While active, `observe(node)` sees every node torch's tracers create, after the stock
    method built it (make_fx's `proxy_call` goes through `TracerBase.create_proxy`)."""
    from torch.fx import proxy

    stock = proxy.TracerBase.__dict__["create_proxy"]

    @functools.wraps(stock)
    def create_proxy(tracer: Any, *args: Any, **kwargs: Any) -> Any:
        created = stock(tracer, *args, **kwargs)
        observe(getattr(created, "node", None))
        return created

    proxy.TracerBase.create_proxy = create_proxy
    try:
        yield
    finally:
        proxy.TracerBase.create_proxy = stock


@contextlib.contextmanager
def ops_intercepted(names: tuple[str, ...], handle: Callable[[Any, tuple, dict, Callable[[], Any]], Any]) -> Iterator[None]:
    """Inside, every call of an overload of `torch.ops.aten.<name>` (for `names`) goes to
    `handle(op, args, kwargs, run)`, `run()` being the op's own call; every other op runs as it
    is. A dispatch mode (below autograd: what autograd records is unchanged); the handler decides
    whether its answer is the op's (pipeline/target/kept_fills.py: only a replay of the same fill)."""
    from torch.utils._python_dispatch import TorchDispatchMode

    ops = set()
    for name in names:
        packet = getattr(torch.ops.aten, name)
        ops.update(getattr(packet, overload) for overload in packet.overloads())

    class Intercepted(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            if func in ops:
                return handle(func, args, kwargs, lambda: func(*args, **kwargs))
            return func(*args, **kwargs)

    with Intercepted():
        yield


def reset_codegen_counter() -> None:
    """torch.fx names generated code `<eval_with_key>.N` from a process-wide counter: back to 0,
    and the generated sources it cached forgotten, as in a fresh process (pipeline/__init__.py)."""
    from torch.fx.graph_module import _loader

    _loader.next_id = 0
    _loader.eval_cache.clear()


@contextlib.contextmanager
def onnx_exporting() -> Iterator[None]:
    """As `_core.export` does: torch.onnx.is_in_onnx_export() is true inside."""
    from torch.onnx._internal.exporter import _flags

    _flags._is_onnx_exporting = True
    try:
        yield
    finally:
        _flags._is_onnx_exporting = False


# --- ops -------------------------------------------------------------------------------------

def is_op_overload(value: Any) -> bool:
    return isinstance(value, torch._ops.OpOverload)


def is_higher_order_op(value: Any) -> bool:
    return isinstance(value, torch._ops.HigherOrderOperator)


def is_torch_op(value: Any) -> bool:
    """An op a translation table may name: an overload or an overload packet."""
    return isinstance(value, (torch._ops.OpOverload, torch._ops.OpOverloadPacket))


def overloads(torch_op: Any) -> list[Any]:
    """An OpOverloadPacket means all its overloads (the public API only accepts OpOverloads)."""
    if isinstance(torch_op, torch._ops.OpOverloadPacket):
        return [getattr(torch_op, name) for name in torch_op.overloads()]
    return [torch_op]


def op_base_name(op: Any) -> str:
    """`linalg_svd` for aten.linalg_svd.default."""
    return op._opname


def op_name(op: Any) -> str:
    """`aten._linalg_svd.default`."""
    return f"{op.namespace}.{op._opname}.{op._overloadname}"


def is_onnx_op(target: Any) -> bool:
    """An ONNX op already (onnxscript ops in the graph): nothing to translate."""
    return _core._is_onnx_op(target)


def dispatch(node: Any, registry: Any) -> tuple[Callable | None, str]:
    """The translation the exporter would pick for an FX node, or None and why not."""
    return _dispatching.dispatch(node, registry)


def returns_without_mutating(op: Any) -> bool:
    """The op returns something and mutates nothing (functionalization keeps such ops)."""
    schema = op._schema
    return not schema.is_mutable and bool(schema.returns)


def composite_implicit_decomposition(op: Any) -> Callable | None:
    """The op's CompositeImplicitAutograd kernel, which run_decompositions inlines, if it has one."""
    if torch._C._dispatch_has_kernel_for_dispatch_key(op.name(), "CompositeImplicitAutograd"):
        return op.decompose
    return None


def keeps_op(decomposition: Any) -> bool:
    """The CIA table's entry saying the op is preserved as it is (not decomposed)."""
    return decomposition is _exported_program._special_op_to_preserve_cia


def dispatch_mode_base() -> type:
    """The base class of a mode that sees every op dispatched (traced_ops.py's recorder)."""
    from torch.utils._python_dispatch import TorchDispatchMode

    return TorchDispatchMode


@contextlib.contextmanager
def outside_tracing() -> Iterator[None]:
    """No tracer, fake mode or torch-function mode sees the ops run inside."""
    from torch.utils._python_dispatch import _disable_current_modes

    with _disable_current_modes(), torch._C.DisableTorchFunction():
        yield


def symbolic_expression(value: Any) -> Any:
    """A symbolic number's sympy expression (`s0`, `2*s1`), over the shape environment's symbols."""
    return value.node.expr


def size_hint(value: Any) -> Any:
    """A symbolic number's example value (None: unbacked); reading it adds no guard."""
    return value.node.hint


# --- registry and decomposition tables (pipeline/tables.py) -----------------------------------

def build_registry(opset: int) -> Any:
    """The ONNX registry `torch.onnx.export` builds for this opset (~0.3 s)."""
    return _registration.ONNXRegistry.from_torchlib(opset_version=opset)


def copy_registry(registry: Any) -> Any:
    """A registry of its own with the same translations (custom translations go there)."""
    copy = _registration.ONNXRegistry()
    copy._opset_version = registry._opset_version
    copy.functions = {key: list(metas) for key, metas in registry.functions.items()}
    return copy


def register_translation(registry: Any, op: Any, function: Any) -> None:
    registry.register_op(op, function, is_complex=False)


def op_namespaces() -> tuple[str, ...]:
    """The op namespaces torch knows (a `torch.library.custom_op` adds one)."""
    return tuple(sorted(torch.ops._dir))


@functools.lru_cache(maxsize=1)
def torchlib_op_names() -> tuple[str, ...]:
    """The torch ops onnxscript's torchlib translates, by qualified name (fixed per process)."""
    from torch.onnx._internal._lazy_import import onnxscript_apis

    return tuple(sorted({meta.qualified_name for meta in onnxscript_apis.get_torchlib_ops()}))


def torchlib_ops_available() -> frozenset[str]:
    """The torchlib ops `ONNXRegistry.from_torchlib()` would find now, asked with its own lookup
    (`_get_overload`: torchvision's ops also need torchvision to be importable)."""
    logger = _registration.logger
    silenced = logger.disabled  # its "torchvision is not installed" warnings, once per op per call
    logger.disabled = True
    try:
        return frozenset(name for name in torchlib_op_names() if _registration._get_overload(name) is not None)
    finally:
        logger.disabled = silenced


def decomposition_tables(registry: Any) -> tuple[dict, dict]:
    """(CIA table, Python table): the ONNX-friendly decomposition table for the ops the registry
    translates, split the way ExportedProgram.run_decompositions splits it."""
    onnx_ops = set(_decomp.get_onnx_implemented_overloads(registry))
    table = _decomp.create_onnx_friendly_decomposition_table(onnx_ops)
    return _exported_program._split_decomp_table_to_cia_and_python_decomp(table)


def record_cia_override(cia_to_decomp: dict) -> RecordedOverride | None:
    """torch's CompositeImplicitAutograd override for this table, recorded (cia_override.py)."""
    return RecordedOverride.record(cia_to_decomp)


def dims_from_strings(dynamic_shapes: Any) -> tuple[Any, bool]:
    """String dims ("batch") as torch.export Dims, and whether the ONNX axes need renaming after."""
    from torch.onnx._internal.exporter import _dynamic_shapes

    return _dynamic_shapes.convert_str_to_export_dim(dynamic_shapes)


@dataclass
class DeclaredDim:
    """How a dynamic-shapes spec declares one size: a named `Dim` (`name`; a derived one's
    expression, `root` the Dim it derives from) or a hint (`hint`: AUTO, DYNAMIC, STATIC), with
    the bounds the spec gives (None: not given; a named Dim's default range gives none)."""

    name: str | None = None
    root: str | None = None
    hint: str | None = None
    min: int | None = None
    max: int | None = None


def declared_dim(value: Any) -> DeclaredDim | None:
    """The declaration of one size in a dynamic-shapes spec; None for what declares none (None,
    an int: static)."""
    from torch.export.dynamic_shapes import Dim, _DerivedDim, _DimHint

    if isinstance(value, _DimHint):
        return DeclaredDim(hint=value.type.name, min=_bound(value.min) if value.min is not None else None,
                           max=_bound(value.max) if value.max is not None else None)
    if isinstance(value, Dim):
        root = value.root if isinstance(value, _DerivedDim) else value
        lower, upper = _bound(value.min), _bound(value.max)
        return DeclaredDim(name=value.__name__, root=root.__name__, min=lower if lower else None, max=upper)
    return None


# --- decompose, translate, optimize ----------------------------------------------------------

def decompose(program: Any, cia_to_decomp: dict, python_decomp_table: dict,
              override: RecordedOverride | None) -> Any:
    """`_core._prepare_exported_program_for_export`, with the decomposition tables given (and
    torch's CIA override entered from its recording when it matches).

    The graph modules made meanwhile make their code when first needed (deferred_graph_code.py,
    with what that saves): the decomposition and the two passes after it recompile the whole
    graph a dozen times, each time for code nothing runs."""
    from torch.onnx._internal.exporter import _fx_passes

    def run_decompositions() -> Any:
        return _exported_program._decompose_exported_program(
            program, cia_to_decomp=cia_to_decomp, python_decomp_table=python_decomp_table,
            joint_loss_index=None, decompose_custom_triton_ops=False)

    with torch.fx.experimental._config.patch(backed_size_oblivious=True), recorded_override(override), \
            graph_code_deferred():
        decomposed = _exported_program._disable_prexisiting_fake_mode(run_decompositions)()
        graph_module = decomposed.graph_module
        _fx_passes.insert_type_promotion_nodes(graph_module)
        graph_module = _fx_passes.remove_assertion_nodes(graph_module)
        decomposed._graph_module = graph_module
    return decomposed


def translate(decomposed: Any, registry: Any, opset: int) -> Any:
    """`_core.export` step 3: translate to an ONNXProgram, then convert to the opset."""
    from torch.onnx._internal._lazy_import import onnxscript_apis

    onnx_program = _core._exported_program_to_onnx_program(decomposed, registry=registry)
    onnx_program.model = onnxscript_apis.convert_version(onnx_program.model, opset)
    return onnx_program


@dataclass
class NodeFailure:
    """One FX node whose translation raised (an `output` node too), with its own exception (the
    exporter's ConversionError around it is not there)."""

    node: Any  # torch.fx.Node
    error: BaseException


def translation_failures(decomposed: Any, registry: Any) -> list[NodeFailure]:
    """Every node whose translation fails, in the order `translate` meets them.

    `_core`'s translation stops at its first failure. This runs it once more (only after it
    failed: the stock run is untouched) with each node's failure recorded, and the node's
    outputs stood in for by values of the type and shape torch recorded for them, so that the
    nodes after it are translated too. A node reading a stand-in without a type (torch recorded
    none) is not translated: its failure would say nothing about its own code. The model this
    run builds is dropped; what fails after the nodes (graph inputs and outputs, initializers)
    is not a node's failure."""
    from torch.onnx._internal.exporter import _tensors

    failures: list[NodeFailure] = []
    untyped: set[str] = set()
    stock_call = _core._handle_call_function_node_with_lowering
    stock_output = _core._handle_output_node

    def stand_in(name: str, value: Any, opset: Any) -> Any:
        stood = _tensors.SymbolicTensor(opset, name=name)
        _core._set_shape_type(stood, value, complex_to_float=True)
        return stood

    def call_function(model: Any, node: Any, values: dict, **kwargs: Any) -> None:
        if any(source.name in untyped for source in node.all_input_nodes):
            untyped.add(node.name)
            return
        try:
            stock_call(model, node, values, **kwargs)
        except Exception as error:  # noqa: BLE001 - recorded: the node's finding
            failures.append(NodeFailure(node, _as_stock_raises(node, error)))
            value = node.meta.get("val")
            if isinstance(value, (tuple, list)):
                values[node.name] = [stand_in(f"{node.name}__{index}", item, kwargs["opset"])
                                     for index, item in enumerate(value)]
            elif value is not None:
                values[node.name] = stand_in(node.name, value, kwargs["opset"])
            else:
                untyped.add(node.name)

    def output(node: Any, values: dict, graph_like: Any) -> None:
        try:
            stock_output(node, values, graph_like)
        except Exception as error:  # noqa: BLE001 - recorded: the output's finding
            failures.append(NodeFailure(node, _as_stock_raises(node, error)))

    _core._handle_call_function_node_with_lowering = call_function
    _core._handle_output_node = output
    try:
        _core._exported_program_to_onnx_program(decomposed, registry=registry)
    except Exception:  # noqa: BLE001 - past the nodes: stand-ins need not satisfy the rest
        pass
    finally:
        _core._handle_call_function_node_with_lowering = stock_call
        _core._handle_output_node = stock_output
    return failures


def _as_stock_raises(node: Any, error: BaseException) -> BaseException:
    """The error as `_core._translate_fx_graph` raises it for a node: in its ConversionError."""
    from torch.onnx._internal.exporter import _errors

    wrapped = _errors.ConversionError(
        f"Error when translating node {node.format_node()}. See the stack trace for more information.")
    wrapped.__cause__ = error
    return wrapped


def written_arguments(node: Any) -> list[Any]:
    """The arguments an FX node's op writes to in place (`self` of `add_`, of `index_copy_`)."""
    return [given for argument, given in _schema_arguments(node)
            if argument.alias_info is not None and argument.alias_info.is_write]


def aliased_arguments(node: Any) -> list[Any]:
    """The arguments an FX node's op returns a view or alias of, without writing to them
    (`self` of `view`, of a `to` that changes nothing)."""
    returned = {name for result in getattr(node.target, "_schema", None).returns if result.alias_info is not None
                for name in result.alias_info.before_set} if _schema_arguments(node) else set()
    return [given for argument, given in _schema_arguments(node)
            if argument.alias_info is not None and not argument.alias_info.is_write
            and returned & set(argument.alias_info.before_set)]


def _schema_arguments(node: Any) -> list[tuple[Any, Any]]:
    """(schema argument, what the node passes) for an op overload's node; [] for anything else."""
    op = node.target
    if not isinstance(op, torch._ops.OpOverload):
        return []
    return [(argument, node.args[index] if index < len(node.args) else node.kwargs.get(argument.name))
            for index, argument in enumerate(op._schema.arguments)]


def rename_inputs(model: Any, names: list[str]) -> None:
    from torch.onnx._internal.exporter import _ir_passes

    _ir_passes.rename_inputs(model, names)


def rename_outputs(model: Any, names: list[str]) -> None:
    from torch.onnx._internal.exporter import _ir_passes

    _ir_passes.rename_outputs(model, names)


def rename_dynamic_axes(onnx_program: Any, dynamic_shapes: Any) -> None:
    """The ONNX axes named after the string dims of the dynamic shapes, as the public API does."""
    onnx_program._rename_dynamic_axes(dynamic_shapes)


# --- tensors and programs --------------------------------------------------------------------

def is_fake(tensor: Any) -> bool:
    from torch._subclasses.fake_tensor import is_fake as fake

    return bool(fake(tensor))


def tree_map(function: Callable[[Any], Any], value: Any) -> Any:
    """`value` with `function` applied to each pytree leaf (torch.export's view of the inputs)."""
    from torch.utils import _pytree

    return _pytree.tree_map(function, value)


def leaves_with_paths(value: Any, is_leaf: Callable[[Any], bool]) -> list[tuple[str, Any]]:
    """Each pytree leaf of `value` with its path as torch writes it (`['past_key_values']`)."""
    from torch.utils import _pytree

    leaves, _ = _pytree.tree_flatten_with_path(value, is_leaf=is_leaf)
    return [(_pytree.keystr(path), leaf) for path, leaf in leaves]


def flat_user_args(program: Any, args: tuple, kwargs: dict) -> list[Any]:
    """The example inputs flattened as the program's signature takes them (raises if they do
    not match it)."""
    flat, _ = program._get_flat_args_with_check(args, kwargs)
    return flat


def graph_module_inputs(program: Any, args: tuple, kwargs: dict) -> list[Any]:
    """What the program's graph module is called with: parameters, buffers, constants, inputs."""
    return program._graph_module_flat_inputs(args, kwargs)


def torch_decomposition(op: Any) -> Callable[..., Any] | None:
    """torch's own Python decomposition of an op overload (torch._decomp's table), or None."""
    import torch._decomp

    return torch._decomp.decomposition_table.get(op)


def resolve_op(name: str) -> list[Any]:
    """The op overloads a name stands for: `aten.index_reduce.default` one, `aten.index_reduce`
    all of its overloads; [] when torch has no such op."""
    namespace, _, rest = name.partition(".")
    base, _, overload = rest.partition(".")
    try:
        packet = getattr(getattr(torch.ops, namespace), base)
        return [getattr(packet, overload)] if overload else overloads(packet)
    except (AttributeError, RuntimeError):
        return []


def extra_decomposition(op: Any) -> Callable[..., Any] | None:
    """A decomposition of `op` torch has but the exporter does not apply, or None.

    The exporter applies all of torch._decomp's table; torch keeps more in torch._inductor's
    (`index_reduce`, `put`, ...). That table is optional here (not in PIECES): importing it
    costs ~0.6 s, paid only by a job that looks for an alternative, and a torch without it
    just offers none."""
    import torch._decomp

    if op in torch._decomp.decomposition_table:
        return None
    try:
        from torch._inductor.decomposition import decompositions
    except Exception:  # noqa: BLE001 - an optional piece: no alternative
        return None
    return decompositions.get(op)


def trace_call_on_meta(function: Callable[..., Any], node: Any, decompositions: dict) -> Any:
    """The FX graph `function` makes of an FX node's call, traced with `decompositions` applied
    on meta tensors of the node's example shapes (symbolic sizes at their hints: no guard)."""
    from torch.fx.experimental.proxy_tensor import make_fx

    def concrete(value: Any) -> Any:
        if isinstance(value, torch.fx.Node):
            value = value.meta.get("val")
        if isinstance(value, torch.Tensor):
            return torch.empty([concrete(size) for size in value.shape], dtype=value.dtype, device="meta")
        if isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool)):
            return size_hint(value)
        return value

    args, kwargs = tree_map(concrete, node.args), tree_map(concrete, node.kwargs)
    with outside_tracing():
        return make_fx(lambda *a: function(*a, **kwargs), decomposition_table=decompositions)(*args)


def to_ort_value(tensor: Any) -> Any:
    """An onnxruntime OrtValue of a tensor (bfloat16 included)."""
    from torch.onnx._internal.exporter import _onnx_program

    return _onnx_program._to_ort_value(tensor)


def from_ort_value(value: Any) -> Any:
    from torch.onnx._internal.exporter import _onnx_program

    return _onnx_program._from_ort_value(value)


# --- the report's torch sections (report/torch_sections.py) ----------------------------------

def format_exported_program(program: Any) -> str:
    """The program as torch's report shows it: fenced, colours stripped."""
    from torch.onnx._internal.exporter import _reporting

    return _reporting._format_exported_program(program)


def analysis(program: Any, registry: Any | None) -> str:
    """torch's `_analysis.analyze` text: parameters, inputs/outputs, op counts, ops the registry
    (the default one when None) cannot translate."""
    from torch.onnx._internal.exporter import _analysis

    buffer: TextIO = io.StringIO()
    _analysis.analyze(program, registry=registry if registry is not None else _registration.ONNXRegistry.from_torchlib(),
                      file=buffer)
    return buffer.getvalue()


def decomposition_comparison(captured: Any, decomposed: Any) -> str:
    """torch's report section comparing the ops before and after decomposition."""
    from torch.onnx._internal.exporter import _analysis, _reporting

    return _reporting.format_decomp_comparison(*_analysis.compare_ops(captured, decomposed))


# Every private piece of torch this adapter reaches, by dotted name: active.py checks they all
# exist when it loads the adapter, so a patch release that moved one makes the process take the
# public path (saying which piece) instead of failing in the middle of an export.
PIECES = (
    "torch.utils._python_dispatch.TorchDispatchMode",
    "torch.onnx._internal.exporter._capture_strategies.TorchExportNonStrictStrategy",
    "torch.onnx._internal.exporter._capture_strategies.TorchExportStrictStrategy",
    "torch.onnx._internal.exporter._constants.TORCHLIB_OPSET",
    "torch.onnx._constants.ONNX_DEFAULT_OPSET",
    "torch.onnx._internal.exporter._core._is_onnx_op",
    "torch.onnx._internal.exporter._core._exported_program_to_onnx_program",
    "torch.onnx._internal.exporter._core._handle_call_function_node_with_lowering",
    "torch.onnx._internal.exporter._core._handle_output_node",
    "torch.onnx._internal.exporter._core._set_shape_type",
    "torch.onnx._internal.exporter._tensors.SymbolicTensor",
    "torch.onnx._internal.exporter._errors.ConversionError",
    "torch.onnx._internal.exporter._decomp.get_onnx_implemented_overloads",
    "torch.onnx._internal.exporter._decomp.create_onnx_friendly_decomposition_table",
    "torch.onnx._internal.exporter._dispatching.dispatch",
    "torch.onnx._internal.exporter._registration.ONNXRegistry.from_torchlib",
    "torch.onnx._internal.exporter._registration._get_overload",
    "torch.onnx._internal.exporter._registration.logger",
    "torch.onnx._internal.exporter._flags._is_onnx_exporting",
    "torch.onnx._internal.exporter._fx_passes.insert_type_promotion_nodes",
    "torch.onnx._internal.exporter._fx_passes.remove_assertion_nodes",
    "torch.onnx._internal.exporter._ir_passes.rename_inputs",
    "torch.onnx._internal.exporter._ir_passes.rename_outputs",
    "torch.onnx._internal.exporter._dynamic_shapes.convert_str_to_export_dim",
    "torch.onnx._internal.exporter._onnx_program.ONNXProgram._rename_dynamic_axes",
    "torch.onnx._internal.exporter._onnx_program._to_ort_value",
    "torch.onnx._internal.exporter._onnx_program._from_ort_value",
    "torch.onnx._internal.exporter._reporting._format_exported_program",
    "torch.onnx._internal.exporter._reporting.format_decomp_comparison",
    "torch.onnx._internal.exporter._analysis.analyze",
    "torch.onnx._internal.exporter._analysis.compare_ops",
    "torch.onnx._internal._lazy_import.onnxscript_apis",
    "torch._decomp.decomposition_table",
    "torch.export.exported_program._split_decomp_table_to_cia_and_python_decomp",
    "torch.export.exported_program._special_op_to_preserve_cia",
    "torch.export.exported_program._decompose_exported_program",
    "torch.export.exported_program._disable_prexisiting_fake_mode",
    "torch.export.exported_program._override_composite_implicit_decomp",
    "torch.export.exported_program.ExportedProgram._get_flat_args_with_check",
    "torch.export.exported_program.ExportedProgram._graph_module_flat_inputs",
    "torch.export.draft_export",
    "torch.export._draft_export.CaptureStructuredTrace",
    "torch.export._draft_export._export",
    "torch._functorch.config.generate_fake_kernels_from_real_mismatches",
    "torch._subclasses.fake_tensor.FakeTensorMode._maybe_infer_fake_kernel_from_pytree_out",
    "torch._subclasses.fake_tensor.MetadataMismatchError",
    "torch.fx.experimental.symbolic_shapes.ShapeEnv._log_real_tensor_propagation",
    "torch.fx.experimental.symbolic_shapes.ShapeEnv.evaluate_expr",
    "torch.fx.experimental.symbolic_shapes.free_unbacked_symbols",
    "torch.export.dynamic_shapes.Dim",
    "torch.export.dynamic_shapes._DerivedDim",
    "torch.export.dynamic_shapes._DimHint",
    "torch._subclasses.fake_impls.op_implementations_dict",
    "torch._subclasses.fake_impls._deregister_op_impl",
    "torch._subclasses.fake_tensor.is_fake",
    "torch._subclasses.fake_tensor.UnsupportedOperatorException",
    "torch.fx.experimental.symbolic_shapes.GuardOnDataDependentSymNode",
    "torch.fx.experimental._config.backed_size_oblivious",
    "torch.fx.proxy._STACK_TRACE_ANCHORS",
    "torch.fx._lazy_graph_module._LazyGraphModule",
    "torch.fx._lazy_graph_module._get_graph_module_cls",
    "torch.fx._lazy_graph_module._force_skip_lazy_graph_module_flag",
    "torch.fx.graph._PyTreeCodeGen",
    "torch.fx.graph_module.GraphModule._recompile_submodules",
    "torch.fx.proxy.TracerBase.create_proxy",
    "torch.fx.experimental.proxy_tensor.make_fx",
    "torch.fx.graph_module._loader",
    "torch.utils._python_dispatch.TorchDispatchMode",
    "torch.utils._python_dispatch._disable_current_modes",
    "torch.utils._pytree.tree_map",
    "torch.utils._pytree.tree_leaves",
    "torch.utils._pytree.tree_flatten_with_path",
    "torch.utils._pytree.keystr",
    "torch._ops.OpOverload",
    "torch._ops.OpOverloadPacket",
    "torch._ops.HigherOrderOperator",
    "torch._dynamo.variables.higher_order_ops.check_aliasing_and_input_mutation",
    "torch._dynamo.exc.UncapturedHigherOrderOpError",
    "torch._higher_order_ops.utils.check_meta_consistency",
    "torch._C._dispatch_has_kernel_for_dispatch_key",
    "torch._C.DisableTorchFunction",
    "torch.ops._dir",
)


# The adapter's interface: what every full adapter defines (tests/exporter/test_torch_internals.py).
__all__ = [
    "NAME", "FULL", "PIECES", "DEFAULT_OPSET", "TORCHLIB_OPSET",
    "CAPTURE_STRATEGIES", "Captured", "capture", "SizeFact", "SuggestedFix", "ShapeFacts", "shape_facts_recorded", "StoredTensor", "traced_tensors_stored", "is_data_dependent_guard", "is_missing_fake_kernel", "HopBodyFailure", "hop_body_failure", "hop_bodies_checked_past_failures", "HopBodyOutput", "hop_body_output_failure", "DraftFailure", "DraftRun", "Flip", "draft_export_failures", "is_data_dependent_condition",
    "stack_frames_kept", "nodes_observed", "ops_intercepted", "reset_codegen_counter", "onnx_exporting",
    "is_op_overload", "is_higher_order_op", "is_torch_op", "overloads", "op_base_name", "op_name", "is_onnx_op",
    "dispatch", "returns_without_mutating", "composite_implicit_decomposition", "keeps_op", "dispatch_mode_base",
    "outside_tracing", "size_hint", "symbolic_expression",
    "build_registry", "copy_registry", "register_translation", "op_namespaces", "torchlib_op_names",
    "torchlib_ops_available", "decomposition_tables", "record_cia_override", "dims_from_strings", "DeclaredDim", "declared_dim",
    "torch_decomposition", "resolve_op", "extra_decomposition", "trace_call_on_meta", "decompose", "translate", "NodeFailure", "translation_failures", "written_arguments", "aliased_arguments", "rename_inputs", "rename_outputs", "rename_dynamic_axes",
    "is_fake", "tree_map", "leaves_with_paths", "flat_user_args", "graph_module_inputs", "to_ort_value", "from_ort_value",
    "format_exported_program", "analysis", "decomposition_comparison",
]
