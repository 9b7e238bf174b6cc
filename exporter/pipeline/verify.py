"""The verify stage: onnxruntime against torch on the example inputs (exporter/verify).

A mismatch is a warning: the model is still saved. Trouble running the verification itself is
logged, never a reason to lose the export.
"""

from __future__ import annotations

from onnxlens.exporter.pipeline.job import Job


def run(job: Job) -> None:
    if not job.spec.verify:
        return
    from onnxlens.exporter.verify import verify

    try:
        summary, findings = verify(job.decomposed, job.onnx_program, job.target.args, job.target.kwargs,
                                   workspace=job.workspace)
    except Exception as error:  # noqa: BLE001 - verification trouble must not lose the export
        job.log(f"verification failed to run: {type(error).__name__}: {error}")
        return
    job.result.verification = summary
    job.result.findings.extend(findings)
