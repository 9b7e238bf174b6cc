"""The capture stage: torch.export the model, and turn capture failures into findings.

We run the stock exporter's own capture strategies (non-strict, then strict) ourselves instead
of through `_core.export`, which keeps only the first error: both errors are useful, they often
blame different lines (non-strict runs Python: it fails at the first data-dependent value;
strict (dynamo) names the data-dependent branch). Where torch stops at the first of several
problems (a data-dependent value, an op without a fake kernel) we also run
`torch.export.draft_export`, which carries on past them and reports every one: those past the
first are findings of their own, marked so. Its program silently bakes in the branch the example
input took: it is only read for its report, never exported (past_first.py). A higher-order op's
body dynamo rejects as a whole, or whose outputs torch's code for the op cannot read, is placed in
the body, and the bodies or body checks the first refusal hid are findings past it too
(hop_bodies.py); a dynamic-shapes declaration the code
contradicts on the line that does (dynamic_dims.py), inputs or dynamic shapes that do not fit the
model on the factory's `return` that built them (input_mistakes.py), a symbolic value a torch
function refuses with the line that made it related (symbolic_arguments.py). While capture traces, ops that certainly
have no translation are reported at once as preliminary findings of the scan (traced_ops.py).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any, Callable

from onnxlens.exporter.locations import (Frame, Origin, Workspace, classify, from_stack_trace, from_traceback,
                                         is_user_code, locate)
import onnxlens.exporter.pipeline.failures.input_mistakes as input_mistakes
import onnxlens.exporter.pipeline.untranslatable.outputs as outputs
from onnxlens.exporter.pipeline.failures.dynamic_dims import check_dynamic_dims, relocate_refusal
from onnxlens.exporter.pipeline.failures.errors import exception_chain, first_line
from onnxlens.exporter.pipeline.failures.hop_bodies import bodies_past_first, body_failure
from onnxlens.exporter.pipeline.job import Job
from onnxlens.exporter.pipeline.failures.past_first import FurtherProblem, further_findings
from onnxlens.exporter.pipeline.tracing.stacks import helper_frames_kept
from onnxlens.exporter.pipeline.failures.symbolic_arguments import SymbolicArgument, symbolic_argument
from onnxlens.exporter.pipeline.untranslatable.traced_ops import ops_checked_while_traced
from onnxlens.exporter.torch_internals.active import internals
from onnxlens.exporter.types import Finding, Fix, Location, Related

EXPORTDB_URL = "https://pytorch.org/docs/main/generated/exportdb/index.html"
_GB_URL_RE = re.compile(r"https://\S+/gb/gb\d+\.html")
_CHECK_FIX_RE = re.compile(r"^\s*\d+\.\s*(torch\._check\(.*\))\s*$", re.MULTILINE)
_BLAME_RE = re.compile(r'The following call raised this error:\s*\n\s*File "(.+?)", line (\d+)')

DATA_DEPENDENT_LEAD = ("data-dependent: this line needs the value of a tensor, which torch.export does not "
                       "know while tracing (branch with torch.cond or compute both sides with torch.where; "
                       "state known facts with torch._check(...))")

@dataclass
class Attempt:
    strategy: str  # "non-strict" | "strict" | "draft"
    error: BaseException


@dataclass
class Capture:
    program: Any = None  # torch.export.ExportedProgram
    strategy: str | None = None
    attempts: list[Attempt] = field(default_factory=list)


def capture(model: Any, args: tuple, kwargs: dict, dynamic_shapes: Any,
            log: Callable[[str], None]) -> Capture:
    result = Capture()
    for name in internals.CAPTURE_STRATEGIES:
        outcome = internals.capture(name, model, args, kwargs, dynamic_shapes)
        if outcome.program is not None:
            result.program, result.strategy = outcome.program, name
            if result.attempts:
                log(f"captured with torch.export {name} after: " + "; ".join(
                    f"{a.strategy}: {_headline(a.error)}" for a in result.attempts))
            return result
        result.attempts.append(Attempt(name, outcome.error))
    return result


def run(job: Job) -> None:
    """The capture stage: the program on the job, or the findings of every strategy's failure."""
    target = job.target
    # Helper frames first: the ops checked while traced are located with them.
    with helper_frames_kept(job.workspace) as kept, ops_checked_while_traced(job), \
            internals.shape_facts_recorded() as job.shape_facts, \
            internals.traced_tensors_stored() as job.stored_tensors:
        captured = capture(target.model, target.args, target.kwargs, target.dynamic_shapes, job.log)
    if captured.program is not None:
        job.program = captured.program
        # Only non-strict traces carry the extra helper frames (see stacks.py).
        job.anchors = kept if captured.strategy == "non-strict" else None
        check_dynamic_dims(job)
        return
    job.error = captured.attempts[0].error if captured.attempts else None
    errors = [attempt.error for attempt in captured.attempts]
    mistake = input_mistakes.finding(job, errors)
    if mistake is not None:
        job.fail([mistake])
    unflattenable = outputs.unflattenable_type([attempt.error for attempt in captured.attempts])
    # Only when no strategy found a line of the user's code (strict may name the user's return).
    if unflattenable is not None and not any(locate(user_frames(attempt.error, job.workspace), job.workspace).location
                                             for attempt in captured.attempts):
        explained = _output_finding(job, captured, unflattenable)
        if explained is not None:
            job.fail([explained])
    further: list[FurtherProblem] = []
    # The failures draft_export carries on past (the first is torch's; it reports the next ones too).
    if any(is_data_dependent(a.error) or misses_fake_kernel(a.error) for a in captured.attempts):
        further += draft_problems(job, captured)
    # The higher-order op bodies behind the first one dynamo refused.
    further += bodies_past_first(target, [(a.strategy, a.error) for a in captured.attempts], job.workspace,
                                 user_frames, job.log)
    job.fail(relocate_refusal(findings_for_failure(captured, job.workspace, job.fallback, further), job))


def _output_finding(job: Job, captured: Capture, type_name: str) -> Finding | None:
    """The finding for an output type torch.export cannot flatten (outputs.py); None if working
    it out failed (the strategies' own findings then stand)."""
    notes = [f"torch.export {attempt.strategy}: {outputs.rejection(attempt.error) or _headline(attempt.error)}"
             for attempt in captured.attempts]
    try:
        return outputs.finding(job, type_name, notes)
    except Exception as error:  # noqa: BLE001 - a bug here must not hide the capture failure
        job.log(f"could not explain the unflattenable output {type_name}: {type(error).__name__}: {error}")
        return None


def is_data_dependent(error: BaseException) -> bool:
    for item in exception_chain(error):
        if internals.is_data_dependent_guard(item):
            return True
        if "data-dependent" in (getattr(item, "gb_type", "") or "").lower():
            return True
    return False


def misses_fake_kernel(error: BaseException) -> bool:
    return any(internals.is_missing_fake_kernel(item) for item in exception_chain(error))


def draft_problems(job: Job, captured: Capture) -> list[FurtherProblem]:
    """The problems behind stock's first failure, as draft_export sees them (torch_internals'
    draft_run.py: traced as stock traces, once the earlier lines are changed): on the example
    input's branches, and, when stock's failure is a data-dependent condition, on the other
    branch of its line too (a change of that line may take either). Never raises: draft_export
    is a bonus, its failure is not news."""
    target, workspace = job.target, job.workspace
    first = captured.attempts[0].error  # stock's: its first strategy's
    blamed = _innermost_outside_torch(user_frames(first, workspace), workspace)
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
                job.log(f"the other branch of {_where(other_side_of)} raises ({_headline(run.stopped)}): not reported")
                continue
            flip = run.flips[0]
            branch = (f"on the other branch of {_where(other_side_of)} (`{flip.expr}` taken as {not flip.example}; "
                      f"the example input gives {flip.example})")
        if run.stopped is not None:
            job.log(f"draft_export stopped ({_headline(run.stopped)}); the problems it saw before are reported")
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


def _innermost_outside_torch(frames: list[Frame], workspace: Workspace) -> Frame | None:
    """The innermost frame of a chain that is the model's code (the user's or a library's)."""
    outside = [frame for frame in frames if classify(frame.file, workspace) is not Origin.INTERNAL]
    return outside[-1] if outside else None


def findings_for_failure(capture_result: Capture, workspace: Workspace, fallback: Location | None,
                         further: list[FurtherProblem]) -> list[Finding]:
    """One finding per distinct user line among all strategies' errors, then one per problem
    found past them (past_first.py): `further`, and what torch would refuse next in a body an
    error is about (hop_bodies.py).

    An error without any user line (shown at the model's definition) is only its own finding
    when no other strategy located the problem; otherwise it becomes a note of the located one.
    """
    findings: dict[tuple, Finding] = {}
    unlocated: list[tuple[Attempt, Finding]] = []
    behind: list[FurtherProblem] = []
    for attempt in capture_result.attempts:
        finding, located, next_problems = _finding_for_error(attempt, workspace, fallback)
        behind.extend(next_problems)
        if not located:
            unlocated.append((attempt, finding))
            continue
        key = _key(finding)
        if key in findings:
            findings[key].message += f"\n(torch.export {attempt.strategy} mode fails here too: {_headline(attempt.error)})"
        else:
            findings[key] = finding
    for attempt, finding in unlocated:
        if findings:
            first = next(iter(findings.values()))
            first.message += f"\n(torch.export {attempt.strategy} mode also failed: {_headline(attempt.error)})"
        else:
            findings.setdefault(_key(finding), finding)
    found = list(findings.values())
    return found + further_findings(behind + further, found, workspace, fallback, EXPORTDB_URL)


def _key(finding: Finding) -> tuple:
    location = finding.location
    return (location.file, location.line) if location else ("", 0)


def _finding_for_error(attempt: Attempt, workspace: Workspace,
                       fallback: Location | None) -> tuple[Finding, bool, list[FurtherProblem]]:
    """The finding for one strategy's error, whether it found a user line, and the problems
    torch would refuse next in the body the error is about (hop_bodies.py)."""
    error = attempt.error
    frames = user_frames(error, workspace)
    body = body_failure(error, frames, workspace)
    place = locate(body.frames if body else frames, workspace)
    located = place.location is not None
    message = f"torch.export ({attempt.strategy}) failed: {_summary(error)}"
    if body is not None:
        message += f"\n({body.note})"
        place.related.extend(body.related)
    made = _symbolic_argument_made(error, frames, workspace)
    if made is not None:
        place.related.insert(0, Related(file=os.path.realpath(made.made.file), line=made.made.line, message=(
            f"`{made.variable}` is assigned here: on a dynamic size this makes a {made.kind}, and the call "
            f"needs a plain value for `{made.argument}`")))
        message += (f"\n(`{made.variable}`, passed as `{made.argument}`, is a {made.kind}: see its assignment in "
                    f"`{made.made.func}`, line {made.made.line})")
    if is_data_dependent(error):
        message = f"{DATA_DEPENDENT_LEAD}\n{message}"
    docs_url = EXPORTDB_URL
    for item in exception_chain(error):
        match = _GB_URL_RE.search(str(item))
        if match:
            docs_url = match.group(0)
            break
    if place.at_fallback(fallback):
        message += "\n(no line of your code is on the failing call chain: shown at the model's definition)"
    fixes = _check_fixes(error, place.location, place.source_line)
    finding = Finding(code="torch-export", stage="capture", location=place.location, related=place.related,
                      source_line=place.source_line, docs_url=docs_url, fixes=fixes, message=message)
    return finding, located, body.further if body is not None else []


def _symbolic_argument_made(error: BaseException, frames: list[Frame], workspace: Workspace) -> SymbolicArgument | None:
    """Where the symbolic value a torch function refused was made (symbolic_arguments.py), from
    the innermost frame of the chain outside torch: the call that passed it."""
    call = _innermost_outside_torch(frames, workspace)
    if call is None:
        return None
    return symbolic_argument("\n".join(str(item) for item in exception_chain(error)), call)


def user_frames(error: BaseException, workspace: Workspace) -> list[Frame]:
    """The call chain of the failure, outermost first, from the best source available."""
    for item in exception_chain(error):
        # dynamo knows the user's stack when tracing (strict mode; a torch.cond / loop body in
        # non-strict mode, whose callers up to the op's call are Python's own).
        real_stack = getattr(item, "real_stack", None)
        if real_stack:
            frames = from_traceback(real_stack)
            if any(is_user_code(f.file, workspace) for f in frames):
                return _python_callers(error, frames, workspace) + frames
        summary = getattr(item, "innermost_user_frame_summary", None)
        if summary is not None and is_user_code(getattr(summary, "filename", None), workspace):
            return from_traceback([summary])
    for item in exception_chain(error):
        # non-strict mode runs the user's Python: the traceback has the user's frames.
        frames = from_traceback(item)
        if any(is_user_code(f.file, workspace) for f in frames):
            return frames
    for item in exception_chain(error):
        match = _BLAME_RE.search(str(item))
        if match:
            return [Frame(match.group(1), int(match.group(2)))]
    # No user frame at all: third-party library frames (a transformers model) still help.
    for item in exception_chain(error):
        frames = from_traceback(item)
        if any(classify(f.file, workspace) is Origin.LIBRARY for f in frames):
            return frames
    return []


def _python_callers(error: BaseException, traced: list[Frame], workspace: Workspace) -> list[Frame]:
    """The frames of the model's code that Python ran around what dynamo traced (in non-strict
    capture, the calls down to a higher-order op whose body dynamo traced); none in strict."""
    seen = {(frame.file, frame.line) for frame in traced}
    for item in exception_chain(error):
        frames = from_traceback(item)
        if any(classify(frame.file, workspace) is not Origin.INTERNAL for frame in frames):
            return [frame for frame in frames if (frame.file, frame.line) not in seen]
    return []


def _check_fixes(error: BaseException, location: Location | None, text: str | None) -> list[Fix]:
    """The torch._check(...) insertions the exporter suggests, as edits before the line."""
    if location is None:
        return []
    indent = (text or "")[: len(text or "") - len((text or "").lstrip())]
    fixes, seen = [], set()
    for item in exception_chain(error):
        for check in _CHECK_FIX_RE.findall(str(item)):
            if check in seen:
                continue
            seen.add(check)
            fixes.append(Fix(title=f"Insert {check}", file=location.file, line=location.line, column=1,
                             end_line=location.line, end_column=1, new_text=f"{indent}{check}\n"))
    return fixes


def _headline(error: BaseException) -> str:
    return f"{type(error).__name__}: {first_line(str(error))}"


def _summary(error: BaseException) -> str:
    """The explanation a user needs, without torch's debugging boilerplate."""
    gb_type = getattr(error, "gb_type", None)
    text = str(error)
    if gb_type:
        parts = [gb_type]
        for label in ("Explanation:", "Hint:"):
            for line in text.splitlines():
                if line.strip().startswith(label):
                    parts.append(line.strip())
                    if label == "Hint:" and len(parts) >= 4:
                        break
        return "\n".join(parts)
    lines = []
    for line in text.strip().splitlines():
        stripped = line.strip()
        if stripped.startswith(("For more information", "For extended logs", "If you suspect",
                                "For more debugging help", "For C++ stack trace", "Caused by:",
                                "The following call raised this error", "The error above occurred")):
            break
        if stripped:
            lines.append(stripped)
        if len(lines) >= 4:
            break
    checks = _CHECK_FIX_RE.findall(text)
    if checks:
        lines.append("To fix it, insert one of these checks before this line: " + " or ".join(checks))
    return f"{type(error).__name__}: " + "\n".join(lines)

