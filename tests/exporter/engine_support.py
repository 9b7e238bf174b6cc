"""Helpers shared by the engine's tests: one warm Pipeline per test session, spec builders.

Sharing the Pipeline is honest: it is built to serve many jobs in one process (the zygote
keeps one across all jobs), and reusing it is exactly what the tests of in-process reuse check.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from onnxlens.exporter.pipeline import Pipeline
from onnxlens.exporter.types import TargetSpec

_pipeline: Pipeline | None = None


def shared_pipeline() -> Pipeline:
    global _pipeline
    if _pipeline is None:
        _pipeline = Pipeline()
    return _pipeline


def spec_for(root: Path, name: str, model: str, inputs: str, **options) -> TargetSpec:
    out = root / ".onnxlens"
    return TargetSpec(name=name, root=str(root), model=model, inputs=inputs,
                      output=str(out / f"{name}.onnx"), report=str(out / f"{name}.md"),
                      verify=options.pop("verify", False), **options)


def run_target(root: Path, model: str, inputs: str, **options):
    """The shared pipeline's result for a target named after its model reference
    (`cases.py:Model` -> `cases_Model`)."""
    name = model.replace(".py", "").replace(":", "_").replace("/", "_")
    return shared_pipeline().run(spec_for(root, name, model, inputs, **options))


def write(root: Path, relative: str, text: str) -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"))
    return path
