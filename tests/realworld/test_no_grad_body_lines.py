"""A translation error inside a library's `@torch.no_grad()` forward lands on the library's line.

segment-anything's own ONNX wrapper, `SamOnnxModel` (segment_anything/utils/onnx.py, what its
export script exports), random ViT-B weights, with the number of prompt points dynamic, as an
interactive decoder is used. Stock fails to translate it (torch 2.13-2.15): `aten.mul.Scalar`
gets a symbolic float, `TypeError: float() argument must be a string or a real number, not
'SymbolicTensor'`, and its error names no line.

Found by hand: the failing node `mul_577` has the stack trace `File "<eval_with_key>.N", line L,
in forward`, the generated code of the `wrap_with_set_grad_enabled` body that
`@torch.no_grad()` on `SamOnnxModel.forward` became, at the line `mul_15 =
torch.ops.aten.mul.Tensor(to, sub_10)`. In the captured program, that body's node `mul_15`
recorded `select_masks` at `score = iou_preds + (num_points - 2.5) * score_reweight`, called
from forward's `masks, scores = self.select_masks(masks, scores, point_coords.shape[1])`:
`num_points`, the dynamic point count, minus 2.5 is the symbolic float. Without the generated
code traced back (exporter/pipeline/tracing/generated_code.py) the finding was on the builder
with no related location at all.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from tests.realworld.harness import check, errors, library_line, places, workspace

pytestmark = pytest.mark.slow  # segment-anything's decoder through onnxlens check

# segment-anything's ViT-B as the benchmarks build it (its package imported without the
# torchvision its __init__ needs), beside the decoder's builder.
SAM_VIT_B = Path(__file__).resolve().parents[2] / "benchmarks" / "models" / "sam_vit_b.py"

DECODER = '''
    import torch
    from sam_vit_b import sam_model_registry  # first: it imports segment_anything without its __init__
    from segment_anything.utils.onnx import SamOnnxModel


    def build():
        torch.manual_seed(0)
        return SamOnnxModel(sam_model_registry["vit_b"](), return_single_mask=True).eval()


    def inputs():
        torch.manual_seed(0)
        embeddings = torch.randn(1, 256, 64, 64)
        points, labels = torch.randint(0, 1024, (1, 5, 2)).float(), torch.randint(0, 4, (1, 5)).float()
        mask, has_mask = torch.randn(1, 1, 256, 256), torch.tensor([1], dtype=torch.float)
        return (embeddings, points, labels, mask, has_mask, torch.tensor([1500, 2250], dtype=torch.float))


    def shapes():
        points = torch.export.Dim("points", min=1, max=64)
        return (None, {1: points}, {1: points}, None, None, None)
'''


def test_the_failing_node_of_a_no_grad_forward_names_the_librarys_line(tmp_path):
    if importlib.util.find_spec("segment_anything") is None:  # the `repos` extra installs it
        pytest.skip("segment-anything is not installed")
    root = workspace(tmp_path / "ws", {"sam_decoder.py": DECODER, "sam_vit_b.py": SAM_VIT_B.read_text()}, '''
        [[tool.onnxlens.target]]
        name = "decoder"
        model = "sam_decoder.py:build"
        inputs = "sam_decoder.py:inputs"
        dynamic-shapes = "sam_decoder.py:shapes"
    ''', verify=False)
    _, data = check(root)
    [target] = data["targets"]
    if target["status"] == "ok":
        pytest.skip("this torch translates the decoder: no error to place")
    [error] = errors(target)
    assert error["code"] == "translation" and "aten.mul.Scalar" in error["message"]
    culprit = library_line("segment_anything/utils/onnx.py", "score = iou_preds + (num_points - 2.5) * score_reweight")
    caller = library_line("segment_anything/utils/onnx.py", "masks, scores = self.select_masks(masks, scores,")
    located = [(str(path), line) for path, line in places(error, root)]
    assert culprit in located and caller in located
    assert error["file"] == "sam_decoder.py"  # no line of the workspace's on the chain: the builder
