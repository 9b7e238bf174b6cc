"""Helpers for the export worker's tests: user models written into tmp_path workspaces."""

from __future__ import annotations

import os
import textwrap
import time
from pathlib import Path

import psutil

from onnxlens.exporter.types import TargetSpec
from onnxlens.exporter.wire.protocol import SPARE_NAMES
from onnxlens.server.service.exports import ExportService

MLP_SOURCE = '''
import torch


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(8, 4)

    def forward(self, x):
        return torch.relu(self.linear(x))


def inputs():
    return (torch.randn(2, 8),)
'''

# Unseeded, with weights big enough for a data file of their own (the public API keeps small
# ones in the graph).
WIDE_MLP_SOURCE = MLP_SOURCE.replace("torch.nn.Linear(8, 4)", "torch.nn.Linear(8, 256)")


def write_model(root: Path, name: str, source: str) -> Path:
    """Write a workspace file, dated a minute ago: as if saved before the export was asked for.
    (The result cache does not store a result if a file of its closure changed during the job.)
    """
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(source))
    an_earlier_time = time.time() - 60
    os.utime(path, (an_earlier_time, an_earlier_time))
    return path


def spec_for(root: Path, file: str, *, name: str | None = None, model: str = "Model",
             inputs: str = "inputs", **options) -> TargetSpec:
    name = name or Path(file).stem
    output_dir = root / ".onnxlens"
    options.setdefault("verify", False)
    return TargetSpec(name=name, root=str(root), model=f"{file}:{model}", inputs=f"{file}:{inputs}",
                      output=str(output_dir / f"{name}.onnx"),
                      report=str(output_dir / "reports" / f"{name}.md"), **options)


def worker_children(service: ExportService) -> list[psutil.Process]:
    """Every live process below the service's zygote (jobs' children, their children), but the
    spare the zygote forks ahead of the next job (named so: exporter/worker/child.py)."""
    try:
        zygote = psutil.Process(service.worker.pid)
        return [p for p in zygote.children(recursive=True)
                if p.status() != psutil.STATUS_ZOMBIE and p.name() not in SPARE_NAMES]
    except psutil.NoSuchProcess:
        return []
