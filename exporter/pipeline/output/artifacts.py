"""The files an export writes besides the .onnx: the markdown report and the text dump of the
captured program.

Neither is needed for the editor's diagnostics, and both print whole programs (`str()` of a
7B model's program takes seconds), so a worker child writes them after it has sent its result
(`Pipeline.export`, then `write`); in-process callers get them written before `Pipeline.run`
returns. Their paths are fixed per target (`plan`), so the result names them before they exist;
each is replaced atomically, so a reader sees the previous version or the new one, never half
a file. A report that cannot be written leaves no earlier export's report behind: the report on
disk describes this export (its export id, which the server checks before opening it) or none.
"""

from __future__ import annotations

import os

from onnxlens.exporter import atomic
from onnxlens.exporter.pipeline.job import Job
from onnxlens.exporter.types import ExportedGraph


def program_dump_path(job: Job) -> str:
    """Next to the report: `<target>.exported_program.txt`."""
    return os.path.join(os.path.dirname(os.path.abspath(job.spec.report)), f"{job.spec.name}.exported_program.txt")


def plan(job: Job) -> None:
    """Name the files the result will point at (written by `write`)."""
    job.result.report = job.spec.report
    if job.program is not None:
        job.result.exported_program = program_dump_path(job)


def write(job: Job, previous: ExportedGraph | None = None) -> None:
    """Write the program dump and the report (`previous`: the target's previous export's graph,
    whose change the report shows). Never raises: a file that cannot be written is logged, and
    the result no longer names it if it has not been sent yet."""
    if job.program is not None:
        try:
            atomic.write_text(program_dump_path(job), str(job.program))
        except Exception as error:  # noqa: BLE001 - a missing dump is not worth failing the export
            job.result.exported_program = None
            job.log(f"could not write the exported program dump: {type(error).__name__}: {error}")
    try:
        from onnxlens.exporter.report import ReportInputs, write_report

        inputs = ReportInputs(exported_program=job.program, decomposed_program=job.decomposed,
                              onnx_program=job.onnx_program, registry=job.registry, error=job.error,
                              model=job.target.model if job.target else None, previous=previous)
        write_report(job.spec, job.result, inputs)
    except Exception as error:  # noqa: BLE001 - the report is secondary to the findings
        job.result.report = None
        job.log(f"could not write the export report: {type(error).__name__}: {error}")
        # The previous export's report would describe another export as this one (an "ok"
        # after a failed save on a full disk): it goes. Where it cannot (a read-only disk), the
        # server sees that its export id is not this export's and will not open it.
        try:
            os.remove(job.spec.report)
        except FileNotFoundError:
            pass
        except OSError as removal:
            job.log(f"could not remove the previous export's report {job.spec.report}: {removal}")
