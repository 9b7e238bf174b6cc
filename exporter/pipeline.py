"""The export pipeline: load -> capture -> decompose -> scan -> translate -> check -> verify -> save.

BOOTSTRAP VERSION: a thin wrapper over the public `torch.onnx.export(dynamo=True)` so the worker,
server and CLI can be built against the final interface (`Pipeline().run(spec, on_event)`).
The real pipeline replaces the body of `run`, keeping the interface.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any, Callable

from onnxlens.exporter.types import ExportResult, Finding, Location, TargetSpec

EventSink = Callable[[dict[str, Any]], None]


def _resolve(root: str, ref: str) -> Any:
    target, _, attr = ref.rpartition(":")
    if target.endswith(".py"):
        path = (Path(root) / target).resolve()
        rel = path.relative_to(Path(root).resolve()).with_suffix("")
        name = ".".join(rel.parts)
        if name in sys.modules:
            module = sys.modules[name]
        else:
            spec = importlib.util.spec_from_file_location(name, path)
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module
            spec.loader.exec_module(module)
    else:
        module = importlib.import_module(target)
    return getattr(module, attr)


class Pipeline:
    def run(self, spec: TargetSpec, on_event: EventSink = lambda event: None) -> ExportResult:
        import torch

        start = time.perf_counter()
        if spec.root not in sys.path:
            sys.path.insert(0, spec.root)
        try:
            model = _resolve(spec.root, spec.model)()
            inputs = _resolve(spec.root, spec.inputs)()
            program = torch.onnx.export(model, inputs, dynamo=True, verbose=False)
        except Exception as error:  # noqa: BLE001 - the bootstrap reports anything as one finding
            frame = traceback.extract_tb(error.__traceback__)[-1]
            finding = Finding(
                code="translation",
                message=f"{type(error).__name__}: {str(error)[:500]}",
                stage="translate",
                location=Location(file=frame.filename, line=frame.lineno or 1),
            )
            return ExportResult(
                target=spec.name, status="failed", findings=[finding],
                seconds=time.perf_counter() - start,
            )
        os.makedirs(os.path.dirname(spec.output), exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(spec.output), suffix=".onnx.tmp")
        os.close(fd)
        program.save(tmp)
        os.replace(tmp, spec.output)
        return ExportResult(
            target=spec.name, status="ok", onnx=spec.output, seconds=time.perf_counter() - start,
            node_count=len(program.model.graph),
        )
