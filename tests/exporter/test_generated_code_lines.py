"""Lines inside a higher-order op's body: a `torch.no_grad()` or `torch.autocast` block, a forward
under `@torch.no_grad()`.

torch.export makes such a block a higher-order op, and decomposition runs its body as torch.fx's
generated code: the nodes made there record `File "<eval_with_key>.N"` and no line of the model.
Their line is the one the captured node behind the generated line recorded
(exporter/pipeline/tracing/generated_code.py). Without that, a translation error in the block
fell back to the model's definition ("no line of your code is on the failing call chain"), and
hover and lens did not know what the block's lines became. The .onnx keeps torch's own traces:
test_pipeline_identity.py compares an autocast region byte for byte with a fresh process's
public export.
"""

from __future__ import annotations

from pathlib import Path

import onnx
import pytest
import torch

from tests.exporter.engine_support import shared_pipeline, spec_for, write
from tests.support.workspace import line_of

# The score reweighting of segment-anything's ONNX wrapper (SamOnnxModel.select_masks), in the
# user's own code: a number of points from a dynamic size, times a tensor. torch 2.13-2.15 turn it
# into aten.mul.Scalar with a symbolic float, which the ONNX translation cannot take.
POINTS = '''
    import torch
    from torch import nn


    class PointsInABlock(nn.Module):
        def forward(self, scores, points):
            with torch.no_grad():
                reweight = torch.tensor([[1000, 0, 0, 0]])
                return scores + (points.shape[1] - 2.5) * reweight


    class PointsUnderADecorator(nn.Module):
        @torch.no_grad()
        def forward(self, scores, points):
            weights = torch.tensor([[1000, 0, 0, 0]])
            return scores + (points.shape[1] - 1.5) * weights


    def inputs():
        return (torch.randn(1, 4), torch.randn(1, 5, 2))


    def shapes():
        return (None, {1: torch.export.Dim("points", min=1, max=64)})
'''

REGIONS = '''
    import torch
    from torch import nn


    class Regions(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(4, 4)

        def forward(self, x):
            h = self.proj(x)
            with torch.no_grad():
                z = torch.tanh(h) * 3
            with torch.autocast("cpu", enabled=False):
                w = torch.sigmoid(h.float())
            return h + z + w


    def inputs():
        return (torch.randn(2, 4),)
'''


@pytest.mark.parametrize(("model", "culprit"), [
    ("PointsInABlock", "return scores + (points.shape[1] - 2.5) * reweight"),
    ("PointsUnderADecorator", "return scores + (points.shape[1] - 1.5) * weights"),
])
def test_a_translation_error_in_a_no_grad_body_is_on_its_line(tmp_path, model, culprit):
    path = write(tmp_path, "points.py", POINTS)
    spec = spec_for(tmp_path, model, f"points.py:{model}", "points.py:inputs", dynamic_shapes="points.py:shapes")
    result = shared_pipeline().run(spec)
    if result.status == "ok":
        pytest.skip(f"torch {torch.__version__} translates this model (torch 2.12 does): no error to place")
    [error] = [finding for finding in result.findings if finding.severity == "error"]
    assert error.code == "translation" and "aten.mul.Scalar" in error.message
    assert (Path(error.location.file).resolve(), error.location.line) == (path.resolve(), line_of(path, culprit))
    assert "no line of your code" not in error.message


def test_what_the_lines_of_no_grad_and_autocast_blocks_became_is_known(tmp_path):
    path = write(tmp_path, "regions.py", REGIONS)
    result = shared_pipeline().run(spec_for(tmp_path, "regions", "regions.py:Regions", "regions.py:inputs"))
    assert result.status == "ok", [finding.message for finding in result.findings]
    ops = {info.line: info.ops for info in result.lines if Path(info.file).resolve() == path.resolve()}
    assert ops[line_of(path, "z = torch.tanh(h) * 3")] == {"Tanh": 1, "Mul": 1}
    assert ops[line_of(path, "w = torch.sigmoid(h.float())")] == {"Sigmoid": 1}
    # Each ONNX node is on one line: the blocks' nodes are no longer nobody's.
    nodes = onnx.load(result.onnx, load_external_data=False).graph.node
    assert sum(sum(line_ops.values()) for line_ops in ops.values()) == len(nodes)
    # The .onnx keeps torch's own stack traces, which name the generated code.
    traces = [prop.value for node in nodes for prop in node.metadata_props if prop.key == "pkg.torch.onnx.stack_trace"]
    assert any("<eval_with_key>" in trace for trace in traces)
