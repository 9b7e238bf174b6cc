"""The problems behind stock's first capture failure, as `torch.export.draft_export` sees them.

Where torch stops at the first of several problems (a data-dependent value, an op without a
fake kernel), draft_export carries on past them and reports every one: those past the first are
findings of their own, marked so (past_first.py). Its program silently bakes in the branch the
example input took: it is only read for its report, never exported.
"""

from __future__ import annotations

import os
from typing import Any

from onnxlens.exporter.locations import Frame, Origin, Workspace, classify, from_stack_trace, from_traceback
from onnxlens.exporter.pipeline.failures.call_chains import innermost_outside_torch, user_frames
from onnxlens.exporter.pipeline.failures.errors import exception_chain, headline
from onnxlens.exporter.pipeline.failures.past_first import FurtherProblem
from onnxlens.exporter.pipeline.job import Job
from onnxlens.exporter.pipeline.tracing.strategies import Capture
from onnxlens.exporter.torch_internals.active import internals


def draft_problems(job: Job, captured: Capture) -> list[FurtherProblem]:
    """The problems behind stock's first failure, as draft_export sees them (torch_internals'
    draft_run.py: traced as stock traces, once the earlier lines are changed): on the example
    input's branches, and, when stock's failure is a data-dependent condition, on the other
    branch of its line too (a change of that line may take either). Never raises: draft_export
    is a bonus, its failure is not news."""
    target, workspace = job.target, job.workspace
    first = captured.attempts[0].error  # stock's: its first strategy's
    blamed = innermost_outside_torch(user_frames(first, workspace), workspace)
    sides: list[Frame | None] = [None]
    if blamed is not None and any(internals.is_data_dependent_condition(item) for item in exception_chain(first)):
        sides.append(blamed)
    problems: list[FurtherProblem] = []
    for other_side_of in sides:
        try:
            run = internals.draft_export_failures(
                target.model, target.args, target.kwargs, target.dynamic_shapes,
                internal=lambda file: classify(file, workspace) is Origin.INTERNAL,
                other_side_of=None if other_side_of is None else (os.path.realpath(other_side_of.file),
                                                                  other_side_of.line))
        except Exception as error:  # noqa: BLE001 - as above
            job.log(f"draft_export could not collect more problems: {type(error).__name__}: {error}")
            continue
        branch = ""
        if other_side_of is not None:
            if not run.flips:
                continue  # the line's condition was never left undecided: no other branch was taken
            if run.stopped is not None and _raised_by_the_model(run.stopped, workspace):
                # A branch into the model's own `raise` (a check of the input) is no branch a change of
                # the line takes: the model would always fail.
                job.log(f"the other branch of {_where(other_side_of)} raises ({headline(run.stopped)}): not reported")
                continue
            flip = run.flips[0]
            branch = (f"on the other branch of {_where(other_side_of)} (`{flip.expr}` taken as {not flip.example}; "
                      f"the example input gives {flip.example})")
        if run.stopped is not None:
            job.log(f"draft_export stopped ({headline(run.stopped)}); the problems it saw before are reported")
        found_by = "by torch.export.draft_export" + (f" {branch}" if branch else "")
        problems.extend(FurtherProblem(description, found_by, frames) for description, frames in _draft_failures(run))
    return problems


def _where(frame: Frame) -> str:
    return f"{os.path.basename(frame.file)}:{frame.line}"


def _raised_by_the_model(error: BaseException, workspace: Workspace) -> bool:
    """The error was raised by the model's code (a `raise` of the user's or a library's), not
    by torch while tracing it."""
    frames = from_traceback(error)
    return bool(frames) and classify(frames[-1].file, workspace) is not Origin.INTERNAL


def _draft_failures(run: Any) -> list[tuple[str, list[Frame]]]:  # run: internals.DraftRun
    """(description, frames outermost first) for each problem of a draft run."""
    problems = []
    for failure in run.failures:
        kind, data = failure.kind, failure.data
        # A stack of its own, else (an op's failure, reported once per op) each call of the op.
        stack = from_traceback(failure.stack)
        chains = [stack] if stack else [from_stack_trace(trace) for trace in failure.node_traces] or [[]]
        if failure.asked_again:
            description = (f"data-dependent expression `{data.get('expr')}` asked for again (the example input "
                           f"gives {data.get('result')}): torch.export cannot decide it for every input; "
                           "draft_export answered it at an earlier line and kept the answer")
        elif kind == "DATA_DEPENDENT_ERROR":
            description = (f"data-dependent expression `{data.get('expr')}` (the example input gives "
                           f"{data.get('result')}): torch.export cannot decide it for every input")
        else:
            description = f"{kind.lower().replace('_', ' ')}: {data.get('op', '')}".rstrip(": ")
        problems.extend((description, frames) for frames in chains)
    return problems
