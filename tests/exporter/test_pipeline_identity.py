"""Helper frames are kept for our findings and hover, and the .onnx stays the public API's."""

from __future__ import annotations

import filecmp
import sys
from pathlib import Path

import pytest
import torch

from tests.exporter.engine_support import shared_pipeline, spec_for, write
from tests.support.workspace import line_of

NET = '''
import torch
from torch import nn

from blocks.helpers import gated_mlp


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.up = nn.Linear(8, 32)
        self.down = nn.Linear(32, 8)

    def mix(self, x):
        return x * torch.sigmoid(x)

    def forward(self, x):
        h = gated_mlp(self.up(x))
        if torch.onnx.is_in_onnx_export():  # as under the public API, this is True while exporting
            h = h * 0.5
        return self.down(self.mix(h))


def build():
    torch.manual_seed(0)
    return Net().eval()


def inputs():
    torch.manual_seed(0)
    return (torch.randn(3, 8),)


def shapes():
    return {"x": {0: torch.export.Dim("rows", min=1, max=128)}}
'''

HELPERS = '''
import torch


def gated_mlp(x):
    gate, value = x.chunk(2, dim=-1)
    return torch.cat([value * torch.nn.functional.gelu(gate), value], dim=-1)
'''


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("identity")
    write(root, "blocks/__init__.py", "")
    write(root, "blocks/net.py", NET)
    write(root, "blocks/helpers.py", HELPERS)
    return root


@pytest.fixture(scope="module")
def exported(workspace):
    spec = spec_for(workspace, "net", "blocks/net.py:build", "blocks/net.py:inputs",
                    dynamic_shapes="blocks/net.py:shapes", input_names=["features"], output_names=["out"], opset=20)
    return shared_pipeline().run(spec), sys.modules["blocks.net"]


def test_model_with_helpers_is_byte_identical_to_the_public_api(exported, tmp_path):
    result, module = exported
    assert result.status == "ok", result.findings
    public = tmp_path / "net.onnx"
    torch.onnx.export(module.build(), module.inputs(), str(public), dynamo=True, dynamic_shapes=module.shapes(),
                      input_names=["features"], output_names=["out"], opset_version=20, verbose=False)
    assert filecmp.cmp(result.onnx, public, shallow=False)
    assert filecmp.cmp(f"{result.onnx}.data", f"{public}.data", shallow=False)
    assert not torch.onnx.is_in_onnx_export()  # and reset afterwards


def test_an_older_opset_is_byte_identical_too(workspace, tmp_path):
    spec = spec_for(workspace, "net18", "blocks/net.py:build", "blocks/net.py:inputs", opset=18)
    result = shared_pipeline().run(spec)
    assert result.status == "ok", result.findings
    module = sys.modules["blocks.net"]
    public = tmp_path / "net18.onnx"
    torch.onnx.export(module.build(), module.inputs(), str(public), dynamo=True, opset_version=18, verbose=False)
    assert filecmp.cmp(result.onnx, public, shallow=False)
    import onnx

    model = onnx.load(result.onnx, load_external_data=False)
    assert {o.domain: o.version for o in model.opset_import}[""] == 18


def test_hover_info_lands_on_helper_lines(exported, workspace):
    result, _ = exported
    helpers = workspace / "blocks" / "helpers.py"
    net = workspace / "blocks" / "net.py"
    by_line = {(Path(i.file).name, i.line): i for i in result.lines}
    gelu = by_line[("helpers.py", line_of(helpers, "torch.cat([value"))]
    assert "Gelu" in gelu.ops
    assert any(o.startswith("float32[rows, ") for o in gelu.outputs)
    assert "Sigmoid" in by_line[("net.py", line_of(net, "x * torch.sigmoid(x)"))].ops
    # forward's own line keeps what happened there (the Linear layers).
    assert "Gemm" in by_line[("net.py", line_of(net, "self.down(self.mix(h))"))].ops or \
        "MatMul" in by_line[("net.py", line_of(net, "self.down(self.mix(h))"))].ops


def test_capture_leaves_no_stack_trace_anchors_behind(exported):
    from torch.fx import proxy

    assert not any("identity" in file for file, _ in getattr(proxy, "_STACK_TRACE_ANCHORS", set()))
