"""The second-shape check: after verification passes at the example sizes, the ONNX
model runs again with other sizes for its dynamic dimensions; a size fixed in the graph is a
`baked-shape` warning on the line that fixed it.

The fixed sizes here are not written by the user: torch's decomposition of adaptive average
pooling computes its kernel, stride or gather indices from the example's size, so the exported
graph is right at that size only. Our own small model shows it on its line; transformers'
UperNet (pyramid pooling, pool scales 1, 2, 3, 6) shows it in code nobody here wrote, its
responsible line found by reading modeling_upernet.py: `hidden_state = layer(hidden_state)` in
UperNetPyramidPoolingBlock.forward, where `layer` is the nn.AdaptiveAvgPool2d.

vit-pytorch's `ViT` with dynamic height and width exports and verifies at
224x224, and onnxruntime fails at 256x256 (197 vs 257 broadcast). Found by hand in
vit_pytorch/vit.py: `self.pos_embedding` is made in `__init__` with `num_patches +
num_cls_tokens` rows from `image_size`, and `forward` adds `self.pos_embedding[:seq]` to the
tokens (`x = x + self.pos_embedding[:seq]`): any image with more patches than the example's has
more tokens than rows, and torch itself fails there. The check missed it because every size it
tried was larger, torch refused them (a runtime assertion torch.export put in the program), and
a torch failure ended the check without a word.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from onnxlens.exporter.verify.second_shape import candidates
from tests.exporter.engine_support import shared_pipeline, spec_for, write
from tests.support.workspace import line_of

pytestmark = pytest.mark.slow  # library models (vit-pytorch, transformers)

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


class PooledBias(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)
        self.bias = nn.Parameter(torch.zeros(8, 4))

    def forward(self, x):
        h = self.proj(x).transpose(1, 2)
        pooled = F.adaptive_avg_pool1d(h, 4)
        return pooled + self.bias


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


def test_a_fixed_size_that_fails_onnxruntime_further_on_is_found_where_it_was_fixed(tmp_path):
    """The pooling's fixed kernel makes a longer output at other sizes; onnxruntime fails only at
    the addition that receives it. The values before the failing node are fetched with a session
    pruned to them: the first of another shape than torch's is the pooling's."""
    result = _export(tmp_path, "PooledBias", dynamic_shapes="pooled.py:shapes")
    assert result.verification.passed and result.verification.other_sizes_passed is False
    [finding] = [f for f in result.findings if f.code == "baked-shape"]
    assert finding.location.line == line_of(tmp_path / "pooled.py", "F.adaptive_avg_pool1d(h, 4)", 2)
    assert "onnxruntime could not run the model at ONNX node" in finding.message
    assert "(Add: " in finding.message and "aten.adaptive_avg_pool1d" in finding.message


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
    tried = candidates(program, (x, y), {})
    # 4 + 4 // 2 = 6 and 2 * 4 are past the maximum: 4 + 1, shared by both inputs; then the
    # smaller ones, 4 // 2 and 4 - 1.
    assert [tuple(t.shape) for other in tried for t in other.args] == [(5, 3), (5, 5), (2, 3), (2, 5), (3, 3), (3, 5)]
    assert [other.larger for other in tried] == [True, False, False]
    assert tried[0].describe() == "x: [5, 3] instead of [4, 3]; y: [5, 5] instead of [4, 5]"


def test_integer_inputs_are_tiled_from_the_example():
    class Embed(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.table = torch.nn.Embedding(10, 4)

        def forward(self, ids, mask):
            return self.table(ids) * mask[..., None]

    ids, mask = torch.tensor([[3, 9, 1, 4]]), torch.tensor([[True, True, True, False]])
    seq = torch.export.Dim("seq", min=2, max=64)
    program = torch.export.export(Embed(), (ids, mask), dynamic_shapes=({1: seq}, {1: seq}))
    grown, *_ = candidates(program, (ids, mask), {})
    assert grown.args[0].tolist() == [[3, 9, 1, 4, 3, 9]]  # ids of the vocabulary, as the example's
    assert grown.args[1].tolist() == [[True, True, True, False, True, True]]


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


VIT = """
import torch
from torch.export import Dim
from vit_pytorch import ViT


def build():
    torch.manual_seed(0)
    return ViT(image_size=224, patch_size=16, num_classes=10, dim=64, depth=2, heads=4, mlp_dim=128).eval()


def inputs():
    return (torch.randn(1, 3, 224, 224),)


def shapes():
    return {"img": {2: Dim.AUTO, 3: Dim.AUTO}}
"""


def _vit_check(root: Path, dynamic: bool) -> dict:
    """vit-pytorch as a user has it: imported from site-packages, through the real CLI and worker
    (its package imports torchvision, whose PyPI build does not load beside the CPU torch: the
    stand-in of tests/realworld/standins is on the worker's PYTHONPATH)."""
    from tests.realworld.harness import check, environment, site_packages

    write(root, "vit_model.py", VIT)
    write(root, "pyproject.toml", f"""
        [tool.onnxlens]

        [[tool.onnxlens.target]]
        name = "vit"
        model = "vit_model.py:build"
        inputs = "vit_model.py:inputs"
        {'dynamic-shapes = "vit_model.py:shapes"' if dynamic else ''}
    """)
    site = site_packages(root.parent / f"libs-{root.name}", "torchvision")
    process, data = check(root, env=environment(site))
    assert process.returncode == 0, process.stderr[-3000:]
    (target,) = data["targets"]
    return target


def test_vit_pytorch_positional_embedding_limits_the_sizes_on_its_line(tmp_path):
    from tests.realworld.harness import library_line

    target = _vit_check(tmp_path / "ws", dynamic=True)
    assert target["status"] == "ok"
    verification = target["verification"]
    assert verification["passed"] is True
    # torch refuses the larger sizes; a smaller one runs, and onnxruntime agrees there
    assert verification["other_sizes_refused"].startswith("img: [1, 3, 336, 336] instead of [1, 3, 224, 224]")
    assert "must match the size of tensor b (197)" in verification["other_sizes_refused"]
    assert verification["other_sizes"] == "img: [1, 3, 112, 112] instead of [1, 3, 224, 224]"
    assert verification["other_sizes_passed"] is True
    (finding,) = target["diagnostics"]
    assert (finding["code"], finding["severity"]) == ("baked-shape", "warning")
    # No line of the workspace computes it: the model's definition, the library line related first.
    assert (finding["file"], finding["line"]) == ("vit_model.py", line_of(tmp_path / "ws" / "vit_model.py", "def build"))
    add = library_line("vit_pytorch/vit.py", "x = x + self.pos_embedding[:seq]")
    assert (str(Path(finding["related"][0]["file"]).resolve()), finding["related"][0]["line"]) == add
    message = finding["message"]
    assert "with larger sizes (img: [1, 3, 336, 336] instead of [1, 3, 224, 224]) torch raises here" in message
    assert "onnxruntime fails too" in message and "197 by 442" in message


def test_vit_pytorch_without_dynamic_dimensions_has_no_second_shape(tmp_path):
    target = _vit_check(tmp_path / "ws", dynamic=False)
    assert target["verification"]["passed"] is True and "other_sizes" not in target["verification"]
    assert target["diagnostics"] == []
