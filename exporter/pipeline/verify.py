"""The verify stage: onnxruntime against torch on the example inputs (exporter/verify).

A mismatch is a warning: the model is still saved. Trouble running the verification itself is
logged, never a reason to lose the export. A mismatch first seen at an op the target's own
custom translation translated lands in that translation (the user's code that is wrong), the
op's call related. A finding no line of the user's code produced (a value
computed, or a node onnxruntime refused, in library code only) goes to the model's definition,
as errors do.
"""

from __future__ import annotations

import inspect
from typing import Any

from onnxlens.exporter.locations import Place, Workspace, is_user_code, source_line
from onnxlens.exporter.pipeline.job import Job
from onnxlens.exporter.torch_internals.active import internals
from onnxlens.exporter.types import Finding, Location, Related, VerificationSummary


def run(job: Job) -> None:
    if not job.spec.verify:
        return
    if job.weights_free is not None:  # no weights to run: the weights-free note says it was skipped
        job.log(f"{job.spec.name}: verification skipped: the model's weights have no data")
        return
    from onnxlens.exporter.verify import runtime, verify

    # One serialized graph and set of weights for every session of this job (the second shape's too).
    sessions = runtime.Sessions(job.onnx_program.model)
    summary, findings = verify(job.decomposed, job.onnx_program, job.target.args, job.target.kwargs,
                               tolerance=tolerance_of(job.spec), workspace=job.workspace, fallback=job.fallback,
                               sessions=sessions)
    job.result.verification = summary
    if summary.passed and job.spec.second_shape:
        findings = findings + _other_sizes(job, summary, sessions)
    custom = job.target.custom_translations
    findings = [_in_translation(f, summary, custom, job.workspace) if custom else f for f in findings]
    for finding in findings:
        if finding.location is None and job.fallback is not None:
            # No line of the user's code produced the value (or the node onnxruntime refused):
            # the model's definition, as for errors; the library frames stay related.
            place = Place(related=finding.related)
            place.at_fallback(job.fallback)
            finding.location, finding.source_line = place.location, place.source_line
            finding.message += ("\n(no line of your code is on its call chain: shown at the model's definition)"
                                if finding.related else "\n(shown at the model's definition)")
    job.result.findings.extend(findings)


def tolerance_of(spec: Any) -> Any:
    """The target's tolerance (exporter/verify/tolerance.py): its `rtol`/`atol` settings."""
    from onnxlens.exporter.verify.tolerance import Tolerance

    return Tolerance(rtol=spec.rtol, atol=spec.atol)


def _other_sizes(job: Job, summary: VerificationSummary, sessions: Any) -> list[Finding]:
    """The second-shape check (exporter/verify/second_shape.py): verification again with other
    sizes for the dynamic dimensions, against the captured program (the decomposed one may have
    fixed the sizes itself), the candidates in order until torch runs one. What fails or differs
    there is a `baked-shape` warning on the line verification puts it on. When torch refuses
    every larger candidate, the model has a size limit the ONNX model does not know of: a
    `baked-shape` warning where torch failed, saying what onnxruntime does at those sizes."""
    import time

    from onnxlens.exporter.verify import verify
    from onnxlens.exporter.verify.second_shape import candidates

    started = time.perf_counter()
    try:
        tried = candidates(job.program, job.target.args, job.target.kwargs)
    except Exception as error:  # noqa: BLE001 - the check is extra: never a reason to lose the export
        job.log(f"{job.spec.name}: no second-shape check: {type(error).__name__}: {error}")
        return []
    refused = None  # (sizes, torch's failure finding) of the first larger candidate torch refused
    checked = None  # (sizes, summary, findings) of the candidate torch ran
    for other in tried:
        again, findings = verify(job.program, job.onnx_program, other.args, other.kwargs, workspace=job.workspace,
                                 fallback=job.fallback, tolerance=tolerance_of(job.spec), other_sizes=True,
                                 sessions=sessions, translated=job.decomposed)
        if again.error_source == "torch":
            if other.larger and refused is None:
                refused = (other, again, findings)
            continue
        checked = (other, again, findings)
        break
    found: list[Finding] = []
    if refused is not None and (checked is None or not checked[0].larger):
        found.append(_size_limit(job, sessions, *refused))
    if checked is not None:
        other, again, findings = checked
        if again.error is not None and not findings:  # it could not run there: nothing to say about the graph
            job.log(f"{job.spec.name}: second-shape check not run: {again.error}")
        else:
            summary.other_sizes, summary.other_sizes_passed = other.describe(), again.passed
            found.extend(_baked(f, f"the ONNX model does not follow its dynamic dimensions: with other sizes "
                                   f"({other.describe()}), {f.message[0].lower()}{f.message[1:]}; a size of the "
                                   "example inputs is fixed in the graph here") for f in findings)
    summary.other_sizes_seconds = round(time.perf_counter() - started, 4)
    return found


def _size_limit(job: Job, sessions: Any, other: Any, again: VerificationSummary, findings: list[Finding]) -> Finding:
    """torch refused every larger size for the dynamic dimensions: the model takes only some of
    the sizes the ONNX model's axes declare. On torch's failing line (its finding's place), with
    what onnxruntime does at those sizes (it has no such check)."""
    from onnxlens.exporter.verify import runtime

    job.result.verification.other_sizes_refused = f"{other.describe()}: {again.error.removeprefix('torch could not run the model: ')}"
    try:
        feeds = runtime.ort_feeds(job.onnx_program.model, runtime.user_inputs(job.program, other.args, other.kwargs))
        runtime.run(sessions.session(), feeds)
        onnx = "onnxruntime runs the exported model at these sizes without an error: its outputs are not the model's"
    except Exception as error:  # noqa: BLE001 - onnxruntime raises its own types
        from onnxlens.exporter.verify.divergence import first_line

        onnx = f"onnxruntime fails too ({first_line(error)})"
    (torch_failure,) = findings
    error = again.error.removeprefix("torch could not run the model: ")
    return _baked(torch_failure, (
        f"the ONNX model's dynamic dimensions take sizes the model does not: with larger sizes "
        f"({other.describe()}) torch raises here ({error}); {onnx}. A size of the example inputs is fixed "
        "in the model: give the dimensions the sizes they take (a `max` in the dynamic shapes) or make "
        "this code follow the size"))


def _baked(finding: Finding, message: str) -> Finding:
    """A `baked-shape` warning where `finding` is, saying `message`."""
    return Finding(code="baked-shape", stage="verify", location=finding.location, related=finding.related,
                   source_line=finding.source_line, message=message)


def _in_translation(finding: Finding, summary: VerificationSummary, custom: dict, workspace: Workspace) -> Finding:
    """The mismatch on the user's custom translation of the op where the values first differ,
    when that translation is in the workspace; the finding as it was otherwise."""
    first = summary.first_mismatch
    if finding.code != "mismatch" or first is None:
        return finding
    function = next((f for torch_op, f in custom.items() for overload in internals.overloads(torch_op)
                     if str(overload) == first.target), None)
    defined = _definition(function) if function is not None else None
    if defined is None or not is_user_code(defined.file, workspace):
        return finding
    name = getattr(function, "__name__", None) or getattr(getattr(function, "function", None), "__name__", "?")
    related = list(finding.related)
    if finding.location is not None:
        related.insert(0, Related(file=finding.location.file, line=finding.location.line,
                                  column=finding.location.column, message=f"{first.target} is called here"))
    return Finding(code=finding.code, severity=finding.severity, stage=finding.stage, location=defined,
                   related=related, source_line=source_line(defined.file, defined.line),
                   message=f"your ONNX translation of {first.target} (`{name}`) does not compute what torch does: "
                           + finding.message)


def _definition(function: Any) -> Location | None:
    """The `def` line of a translation (a plain function, or an onnxscript function's Python one)."""
    function = getattr(function, "function", function)  # onnxscript's OnnxFunction keeps the Python function
    try:
        function = inspect.unwrap(function)
        file = inspect.getsourcefile(function)
        line = inspect.getsourcelines(function)[1]
    except (OSError, TypeError):
        return None
    return Location(file=file, line=line) if file else None
