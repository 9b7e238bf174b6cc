"""The second-shape check (issue 13): after verification passes at the example sizes, the ONNX
model runs again with other sizes for its dynamic dimensions; a size fixed in the graph is a
`baked-shape` warning on the line that fixed it.

The fixed sizes here are not written by the user: torch's decomposition of adaptive average
pooling computes its kernel, stride or gather indices from the example's size, so the exported
graph is right at that size only. Our own small model shows it on its line; transformers'
UperNet (pyramid pooling, pool scales 1, 2, 3, 6) shows it in code nobody here wrote, its
responsible line found by reading modeling_upernet.py: `hidden_state = layer(hidden_state)` in
UperNetPyramidPoolingBlock.forward, where `layer` is the nn.AdaptiveAvgPool2d.
"""

from __future__ import annotations

from pathlib import Path

import torch

from onnxlens.exporter.verify.second_shape import other_sizes
from tests.exporter.engine_support import shared_pipeline, spec_for, write
from tests.support.workspace import line_of

POOLED = '''
import torch
from torch import nn
import torch.nn.functional as F


class Summary(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        h = self.proj(x).transpose(1, 2)
        pooled = F.adaptive_avg_pool1d(h, 4)
        return pooled.flatten(1)


class Positions(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        positions = torch.arange(x.shape[1], dtype=x.dtype)
        return self.proj(x) + positions[None, :, None]


def inputs():
    torch.manual_seed(0)
    return (torch.randn(2, 16, 8),)


def shapes():
    return {"x": {0: "batch", 1: "seq"}}
'''


def _export(root: Path, model: str, **options):
    write(root, "pooled.py", POOLED)
    return shared_pipeline().run(spec_for(root, model.lower(), f"pooled.py:{model}", "pooled.py:inputs",
                                          verify=True, **options))


def test_a_size_fixed_in_the_graph_is_found_on_its_line(tmp_path):
    result = _export(tmp_path, "Summary", dynamic_shapes="pooled.py:shapes")
    summary = result.verification
    assert summary.passed  # at the example's sizes the model is right
    assert summary.other_sizes == "x: [3, 24, 8] instead of [2, 16, 8]" and summary.other_sizes_passed is False
    [finding] = [f for f in result.findings if f.code == "baked-shape"]
    assert finding.severity == "warning" and result.status == "ok"
    assert finding.location.line == line_of(tmp_path / "pooled.py", "F.adaptive_avg_pool1d(h, 4)")
    assert "aten.adaptive_avg_pool1d" in finding.message and "x: [3, 24, 8] instead of [2, 16, 8]" in finding.message
    report = Path(result.report).read_text()
    assert "Other sizes for the dynamic dimensions (x: [3, 24, 8] instead of [2, 16, 8]): **FAILED" in report


def test_a_model_that_follows_its_dynamic_dimensions_passes(tmp_path):
    result = _export(tmp_path, "Positions", dynamic_shapes="pooled.py:shapes")
    assert result.verification.other_sizes_passed is True
    assert not [f for f in result.findings if f.severity in ("error", "warning")]


def test_no_second_shape_without_dynamic_dimensions(tmp_path):
    result = _export(tmp_path, "Summary")
    assert result.verification.passed and result.verification.other_sizes is None
    assert not [f for f in result.findings if f.code == "baked-shape"]


def test_other_sizes_stay_in_the_declared_range():
    class Net(torch.nn.Module):
        def forward(self, x, y):
            return x.sum(1) + y.sum(1)

    x, y = torch.randn(4, 3), torch.randn(4, 5)
    batch = torch.export.Dim("batch", min=2, max=5)
    program = torch.export.export(Net(), (x, y), dynamic_shapes=({0: batch}, {0: batch}))
    other = other_sizes(program, (x, y), {})
    # 4 + 4 // 2 = 6 is past the maximum: the next candidate, shared by both inputs.
    assert [tuple(t.shape) for t in other.args] == [(5, 3), (5, 5)]
    assert other.describe() == "x: [5, 3] instead of [4, 3]; y: [5, 5] instead of [4, 5]"


def test_transformers_upernet_pyramid_pooling(tmp_path):
    write(tmp_path, "seg.py", '''
        import torch
        from transformers import ConvNextConfig, UperNetConfig, UperNetForSemanticSegmentation


        def build():
            torch.manual_seed(0)
            backbone = ConvNextConfig(num_channels=3, hidden_sizes=[8, 16, 32, 64], depths=[1, 1, 1, 1],
                                      out_features=["stage1", "stage2", "stage3", "stage4"])
            config = UperNetConfig(backbone_config=backbone, hidden_size=16, use_auxiliary_head=False, num_labels=3)
            return UperNetForSemanticSegmentation(config).eval()


        def inputs():
            torch.manual_seed(0)
            return (torch.randn(1, 3, 128, 128),)


        def shapes():
            return {"pixel_values": {2: "height", 3: "width"}}
    ''')
    result = shared_pipeline().run(spec_for(tmp_path, "seg", "seg.py:build", "seg.py:inputs", verify=True,
                                            dynamic_shapes="seg.py:shapes"))
    assert result.verification.passed and result.verification.other_sizes_passed is False
    [finding] = [f for f in result.findings if f.code == "baked-shape"]
    import transformers.models.upernet.modeling_upernet as upernet
    library = Path(upernet.__file__).resolve()
    pooling = line_of(library, "hidden_state = layer(hidden_state)")
    assert (str(library), pooling) in {(str(Path(r.file).resolve()), r.line) for r in finding.related}
    # No line of the workspace is on the chain but the model's definition, where it is shown.
    assert finding.location.line == line_of(tmp_path / "seg.py", "def build")
