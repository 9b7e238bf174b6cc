"""The verify stage: onnxruntime against torch on the example inputs (exporter/verify).

A mismatch is a warning: the model is still saved. Trouble running the verification itself is
logged, never a reason to lose the export. A finding no line of the user's code produced (a value
computed, or a node onnxruntime refused, in library code only) goes to the model's definition,
as errors do.
"""

from __future__ import annotations

from onnxlens.exporter.locations import Place
from onnxlens.exporter.pipeline.job import Job


def run(job: Job) -> None:
    if not job.spec.verify:
        return
    if job.weights_free is not None:  # no weights to run: the weights-free note says it was skipped
        job.log(f"{job.spec.name}: verification skipped: the model's weights have no data")
        return
    from onnxlens.exporter.verify import verify

    try:
        summary, findings = verify(job.decomposed, job.onnx_program, job.target.args, job.target.kwargs,
                                   workspace=job.workspace, fallback=job.fallback)
    except Exception as error:  # noqa: BLE001 - verification trouble must not lose the export
        job.log(f"verification failed to run: {type(error).__name__}: {error}")
        return
    job.result.verification = summary
    for finding in findings:
        if finding.location is None and job.fallback is not None:
            # No line of the user's code produced the value (or the node onnxruntime refused):
            # the model's definition, as for errors; the library frames stay related.
            place = Place(related=finding.related)
            place.at_fallback(job.fallback)
            finding.location, finding.source_line = place.location, place.source_line
            finding.message += "\n(no line of your code is on its call chain: shown at the model's definition)"
    job.result.findings.extend(findings)
