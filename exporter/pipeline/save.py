"""The save stage: the .onnx (and its .onnx.data) written atomically, only when nothing failed.

The .onnx is saved exactly as `torch.onnx.export(..., f=path, dynamo=True)` saves it (weights in
`<name>.onnx.data` next to it), so the files are byte-identical to the public API's. The
external data file's name is written into the model, so the model is saved under its final
name in a private staging directory next to the destination (the rules of exporter/atomic.py:
`.<name>.*.tmp`, leftovers of killed writers removed), then each file is renamed into place (the
data file first: the new .onnx never points at old weights). A failed export touches nothing,
so the last good .onnx survives. The files get the mode a plain `open()` gives them
(atomic.FILE_MODE: 0644 under the usual umask), as the public API's do.

A weights-free model (weights.py) has no weights to save: its graph-only model (built by the
check stage, graph_only.py) goes to `<name>.graph.onnx` next to the output, and the output with
its .onnx.data, the last good model with weights, is left as it is. A later save with weights
removes the graph-only file (it would describe an older model).

The target's `source-paths` setting decides how the saved stack traces name source files
(source_paths.py: as the public API, relative, or none, with a sidecar of the originals).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from typing import Any

from onnxlens.exporter import atomic
import onnxlens.exporter.pipeline.graph_only as graph_only
import onnxlens.exporter.pipeline.source_paths as source_paths
from onnxlens.exporter.pipeline.job import Job


def run(job: Job) -> None:
    if any(f.severity == "error" for f in job.result.findings):
        return
    spec = job.spec
    if job.weights_free is not None:
        entries = source_paths.apply_to_proto(job.graph_only, spec.source_paths, spec.root)
        job.result.graph_onnx = graph_only.save(job.graph_only, spec.graph_output)
        source_paths.write_sidecar(spec.graph_output, spec.source_paths, spec.root, entries)
        job.result.status = "ok"
        return
    with source_paths.applied(job.onnx_program.model, spec.source_paths, spec.root) as entries:
        save_onnx(job.onnx_program, spec.output)
    source_paths.write_sidecar(spec.output, spec.source_paths, spec.root, entries)
    job.result.onnx = spec.output
    job.result.status = "ok"
    # An earlier weights-free export's graph-only file describes a model that is gone: the
    # .onnx now holds this one's graph.
    with contextlib.suppress(FileNotFoundError):
        os.remove(job.spec.graph_output)


def save_onnx(onnx_program: Any, destination: str) -> list[str]:
    """Save like the public API (external data) atomically; returns the files written."""
    directory = os.path.dirname(os.path.abspath(destination)) or "."
    os.makedirs(directory, exist_ok=True)
    name = os.path.basename(destination)
    staging = tempfile.mkdtemp(prefix=atomic.staging_prefix(name), suffix=".tmp", dir=directory)
    try:
        onnx_program.save(os.path.join(staging, name), include_initializers=True,
                          keep_initializers_as_inputs=False, external_data=True)
        written = sorted(os.listdir(staging), key=lambda f: f == name)  # the .onnx last
        for file in written:
            os.replace(os.path.join(staging, file), os.path.join(directory, file))
        if f"{name}.data" not in written:
            # A model without weights has no data file: drop a stale one from an older export.
            stale = os.path.join(directory, f"{name}.data")
            if os.path.exists(stale):
                os.remove(stale)
        atomic.remove_stale_staging(directory, name, keep=staging)
        return [os.path.join(directory, file) for file in written]
    finally:
        shutil.rmtree(staging, ignore_errors=True)
