"""The verify stage: onnxruntime against torch on the example inputs (exporter/verify).

A mismatch is a warning: the model is still saved. Trouble running the verification itself is
logged, never a reason to lose the export. A mismatch first seen at an op the target's own
custom translation translated lands in that translation (the user's code that is wrong), the
op's call related. A finding no line of the user's code produced (a value
computed, or a node onnxruntime refused, in library code only) goes to the model's definition,
as errors do.

With the target's `profile` on, onnxruntime's profiler runs on the verification run, and the
result says what each line costs (line_costs.py).
"""

from __future__ import annotations

import inspect
from typing import Any

import onnxlens.exporter.pipeline.line_costs as line_costs
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
    from onnxlens.exporter.verify import verify
    from onnxlens.exporter.verify.profiling import Profiler

    profiler = Profiler() if job.spec.profile else None
    try:
        summary, findings = verify(job.decomposed, job.onnx_program, job.target.args, job.target.kwargs,
                                   workspace=job.workspace, fallback=job.fallback, profiler=profiler)
    except Exception as error:  # noqa: BLE001 - verification trouble must not lose the export
        job.log(f"verification failed to run: {type(error).__name__}: {error}")
        return
    finally:
        if profiler is not None:
            profiler.discard()
    job.result.verification = summary
    if profiler is not None:
        line_costs.record(job, profiler)
    if summary.passed:
        findings = findings + _other_sizes(job, summary)
    custom = job.target.custom_translations
    findings = [_in_translation(f, summary, custom, job.workspace) if custom else f for f in findings]
    for finding in findings:
        if finding.location is None and job.fallback is not None:
            # No line of the user's code produced the value (or the node onnxruntime refused):
            # the model's definition, as for errors; the library frames stay related.
            place = Place(related=finding.related)
            place.at_fallback(job.fallback)
            finding.location, finding.source_line = place.location, place.source_line
            finding.message += "\n(no line of your code is on its call chain: shown at the model's definition)"
    job.result.findings.extend(findings)


def _other_sizes(job: Job, summary: VerificationSummary) -> list[Finding]:
    """The second-shape check (exporter/verify/second_shape.py): verification again with other
    sizes for the dynamic dimensions; what fails or differs there is a `baked-shape` warning on
    the line verification puts it on."""
    import time

    from onnxlens.exporter.verify import verify
    from onnxlens.exporter.verify.second_shape import other_sizes

    started = time.perf_counter()
    try:
        other = other_sizes(job.decomposed, job.target.args, job.target.kwargs)
    except Exception as error:  # noqa: BLE001 - the check is extra: never a reason to lose the export
        job.log(f"{job.spec.name}: no second-shape check: {type(error).__name__}: {error}")
        return []
    if other is None:
        return []
    # Against the captured program: the decomposed one may have fixed the sizes itself.
    again, findings = verify(job.program, job.onnx_program, other.args, other.kwargs, workspace=job.workspace,
                             fallback=job.fallback, rtol=summary.rtol, atol=summary.atol, other_sizes=True)
    summary.other_sizes = other.describe()
    summary.other_sizes_seconds = round(time.perf_counter() - started, 4)
    if again.error is not None and not findings:  # it could not run there: nothing to say about the graph
        job.log(f"{job.spec.name}: second-shape check not run: {again.error}")
        summary.other_sizes = None
        return []
    summary.other_sizes_passed = again.passed
    return [Finding(code="baked-shape", stage="verify", location=f.location, related=f.related,
                    source_line=f.source_line,
                    message=(f"the ONNX model does not follow its dynamic dimensions: with other sizes "
                             f"({other.describe()}), {f.message[0].lower()}{f.message[1:]}; "
                             "a size of the example inputs is fixed in the graph here"))
            for f in findings]


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
