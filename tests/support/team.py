"""A team's workspace for the CI tests (regression gate, shards, SARIF, pre-commit): five small
real models, written to disk, and the edits a pull request makes to them.

Every model seeds its weights, so two exports of it write the same files. State "main": every
target exports except `known_bad`, which fails on `torch.special.zeta` (a
problem the baseline already has). The pull request (`open_pull_request`):
* `grower` gets one more layer: a new line `h = torch.relu(self.extra(h))` (nodes and weights grow);
* `opper` gets a new line `y = y.cumsum(dim=-1)` (an ONNX op its graph did not have);
* `shaper`, exported with a `Dim.AUTO` batch, gets `x = x.reshape(4, 16)` (the batch becomes 4).
`steady` and `known_bad` stay as they are.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.support.workspace import write

TARGETS = ("grower", "opper", "shaper", "steady", "known_bad")

MODELS = {
    "grower": '''import torch
from torch import nn


class Grower(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)  # the same weights in every export: results compare byte for byte
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.fc1(x))
        return self.fc2(h)


def example_inputs():
    torch.manual_seed(0)
    return (torch.randn(4, 16),)
''',
    "opper": '''import torch
from torch import nn


class Opper(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)  # the same weights in every export: results compare byte for byte
        self.fc = nn.Linear(16, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.fc(x)
        return torch.tanh(y)


def example_inputs():
    torch.manual_seed(0)
    return (torch.randn(4, 16),)
''',
    "shaper": '''import torch
from torch import nn


class Shaper(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)  # the same weights in every export: results compare byte for byte
        self.fc = nn.Linear(16, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(self.fc(x))


def example_inputs():
    torch.manual_seed(0)
    return (torch.randn(4, 16),)


def dynamic_shapes():
    return ({0: torch.export.Dim.AUTO},)
''',
    "steady": '''import torch
from torch import nn


class Steady(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)  # the same weights in every export: results compare byte for byte
        self.fc = nn.Linear(16, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x).softmax(dim=-1)


def example_inputs():
    torch.manual_seed(0)
    return (torch.randn(4, 16),)
''',
    "known_bad": '''import torch
from torch import nn


class KnownBad(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.special.zeta(x, 2.0)


def example_inputs():
    return (torch.rand(4, 16) + 1.5,)
''',
}

# The pull request: (target, the line after which a line is added, the added line).
PULL_REQUEST = {
    "grower": ("        h = torch.relu(self.fc1(x))\n", "        h = torch.relu(self.extra(h))\n"),
    "opper": ("        y = self.fc(x)\n", "        y = y.cumsum(dim=-1)\n"),
    "shaper": ("    def forward(self, x: torch.Tensor) -> torch.Tensor:\n", "        x = x.reshape(4, 16)\n"),
}
ADDED_LINES = {target: added.strip() for target, (_, added) in PULL_REQUEST.items()}


def config(targets: tuple[str, ...] = TARGETS) -> str:
    blocks = ['[tool.onnxlens]\noutput-dir = ".onnxlens"\n']
    for name in targets:
        cls = "".join(part.capitalize() for part in name.split("_"))
        block = (f'\n[[tool.onnxlens.target]]\nname = "{name}"\nmodel = "models/{name}.py:{cls}"\n'
                 f'inputs = "models/{name}.py:example_inputs"\n')
        if name == "shaper":
            block += f'dynamic-shapes = "models/{name}.py:dynamic_shapes"\n'
        blocks.append(block)
    return "".join(blocks)


def write_team(root: Path, targets: tuple[str, ...] = TARGETS) -> Path:
    """The workspace in its main-branch state at `root` (pyproject.toml, models/)."""
    write(root / "pyproject.toml", config(targets))
    write(root / "models" / "__init__.py", "")
    for name in targets:
        write(root / "models" / f"{name}.py", MODELS[name])
    return root


def open_pull_request(root: Path) -> None:
    """The pull request's edits (see the module docstring)."""
    for name, (after, added) in PULL_REQUEST.items():
        path = root / "models" / f"{name}.py"
        text = path.read_text()
        assert after in text
        text = text.replace(after, after + added, 1)
        if name == "grower":
            text = text.replace("        self.fc2 = nn.Linear(32, 8)\n",
                                "        self.extra = nn.Linear(32, 32)\n        self.fc2 = nn.Linear(32, 8)\n")
        write(path, text)


def shift_lines(path: Path, count: int = 3) -> None:
    """An edit that moves every line of the file down: comment lines at its top."""
    write(path, "".join(f"# a comment added above the code ({n})\n" for n in range(count)) + path.read_text())


def onnxlens(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """The real `onnxlens` command line, in a process of its own."""
    return subprocess.run([sys.executable, "-m", "onnxlens.server.cli", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=900)


# What differs between two exports of the same model: how long they took, how much memory they
# peaked at, whether the cache answered, and the last bits of onnxruntime's float results (its
# threads sum in varying order: the largest difference from torch moves by ~1e-8).
VOLATILE = {"seconds", "stages", "memory_mb", "cached", "localisation_seconds", "other_sizes_seconds",
            "max_abs_diff", "max_rel_diff"}


def comparable(value):
    """A JSON result without its VOLATILE parts: what two exports of the same targets share."""
    if isinstance(value, dict):
        return {k: comparable(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [comparable(v) for v in value]
    return value
