"""The save stage: the .onnx and its weights committed in one rename, only when nothing failed.

The pair is saved as the public API saves it and committed so that a kill at any instant leaves
the old pair or the new one (output/onnx_commit.py; its weights get their content's name after
the result, `Naming`, in Pipeline.finish). A failed export touches nothing, so the last good
.onnx survives.

A weights-free model (weights.py) has no weights to save: its graph-only model (built by the
check stage, graph_only.py) goes to `<name>.graph.onnx` next to the output, and the output with
its data, the last good model with weights, is left as it is. A later save with weights removes
the graph-only file (it would describe an older model).

The target's `source-paths` setting decides how the saved stack traces name source files
(source_paths.py: as the public API, relative, or none, with a sidecar of the originals).

An operating-system error while writing is an `output` finding naming the path and the error
(output/write_errors.py), not a bug of ours.
"""

from __future__ import annotations

import os

import onnxlens.exporter.pipeline.output.source_paths as source_paths
import onnxlens.exporter.pipeline.target.graph_only as graph_only
from onnxlens.exporter.pipeline.job import Job
from onnxlens.exporter.pipeline.output.onnx_commit import save_onnx
from onnxlens.exporter.pipeline.output.write_errors import output_finding


def run(job: Job) -> None:
    if any(f.severity == "error" for f in job.result.findings):
        return
    spec = job.spec
    result = job.result
    if job.weights_free is not None:
        entries = source_paths.apply_to_proto(job.graph_only, spec.source_paths, spec.root)
        try:
            graph = graph_only.save(job.graph_only, spec.graph_output)
        except OSError as error:
            job.fail([output_finding(spec.graph_output, error)])
        result.graph_onnx, result.written = graph.path, [graph]
        result.status = "ok"
        _write_sidecar(job, spec.graph_output, entries)
        return
    with source_paths.applied(job.onnx_program.model, spec.source_paths, spec.root) as entries:
        try:
            saved = save_onnx(job.onnx_program, spec.output)
        except OSError as error:
            job.fail([output_finding(spec.output, error)])
    result.onnx, result.onnx_data, result.written = saved.onnx, saved.data, saved.written
    result.status = "ok"
    if saved.weights_kept:
        job.log(f"{spec.name}: weights kept: {os.path.basename(saved.data)} holds what the save would write")
    _write_sidecar(job, spec.output, entries)
    # An earlier weights-free export's graph-only file describes a model that is gone: the
    # .onnx now holds this one's graph.
    try:
        os.remove(spec.graph_output)
    except FileNotFoundError:
        pass
    except OSError as error:
        job.log(f"could not remove {spec.graph_output}, an earlier export's graph-only model: {error}")


def _write_sidecar(job: Job, onnx_path: str, entries: list[dict[str, str]]) -> None:
    """The source-paths sidecar, after the model: a failure is a warning (the model is saved)."""
    spec = job.spec
    try:
        source_paths.write_sidecar(onnx_path, spec.source_paths, spec.root, entries)
    except OSError as error:
        finding = output_finding(source_paths.sidecar_path(onnx_path), error)
        finding.severity = "warning"
        finding.message += f" (the model itself was saved: {onnx_path})"
        job.result.findings.append(finding)
