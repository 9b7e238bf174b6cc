"""The problems behind the first on torchvision's detection models: each line
stock fails on once the lines before it are changed is a finding of its own, marked as found past
the first failure, and the first finding is stock's.

torchvision does not load beside this environment's CPU torch (its wheels are CUDA builds for one
torch each): the models run in the zoo's vision environment (.venvs/zoo-vision, torch 2.14.1 and
torchvision 0.29.1, `scripts/setup-zoo-vision`, which does nothing when it is current), through
`onnxlens check` there, on a workspace of builders as a user writes them (random init, no
downloads). The lines were found by hand: torchvision's source read, and each confirmed by
changing the lines before it in a copy of torchvision and running the stock exporter
(benchmarks/zoo/vision/cases.toml, `how`). Stock stops at batched_nms's
`if boxes.numel() > (4000 if cpu else 100_000) and not torchvision._is_tracing():` (boxes.py:86) in
all three; behind it:

* Faster R-CNN: the example input has more than 1000 proposals, so draft_export takes the per-class
  loop; with line 86 changed to take the branch tracing takes, stock stops at
  `if boxes.numel() == 0:` in _batched_nms_coordinate_trick (boxes.py:103): the other branch.
* RetinaNet: no box of the example is above the score threshold (random init), and draft_export
  stopped at the floor division of the empty index tensor (retinanet.py:543, a line stock passes)
  inferring a fake kernel from the zero-size real output; behind line 86 is boxes.py:103.
* Keypoint R-CNN: `len(rois)` in heatmaps_to_keypoints (roi_heads.py:282) asks for the number of
  detections that MultiScaleRoIAlign's `len(rois)` (poolers.py:185) asked for first; draft_export
  keeps its answer, stock fails there once line 185 no longer asks.
"""

from __future__ import annotations

import json
import subprocess
import textwrap
from pathlib import Path

import pytest

from benchmarks.zoo.score import interpreter
from tests.support.workspace import line_of

# Each model runs in `onnxlens check` of the vision environment, torch 2.14.1 whatever torch runs
# this suite: once per CI run is enough (the torch matrix deselects it).
pytestmark = [pytest.mark.slow, pytest.mark.own_torch]

PAST = "found past the first failure by torch.export.draft_export"

BUILDERS = {
    "faster_rcnn": ("fasterrcnn_mobilenet_v3_large_fpn", "num_classes=5"),
    "retinanet": ("retinanet_resnet50_fpn", "num_classes=5"),
    "keypoint_rcnn": ("keypointrcnn_resnet50_fpn", "num_classes=2, num_keypoints=5"),
}


@pytest.fixture(scope="module")
def vision_python() -> Path:
    return Path(interpreter("vision"))


@pytest.fixture(scope="module")
def torchvision_dir(vision_python) -> Path:
    site = subprocess.run([str(vision_python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    return Path(site) / "torchvision"


@pytest.fixture(scope="module")
def findings(vision_python, tmp_path_factory) -> dict[str, list[dict]]:
    """Each target's error findings, from one `onnxlens check` in the vision environment."""
    root = tmp_path_factory.mktemp("detection")
    config = ['[tool.onnxlens]', 'verify = false', 'timeout = 900']
    for name, (factory, arguments) in BUILDERS.items():
        (root / f"{name}.py").write_text(textwrap.dedent(f'''\
            import torch
            from torchvision.models.detection import {factory}


            def build_model():
                torch.manual_seed(0)
                return {factory}(weights=None, weights_backbone=None, {arguments}, min_size=224, max_size=224).eval()


            def example_inputs():
                torch.manual_seed(0)
                return ([torch.rand(3, 224, 224)],)
        '''))
        config += ['', '[[tool.onnxlens.target]]', f'name = "{name}"', f'model = "{name}.py:build_model"',
                   f'inputs = "{name}.py:example_inputs"']
    (root / "pyproject.toml").write_text("\n".join(config) + "\n")
    run = subprocess.run([str(vision_python.parent / "onnxlens"), "check", str(root), "--format", "json", "--no-cache",
                          "--jobs", "1"], cwd=root, capture_output=True, text=True)
    report = json.loads(run.stdout)
    return {target["name"]: [d for d in target["diagnostics"] if d["severity"] == "error"]
            for target in report["targets"]}


def innermost(finding: dict) -> tuple[Path, int]:
    """The innermost library line of a finding (the model's code is torchvision's: the finding
    itself is on the builder, the related chain starts at the innermost line)."""
    related = finding["related"][0]
    return Path(related["file"]).resolve(), related["line"]


def past_the_first(findings: list[dict], file: Path, line: int) -> list[dict]:
    return [f for f in findings if innermost(f) == (file.resolve(), line) and f["message"].startswith(PAST)]


@pytest.mark.parametrize("target", sorted(BUILDERS))
def test_the_first_finding_is_stocks(findings, torchvision_dir, target):
    boxes = torchvision_dir / "ops" / "boxes.py"
    first = findings[target][0]
    assert innermost(first) == (boxes.resolve(), line_of(boxes, "if boxes.numel() > (4000 if"))
    assert "GuardOnDataDependentSymNode" in first["message"] and PAST not in first["message"]


def test_a_line_behind_the_other_branch_of_the_first_is_found(findings, torchvision_dir):
    boxes = torchvision_dir / "ops" / "boxes.py"
    [behind] = past_the_first(findings["faster_rcnn"], boxes, line_of(boxes, "if boxes.numel() == 0:"))
    assert behind["message"].startswith(f"{PAST} on the other branch of boxes.py:"
                                        f"{line_of(boxes, 'if boxes.numel() > (4000 if')}")


def test_draft_export_carries_on_where_a_real_output_disagrees_with_the_fake_one(findings, torchvision_dir):
    boxes = torchvision_dir / "ops" / "boxes.py"
    assert past_the_first(findings["retinanet"], boxes, line_of(boxes, "if boxes.numel() == 0:"))


def test_a_value_asked_for_again_at_a_later_line_is_found_there(findings, torchvision_dir):
    roi_heads = torchvision_dir / "models" / "detection" / "roi_heads.py"
    line = line_of(roi_heads, "xy_preds = torch.zeros((len(rois), 3, num_keypoints)")
    [again] = past_the_first(findings["keypoint_rcnn"], roi_heads, line)
    assert "asked for again" in again["message"]
