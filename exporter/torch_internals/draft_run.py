"""torch.export.draft_export run for the problems behind the first: what stock's capture would
fail on next, once the lines before are changed.

draft_export traces like torch.export and, where torch.export needs a value it does not know
(a data-dependent guard) or an op has no fake kernel, takes the example input's real value and
carries on, logging each problem. Run as it is, it hides lines that stock fails on once the
earlier ones are changed, and it stops where stock does not. This run changes three things, for
this run only (every hook is removed when it ends; the run comes after stock's answer is known,
and its program is never shipped, so nothing of it reaches torch's answer):

* Fake kernels stay stock's. Where an op's real output disagrees with its fake one, draft_export
  infers a fake kernel from the real output; on zero-size or aliased real outputs that leaves
  stray unbacked sizes and draft_export stops (torchvision's RetinaNet with no box above the
  score threshold: `PendingUnbackedSymbolNotFound` at the floor division of an empty index
  tensor, a line stock passes). Stock has no real outputs: here the fake kernel's output stands,
  and the real tensors only answer what torch.export cannot decide.
* A value asked for again is a problem again. draft_export keeps each answer, so a later line
  asking for the same expression is decided for free; stock fails there once the earlier line
  no longer asks (torchvision's Keypoint R-CNN: `len(rois)` in MultiScaleRoIAlign, then
  `len(rois)` of the same boxes in heatmaps_to_keypoints). Each further line asking for an
  answered expression is recorded, with its Python stack.
* The other side of a branch (`other_side_of`, a file and line): a data-dependent condition
  decided on that line takes the value the example input does not give, unremembered, as if
  the line had been changed to take that branch. A branch has two sides and a user's change
  takes either; draft_export follows the example's only (torchvision's batched_nms: more than
  4000 box coordinates in the example take the per-class loop, while the branch that tracing
  takes is the other one).

What the run saw before draft_export stopped (an error of its own) is kept: those problems were
seen. A data-dependent value is recorded where draft_export takes it from the example input, with
the whole Python stack (draft_export's report keeps the innermost three frames outside torch,
which a hook of ours on the stack would take one of); an op without a fake kernel is read from
draft_export's structured-trace records, as its report reads it. (The report's other kinds are
not failures of stock's capture: a fake kernel that disagrees with the real one does not stop
torch.export, and added guards only concern dynamic shapes draft_export relaxed itself.)

Invariant: every method the run replaces is torch's own again when it ends, and torch.export then
fails exactly as before it (tests/exporter/test_torch_internals.py). Part of the full adapters
(torch_2_13.py: `draft_export_failures`).
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import os
import sys
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

import torch

Place = tuple[str, int]  # (real path, line)


@dataclass
class DraftFailure:
    kind: str  # "DATA_DEPENDENT_ERROR", "MISSING_FAKE_KERNEL"
    data: dict = field(default_factory=dict)  # "expr", "result" (a data-dependent value); "op" (a missing kernel)
    node_traces: list[str] = field(default_factory=list)  # an op's failure: the stack traces of its calls
    stack: list[Any] = field(default_factory=list)  # traceback.FrameSummary, outermost first: a data-dependent value
    asked_again: bool = False  # the expression was answered at an earlier line of the run


@dataclass
class Flip:
    """A condition the run decided against the example input (`other_side_of`)."""

    expr: str
    example: bool  # what the example input gives


@dataclass
class DraftRun:
    failures: list[DraftFailure]
    flips: list[Flip] = field(default_factory=list)
    stopped: BaseException | None = None  # draft_export raised: the failures are those logged before


def draft_export_failures(model: Any, args: tuple, kwargs: dict, dynamic_shapes: Any,
                          internal: Callable[[str], bool],
                          other_side_of: Place | None = None) -> DraftRun:
    """One draft_export run (see the module docstring). `internal(file)` says a frame is torch's
    own machinery (or Python's, or ours): a line of the model is the innermost frame that is not.
    The program is dropped: it bakes in the branches the run took."""
    run = _Run(internal, other_side_of, sys._getframe())
    program, stopped = None, None
    with run.hooks():
        try:
            program = torch.export.draft_export(model, args, kwargs=kwargs, dynamic_shapes=dynamic_shapes)
        except Exception as error:  # noqa: BLE001 - what it logged before is the result
            stopped = error
    return DraftRun(run.failures + run.missing_fake_kernels(_calls(program)), run.flips, stopped)


def _calls(program: Any) -> dict[str, list[str]]:
    """Each op's calls in the program, by stack trace: an op's failure (a missing fake kernel)
    comes without a stack of its own."""
    calls: dict[str, list[str]] = {}
    for node in program.graph.nodes if program is not None else ():
        if node.op == "call_function" and node.meta.get("stack_trace"):
            calls.setdefault(str(node.target), []).append(node.meta["stack_trace"])
    return calls


class _Run:
    def __init__(self, internal: Callable[[str], bool], other_side_of: Place | None, outer: Any) -> None:
        self.internal = functools.lru_cache(maxsize=None)(internal)
        self.other_side_of = other_side_of
        # The frame that runs draft_export: the frames from it outwards (its callers') are no part
        # of any problem's chain.
        self.outer = outer
        self.outer_depth = len(traceback.extract_stack(outer, limit=None))
        self.logs: list[tuple[str, Any]] = []  # the structured-trace records draft_export kept
        self.answered: dict[Any, Any] = {}  # expression -> the example's value draft_export took
        self.places: set[Place] = set()  # the lines with a failure
        self.failures: list[DraftFailure] = []  # data-dependent values, in the order the run met them
        self.flips: list[Flip] = []

    def place(self, frame: Any) -> Place | None:
        """The innermost line of the model's code (not `internal`) from `frame` outwards."""
        while frame is not None and frame is not self.outer:
            file = frame.f_code.co_filename
            if not self.internal(file):
                return _real(file), frame.f_lineno
            frame = frame.f_back
        return None

    def missing_fake_kernels(self, calls: dict[str, list[str]]) -> list[DraftFailure]:
        return [DraftFailure("MISSING_FAKE_KERNEL", contents, calls.get(str(contents.get("op")), []))
                for name, contents in self.logs if name == "missing_fake_kernel"]

    def taken(self, frame: Any, expr: Any, result: Any) -> None:
        """draft_export takes an expression's value from the example input, or a line asks for
        one it took before (in `frame`): a failure, the first on its line."""
        asked_again = expr in self.answered
        self.answered.setdefault(expr, result)
        place = self.place(frame)
        if place is None or place in self.places:
            return
        self.places.add(place)
        self.failures.append(DraftFailure("DATA_DEPENDENT_ERROR", {"expr": str(expr), "result": str(result)},
                                          stack=traceback.extract_stack(frame)[self.outer_depth:],
                                          asked_again=asked_again))

    @contextlib.contextmanager
    def hooks(self) -> Iterator[None]:
        from torch._subclasses.fake_tensor import FakeTensorMode, MetadataMismatchError
        from torch.export import _draft_export
        from torch.fx.experimental.symbolic_shapes import ShapeEnv, free_unbacked_symbols

        run = self
        stock_trace = _draft_export.CaptureStructuredTrace
        stock_export = _draft_export._export
        stock_cross_check = FakeTensorMode.__dict__["_maybe_infer_fake_kernel_from_pytree_out"]
        stock_answer = ShapeEnv.__dict__["_log_real_tensor_propagation"]
        stock_evaluate = ShapeEnv.__dict__["evaluate_expr"]
        arguments = _Arguments(stock_evaluate)

        class KeptTrace(stock_trace):
            """draft_export's log handler, whose records are read before it clears them (also when
            draft_export raises)."""

            def __exit__(self, *exc_info: Any) -> None:
                run.logs.extend(self.log_record.logs)
                return super().__exit__(*exc_info)

        def export(*args: Any, **kwargs: Any) -> Any:
            with torch._functorch.config.patch(generate_fake_kernels_from_real_mismatches=False):
                return stock_export(*args, **kwargs)

        def cross_check(mode: Any, func: Any, fake_in: Any, real_in: Any, fake_out: Any, real_out: Any) -> Any:
            try:
                return stock_cross_check(mode, func, fake_in, real_in, fake_out, real_out)
            except MetadataMismatchError:
                return fake_out  # the fake kernel's output, as stock traces it

        def answer(env: Any, orig_expr: Any, unsound_result: Any) -> None:
            try:
                run.taken(sys._getframe(1), orig_expr, unsound_result)
            except Exception:  # noqa: BLE001 - recording is a bonus: never in the way of the run
                pass
            return stock_answer(env, orig_expr, unsound_result)

        @functools.wraps(stock_evaluate)
        def evaluate(env: Any, orig_expr: Any, *args: Any, **kwargs: Any) -> Any:
            if run.other_side_of is not None:
                args, kwargs = run.other_side(env, orig_expr, arguments, args, kwargs, free_unbacked_symbols)
            # Asked again where stock would raise: no fallback value (guard_or_false ...) and no
            # size-oblivious reasoning (which decides `numel() == 0` without the answer).
            if (orig_expr in run.answered and arguments.get(args, kwargs, "fallback_value") is None
                    and not arguments.get(args, kwargs, "size_oblivious")):
                try:
                    run.taken(sys._getframe(1), orig_expr, run.answered[orig_expr])
                except Exception:  # noqa: BLE001 - as above
                    pass
            return stock_evaluate(env, orig_expr, *args, **kwargs)

        patches = [(_draft_export, "CaptureStructuredTrace", stock_trace, KeptTrace),
                   (_draft_export, "_export", stock_export, export),
                   (FakeTensorMode, "_maybe_infer_fake_kernel_from_pytree_out", stock_cross_check, cross_check),
                   (ShapeEnv, "_log_real_tensor_propagation", stock_answer, answer),
                   (ShapeEnv, "evaluate_expr", stock_evaluate, evaluate)]
        for owner, name, _, hook in patches:
            setattr(owner, name, hook)
        try:
            yield
        finally:
            for owner, name, stock, _ in patches:
                setattr(owner, name, stock)

    def other_side(self, env: Any, expr: Any, arguments: _Arguments, args: tuple, kwargs: dict,
                   unbacked: Callable[[Any], Any]) -> tuple[tuple, dict]:
        """evaluate_expr's arguments, with the branch the example does not take as the value
        torch falls back to when it cannot decide (`fallback_value`: returned, not remembered)
        for a data-dependent condition on the `other_side_of` line; unchanged otherwise."""
        from sympy.logic.boolalg import Boolean  # a condition (relations are Booleans), not an integer

        try:
            if (arguments.get(args, kwargs, "fallback_value") is not None or not isinstance(expr, Boolean)
                    or not unbacked(expr)):
                return args, kwargs
            if self.place(sys._getframe(2)) != self.other_side_of:  # 2: the frame that called evaluate_expr
                return args, kwargs
            example = expr.xreplace(env.real_tensor_prop_unbacked_vals).xreplace(env.backed_var_to_val)
            if example not in (True, False):
                return args, kwargs
            self.flips.append(Flip(str(expr), bool(example)))
            return arguments.set(args, kwargs, "fallback_value", not example)
        except Exception:  # noqa: BLE001 - as above
            return args, kwargs


class _Arguments:
    """The arguments of evaluate_expr(self, orig_expr, ...) after `orig_expr` that the run reads
    and sets (`size_oblivious`, `fallback_value`), by keyword or by position in its signature."""

    def __init__(self, evaluate_expr: Callable) -> None:
        names = list(inspect.signature(evaluate_expr).parameters)
        self.after_expr = {name: names.index(name) - 2 for name in ("size_oblivious", "fallback_value")}

    def get(self, args: tuple, kwargs: dict, name: str) -> Any:
        at = self.after_expr[name]
        return kwargs[name] if name in kwargs else args[at] if len(args) > at else None

    def set(self, args: tuple, kwargs: dict, name: str, value: Any) -> tuple[tuple, dict]:
        at = self.after_expr[name]
        if name not in kwargs and len(args) > at:
            return args[:at] + (value,) + args[at + 1:], kwargs
        return args, {**kwargs, name: value}


@functools.lru_cache(maxsize=None)
def _real(file: str) -> str:
    return os.path.realpath(file)
