"""A verification that cannot run is a finding, never silence (a 30 GB allocation in
`forward` gave "exported, 0 warnings", the failure only in the JSON's `verification.error`).

* torch running out of memory on the example inputs: through the real CLI and worker (the
  target's `memory-limit` makes the allocation fail the same way on any machine): the export
  is saved, exit status 0, and a `verification` warning lands on the line that allocates;
* onnxruntime without a CPU kernel for a bfloat16 op: a `verification` warning on the line that
  made the node, saying so.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.exporter.engine_support import shared_pipeline, spec_for, write
from tests.support.workspace import line_of

pytestmark = pytest.mark.slow  # the CLI and its worker as processes (a verification out of memory)

CLI = [sys.executable, "-m", "onnxlens.server.cli"]

TILER = '''
import torch
from torch import nn


class Tiler(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(32, 32)

    def forward(self, x):
        h = self.proj(x)
        tiled = h.repeat(2**25, 1)  # 4 GiB of float32
        return tiled.mean(0)


def build():
    torch.manual_seed(0)
    return Tiler().eval()


def inputs():
    return (torch.randn(1, 32),)
'''

CONFIG = '''
[tool.onnxlens]

[[tool.onnxlens.target]]
name = "tiler"
model = "tiler.py:build"
inputs = "tiler.py:inputs"
memory-limit = 512
'''

HALVES = '''
import torch
from torch import nn


class Scaled(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = nn.Parameter(torch.full((8,), 2.0))

    def forward(self, x):
        return x * self.scale


def build():
    return Scaled().to(torch.bfloat16).eval()


def inputs():
    return (torch.randn(4, 8).to(torch.bfloat16),)
'''


def test_torch_out_of_memory_in_forward_is_a_warning_on_the_allocating_line(tmp_path):
    write(tmp_path, "tiler.py", TILER)
    write(tmp_path, "pyproject.toml", CONFIG)
    process = subprocess.run([*CLI, "check", str(tmp_path), "--format", "json", "--no-cache"],
                             capture_output=True, text=True, timeout=600)
    assert process.returncode == 0, process.stderr[-3000:]  # a warning does not fail the check
    (target,) = json.loads(process.stdout)["targets"]
    assert target["status"] == "ok" and (tmp_path / target["onnx"]).is_file()
    verification = target["verification"]
    assert verification["passed"] is False and verification["error_source"] == "torch"
    assert "can't allocate memory" in verification["error"]
    (finding,) = target["diagnostics"]
    assert (finding["code"], finding["severity"]) == ("verification", "warning")
    assert finding["line"] == line_of(tmp_path / "tiler.py", "tiled = h.repeat(2**25, 1)")
    assert finding["message"].startswith("verification could not run: torch raised running the model")
    assert "can't allocate memory" in finding["message"]
    assert "the model was exported and saved, but not verified" in finding["message"]


def test_onnxruntime_without_a_kernel_is_a_warning_on_the_line_that_made_the_node(tmp_path):
    write(tmp_path, "halves.py", HALVES)
    result = shared_pipeline().run(spec_for(tmp_path, "halves", "halves.py:build", "halves.py:inputs", verify=True))
    assert result.status == "ok" and Path(result.onnx).is_file()
    assert result.verification.error_source == "onnxruntime"
    (finding,) = result.findings
    assert (finding.code, finding.severity, finding.stage) == ("verification", "warning", "verify")
    assert finding.location.line == line_of(tmp_path / "halves.py", "return x * self.scale")
    assert "onnxruntime could not run the exported model at ONNX node" in finding.message
    assert "(Mul: bfloat16, bfloat16 -> bfloat16)" in finding.message
    assert "no kernel for this op with these element types" in finding.message
