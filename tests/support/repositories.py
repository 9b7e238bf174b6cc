"""Real model repositories as workspaces: an installed package's directory copied into a
temporary workspace, as a user's clone of it (nothing of it is in this repository; the `repos`
extra installs the packages).

`broken_import_repository`: vit-pytorch, whose `vit_pytorch/__init__.py` imports `dino.py`, which
imports torchvision at its top (`from torchvision import transforms as T`); torchvision is not
installed (its PyPI build does not load beside the CPU torch), so every module of the package
fails to import on that line (vit-pytorch's 22 model modules all do). Three of its models
are targets, and a fourth target names a callable its file does not define (`Nett`).
"""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import pytest

from tests.support.workspace import write

VIT_TARGETS = ("vit", "simplevit", "cait")  # one model of each of three files of the package

NETS = '''import torch


class Net(torch.nn.Module):
    def forward(self, x):
        return x * 2


def inputs():
    return (torch.randn(2, 3),)
'''

CONFIG = '''[tool.onnxlens]
verify = false

[[tool.onnxlens.target]]
name = "vit"
model = "vit_pytorch/vit.py:ViT"
inputs = "nets.py:inputs"

[[tool.onnxlens.target]]
name = "simplevit"
model = "vit_pytorch/simple_vit.py:SimpleViT"
inputs = "nets.py:inputs"

[[tool.onnxlens.target]]
name = "cait"
model = "vit_pytorch/cait.py:CaiT"
inputs = "nets.py:inputs"

[[tool.onnxlens.target]]
name = "typo"
model = "nets.py:Nett"
inputs = "nets.py:inputs"
'''


def package_copy(package: str, destination: Path) -> Path:
    """A copy of an installed package's directory at `destination` (nothing imported)."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        pytest.skip(f"{package} is not installed (the `repos` extra: scripts/setup repos)")
    shutil.copytree(list(spec.submodule_search_locations)[0], destination, ignore=shutil.ignore_patterns("__pycache__"))
    return destination


def broken_import_repository(root: Path) -> Path:
    """The workspace described in the module docstring, at `root`."""
    if importlib.util.find_spec("torchvision") is not None:
        pytest.skip("torchvision is installed: vit-pytorch's import does not fail here")
    package_copy("vit_pytorch", root / "vit_pytorch")
    write(root / "nets.py", NETS)
    write(root / "pyproject.toml", CONFIG)
    return root
