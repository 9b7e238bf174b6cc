"""A one-target workspace (`net`) for the tests of what onnxlens writes and trusts: a small
Linear model whose weights (2 KB) go to a data file beside the .onnx, the same model broken
(an op without an ONNX translation), and a model that reads JSON files while it is exported
(its factory reads config/sizes.json, its forward activation.json)."""

from __future__ import annotations

from pathlib import Path

from tests.support.workspace import write

CONFIG = '''[tool.onnxlens]
verify = false

[[tool.onnxlens.target]]
name = "net"
model = "net.py:build"
inputs = "net.py:inputs"
'''

NET = '''import torch


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(32, 16)

    def forward(self, x):
        return torch.relu(self.linear(x))


def build():
    return Net().eval()


def inputs():
    return (torch.randn(2, 32),)
'''

BROKEN = NET.replace("torch.relu(self.linear(x))", "torch.special.zeta(self.linear(x), 2.0)")

READS_JSON = '''import json
from pathlib import Path

import torch

HERE = Path(__file__).parent


class Net(torch.nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.linear = torch.nn.Linear(8, hidden)

    def forward(self, x):
        with open(HERE / "activation.json") as handle:
            activation = json.load(handle)["activation"]
        y = self.linear(x)
        return torch.special.zeta(y, 2.0) if activation == "zeta" else torch.relu(y)  # activation line


def build():
    sizes = json.loads((HERE / "config" / "sizes.json").read_text())
    return Net(sizes["hidden"]).eval()


def inputs():
    return (torch.randn(2, 8),)
'''


def write_workspace(root: Path, net: str = NET) -> Path:
    """The workspace at `root` (config, net.py; for READS_JSON its JSON files); net.py's path."""
    write(root / "pyproject.toml", CONFIG)
    write(root / "net.py", net)
    if net == READS_JSON:
        write(root / "config" / "sizes.json", '{"hidden": 16}')
        write(root / "activation.json", '{"activation": "relu"}')
    return root / "net.py"
