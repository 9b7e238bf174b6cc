"""The verify stage: onnxruntime against torch on the example inputs (exporter/verify).

A mismatch is a warning: the model is still saved. Trouble running the verification itself is
logged, never a reason to lose the export. The runs (the example inputs, smaller ones, other
sizes) are exporter/verify/runs.py's. A mismatch first seen at an op the target's own custom
translation translated lands in that translation (the user's code that is wrong), the op's call
related. A finding no line of the user's code produced (a value computed, or a node onnxruntime
refused, in library code only) goes to the model's definition, as errors do.

With the target's `profile` on, onnxruntime's profiler runs on the verification run on the
example inputs, and the result says what each line costs (line_costs.py). A kept verification
that is reused (exporter/verify/reuse.py) runs nothing, so it has no cost per line; nor has a
verification verify-inputs = "small" made on smaller inputs alone. The log says so.
"""

from __future__ import annotations

import time

import onnxlens.exporter.pipeline.output.line_costs as line_costs
from onnxlens.exporter.pipeline.job import Job
from onnxlens.exporter.verify.runs import Runs


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
        findings.at_fallback(finding, job.fallback)
        job.result.findings.append(finding)


def _run(job: Job) -> None:
    from onnxlens.exporter.verify import findings, reuse

    started = time.perf_counter()
    runs = Runs(program=job.program, decomposed=job.decomposed, onnx_program=job.onnx_program,
                args=job.target.args, kwargs=job.target.kwargs, spec=job.spec, workspace=job.workspace,
                fallback=job.fallback, log=job.log, record_costs=lambda profiler: line_costs.record(job, profiler))
    key = runs.digest()
    kept = reuse.reused(job.spec, key)
    if kept is not None:
        kept.seconds = round(time.perf_counter() - started, 4)
        job.result.verification = kept
        job.log(f"{job.spec.name}: verification not run again: the ONNX model, its weights, the torch program "
                "and the inputs are those of an earlier passing one"
                + ("; no cost per line (only a verification that runs is profiled)" if job.spec.profile else ""))
        return
    summary, found = runs.verified()
    job.result.verification = summary
    custom = job.target.custom_translations
    found = [findings.in_translation(f, summary, custom, job.workspace) if custom else f for f in found]
    for finding in found:
        findings.at_fallback(finding, job.fallback)
    job.result.findings.extend(found)
    if summary.passed and not found:
        try:
            reuse.keep(job.spec, key, summary)
        except OSError as error:
            job.log(f"{job.spec.name}: could not keep the verification: {error}")
