"""`onnxlens init` with real processes: a workspace of models without a target gets one per model
(example inputs written beside each), and `onnxlens check` then exports every one of them; a
dry run writes nothing; a second `init` adds nothing."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.support.workspace import write

pytestmark = pytest.mark.slow  # onnxlens as a subprocess, exporting through its worker

CLI = [sys.executable, "-m", "onnxlens.server.cli"]

PROJECT = '[project]\nname = "vision"\nversion = "0"\n\n[tool.black]\nline-length = 100\n'

FILES = {
    "pyproject.toml": PROJECT,
    "models/mlp.py": '''"""A classifier."""

from torch import nn


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(24, 16), nn.ReLU(), nn.Linear(16, 3))

    def forward(self, features):
        return self.layers(features)
''',
    "models/vision.py": '''import torch
import torch.nn as nn


class TinyConv(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, kernel_size=3, padding=1)
        self.head = nn.Linear(4, 2)

    def forward(self, image: torch.Tensor) -> torch.Tensor:
        return self.head(self.conv(image).mean(dim=(2, 3)))
''',
    "models/text.py": '''import torch
from torch import nn


class Bag(nn.Module):
    def __init__(self, classes):
        super().__init__()
        self.embed = nn.Embedding(120, 8)
        self.out = nn.Linear(8, classes)

    def forward(self, input_ids, attention_mask):
        weights = attention_mask.unsqueeze(-1).float()
        return self.out((self.embed(input_ids) * weights).sum(1) / weights.sum(1))


def build_bag():
    return Bag(4).eval()
''',
    # Not scanned: tests and virtual environments.
    "tests/test_models.py": "import torch\nfrom torch import nn\n\n\nclass Probe(nn.Module):\n    def forward(self, x):\n        return x\n",
    ".venv/lib/site.py": "from torch import nn\n\n\nclass Hidden(nn.Module):\n    def forward(self, x):\n        return x\n",
}


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, *args], cwd=cwd, capture_output=True, text=True, timeout=900)


def _workspace(root: Path) -> Path:
    for name, text in FILES.items():
        write(root / name, text)
    return root


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_a_dry_run_writes_nothing(tmp_path):
    root = _workspace(tmp_path)
    before = _snapshot(root)
    process = run("init", "--dry-run", cwd=root)
    assert process.returncode == 0, process.stderr
    assert "would add target classifier" in process.stdout and "would add target build_bag" in process.stdout
    assert "nothing written" in process.stdout
    assert _snapshot(root) == before


@pytest.fixture(scope="module")
def initialized(tmp_path_factory):
    root = _workspace(tmp_path_factory.mktemp("vision"))
    first = run("init", str(root), cwd=root.parent)
    return root, first


def test_init_adds_a_target_per_model_and_keeps_the_users_bytes(initialized):
    root, process = initialized
    assert process.returncode == 0, process.stderr
    text = (root / "pyproject.toml").read_text()
    assert text.startswith(PROJECT)
    targets = tomllib.loads(text)["tool"]["onnxlens"]["target"]
    assert {t["name"]: t["model"] for t in targets} == {
        "classifier": "models/mlp.py:Classifier",
        "tinyconv": "models/vision.py:TinyConv",
        "build_bag": "models/text.py:build_bag",  # Bag needs arguments; its factory is the target
    }
    mlp = (root / "models/mlp.py").read_text()
    assert mlp.startswith('"""A classifier."""\n\nimport torch\nfrom torch import nn\n')  # import added
    assert "torch.randn(2, 24)" in mlp
    assert "torch.randn(2, 3, 32, 32)" in (root / "models/vision.py").read_text()
    assert "torch.randint(0, 120, (2, 16))" in (root / "models/text.py").read_text()
    assert "Probe" not in text and "Hidden" not in text


def test_check_exports_every_new_target(initialized):
    root, _ = initialized
    process = run("check", str(root), "--format", "json", "--jobs", "2", cwd=root)
    assert process.returncode == 0, process.stdout + process.stderr
    data = json.loads(process.stdout)
    assert {t["name"]: t["status"] for t in data["targets"]} == {"classifier": "ok", "tinyconv": "ok", "build_bag": "ok"}
    for name in ("classifier", "tinyconv", "build_bag"):
        assert (root / ".onnxlens" / f"{name}.onnx").is_file()


def test_a_second_init_adds_nothing(initialized):
    root, _ = initialized
    before = _snapshot(root)
    process = run("init", cwd=root)
    assert process.returncode == 0, process.stderr
    assert "no new targets" in process.stdout
    assert _snapshot(root) == before


def test_a_config_that_cannot_be_extended_is_a_clear_usage_error(tmp_path):
    root = _workspace(tmp_path)
    write(root / "pyproject.toml", PROJECT + '\n[tool]\nonnxlens = { verify = true }\n')
    before = _snapshot(root)
    process = run("init", cwd=root)
    assert process.returncode == 2
    assert "add them by hand" in process.stderr or "valid TOML" in process.stderr, process.stderr
    assert "Traceback" not in process.stderr
    assert _snapshot(root) == before
