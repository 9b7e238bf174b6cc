"""The verify stage: onnxruntime against torch on the example inputs (exporter/verify).

A mismatch is a warning: the model is still saved. Trouble running the verification itself is
logged, never a reason to lose the export. A mismatch first seen at an op the target's own
custom translation translated lands in that translation (the user's code that is wrong), the
op's call related. A finding no line of the user's code produced (a value
computed, or a node onnxruntime refused, in library code only) goes to the model's definition,
as errors do.

With the target's `profile` on, onnxruntime's profiler runs on the verification run on the
example inputs, and the result says what each line costs (line_costs.py). A kept verification
that is reused (exporter/verify/reuse.py) runs nothing, so it has no cost per line; nor has a
verification verify-inputs = "small" made on smaller inputs alone. The log says so.
"""

from __future__ import annotations

import inspect
import time
from typing import Any

import onnxlens.exporter.pipeline.output.line_costs as line_costs
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
    try:
        _run(job)
    except Exception as error:  # noqa: BLE001 - a bug of ours in verification must not fail the export
        from onnxlens.exporter.verify import findings

        message = f"onnxlens failed while verifying (please report this): {type(error).__name__}: {error}"
        job.log(f"{job.spec.name}: {message}")
        finding = findings.not_run_finding(message)
        _at_fallback(job, finding)
        job.result.findings.append(finding)


def _run(job: Job) -> None:
    from onnxlens.exporter.verify import reuse, runtime

    started = time.perf_counter()
    key = _digest(job)
    kept = reuse.reused(job.spec, key)
    if kept is not None:
        kept.seconds = round(time.perf_counter() - started, 4)
        job.result.verification = kept
        job.log(f"{job.spec.name}: verification not run again: the ONNX model, its weights, the torch program "
                "and the inputs are those of an earlier passing one"
                + ("; no cost per line (only a verification that runs is profiled)" if job.spec.profile else ""))
        return
    # One serialized graph and set of weights for every session of this job (the second shape's too).
    sessions = runtime.Sessions(job.onnx_program.model)
    small = _on_smaller_inputs(job, sessions) if job.spec.verify_inputs == "small" else None
    if small is not None and small[1].passed and not small[2]:
        cut, summary, findings = small  # sizes other than the example's: the second shape too
        if job.spec.profile:
            job.log(f"{job.spec.name}: no cost per line: verify-inputs = \"small\" verified on smaller inputs, and "
                    "only the run on the example inputs is profiled")
    else:
        summary, findings = _profiled(job, sessions)
        if small is not None and summary.passed:
            # Right at the example's sizes, not at the cut ones: a size of the example is fixed.
            cut, _, cut_findings = small
            summary.other_sizes, summary.other_sizes_passed = cut.describe(), False
            findings = [_baked(f, f"the ONNX model does not follow its dynamic dimensions: with the smaller "
                                  f"inputs ({cut.describe()}), {f.message[0].lower()}{f.message[1:]}; a size "
                                  "of the example inputs is fixed in the graph here") for f in cut_findings]
        elif summary.passed and job.spec.second_shape:
            findings = findings + _other_sizes(job, summary, sessions)
    job.result.verification = summary
    custom = job.target.custom_translations
    findings = [_in_translation(f, summary, custom, job.workspace) if custom else f for f in findings]
    for finding in findings:
        _at_fallback(job, finding)
    job.result.findings.extend(findings)
    if summary.passed and not findings:
        try:
            reuse.keep(job.spec, key, summary)
        except OSError as error:
            job.log(f"{job.spec.name}: could not keep the verification: {error}")


def _at_fallback(job: Job, finding: Finding) -> None:
    """A finding no line of the user's code produced (a value, or the node onnxruntime refused):
    at the model's definition, as for errors; the library frames stay related."""
    if finding.location is not None or job.fallback is None:
        return
    place = Place(related=finding.related)
    place.at_fallback(job.fallback)
    finding.location, finding.source_line = place.location, place.source_line
    finding.message += ("\n(no line of your code is on its call chain: shown at the model's definition)"
                        if finding.related else "\n(shown at the model's definition)")


def _digest(job: Job) -> str | None:
    """What this verification depends on (exporter/verify/reuse.py); None when unknown."""
    from onnxlens.exporter.verify import reuse

    try:
        return reuse.digest(job.decomposed, job.onnx_program.model, job.target.args, job.target.kwargs, job.spec)
    except Exception as error:  # noqa: BLE001 - without a digest it simply runs
        job.log(f"{job.spec.name}: no digest of the verification: {type(error).__name__}: {error}")
        return None


def _profiled(job: Job, sessions: Any) -> tuple[VerificationSummary, list[Finding]]:
    """verify() on the example inputs; with the target's `profile` on, onnxruntime's profiler on
    its run, and the result's cost per line from it (line_costs.py). Only this run is profiled:
    the smaller inputs' and the second shape's run other sizes than the example's."""
    from onnxlens.exporter.verify.profiling import Profiler

    profiler = Profiler() if job.spec.profile else None
    try:
        verified = _on(job, sessions, job.target.args, job.target.kwargs, profiler=profiler)
    finally:
        if profiler is not None:
            profiler.discard()
    if profiler is not None:
        line_costs.record(job, profiler)
    return verified


def _on(job: Job, sessions: Any, args: tuple, kwargs: dict, *, other_sizes: bool = False,
        profiler: Any = None) -> tuple[VerificationSummary, list[Finding]]:
    """verify() on (args, kwargs); `other_sizes`: sizes other than the example's, against the
    captured program (the decomposed one may have fixed the example's sizes itself); `profiler`:
    onnxruntime's profiler on the run that gives the outputs."""
    from onnxlens.exporter.verify import verify

    return verify(job.program if other_sizes else job.decomposed, job.onnx_program, args, kwargs,
                  tolerance=tolerance_of(job.spec), workspace=job.workspace, fallback=job.fallback,
                  other_sizes=other_sizes, sessions=sessions, translated=job.decomposed if other_sizes else None,
                  profiler=profiler)


def _on_smaller_inputs(job: Job, sessions: Any) -> tuple[Any, VerificationSummary, list[Finding]] | None:
    """`verify-inputs = "small"`: verification on the first cut of the example torch runs
    (exporter/verify/small_inputs.py), with the cut; None when there is none. Its sizes are not
    the example's, so it is the second shape as well: where it fails, verification on the example
    tells a size fixed in the graph from a model that is wrong at every size."""
    from onnxlens.exporter.verify import small_inputs

    try:
        cuts = small_inputs.candidates(job.decomposed, job.target.args, job.target.kwargs)
    except Exception as error:  # noqa: BLE001 - the example inputs still serve
        job.log(f"{job.spec.name}: no smaller inputs: {type(error).__name__}: {error}")
        cuts = []
    for cut in cuts:
        summary, findings = _on(job, sessions, cut.args, cut.kwargs, other_sizes=True)
        if summary.error_source != "torch":
            summary.inputs = f"{cut.describe()} (verify-inputs = \"small\")"
            return cut, summary, findings
    job.log(f"{job.spec.name}: verify-inputs = \"small\": no dynamic dimension of the example could be cut; "
            "verified on the example inputs")
    return None


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
        again, findings = _on(job, sessions, other.args, other.kwargs, other_sizes=True)
        if again.error_source == "torch":
            if other.larger and refused is None:
                refused = (other, again, findings)
            continue
        checked = (other, again, findings)
        break
    found: list[Finding] = []
    if refused is not None and (checked is None or not checked[0].larger):
        found.append(_size_limit(job, summary, sessions, *refused))
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


def _size_limit(job: Job, summary: VerificationSummary, sessions: Any, other: Any, again: VerificationSummary,
                findings: list[Finding]) -> Finding:
    """torch refused every larger size for the dynamic dimensions: the model takes only some of
    the sizes the ONNX model's axes declare. On torch's failing line (its finding's place), with
    what onnxruntime does at those sizes (it has no such check)."""
    from onnxlens.exporter.verify import runtime

    summary.other_sizes_refused = f"{other.describe()}: {again.error.removeprefix('torch could not run the model: ')}"
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
