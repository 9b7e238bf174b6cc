"""A one-target workspace (`net`) for the tests of what onnxlens writes and trusts: a small
Linear model whose weights (2 KB) go to a data file beside the .onnx, the same model broken
(an op without an ONNX translation), and a model that reads JSON files while it is exported
(its factory reads config/sizes.json, its forward activation.json); `onnxlens check` on it as a
user with a cache key of their own, and its cache entry read and rewritten as a forger would."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import msgpack

from tests.support.workspace import write

CACHE_ENTRY = Path(".onnxlens", "cache", "net.msgpack")  # relative to the workspace

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


@dataclass
class CheckRun:
    status: int
    data: dict  # the JSON output
    stderr: str

    @property
    def target(self) -> dict:
        [target] = self.data["targets"]
        return target


def check_json(root: Path, user_cache: Path, *options: str, python: str = sys.executable) -> CheckRun:
    """`onnxlens check ROOT --format json` in a process of its own run by `python`, as a user
    whose cache key is under `user_cache` (XDG_CACHE_HOME)."""
    process = subprocess.run([python, "-m", "onnxlens.server.cli", "check", str(root), "--format", "json",
                              *options], capture_output=True, text=True, timeout=600,
                             env={**os.environ, "XDG_CACHE_HOME": str(user_cache)})
    return CheckRun(process.returncode, json.loads(process.stdout), process.stderr)


def cache_entry(path: Path) -> tuple[dict, dict]:
    """A cache file's entry and its payload (server/service/cache.py), as plain data."""
    entry = msgpack.unpackb(path.read_bytes(), raw=False)
    return entry, msgpack.unpackb(entry["payload"], raw=False)


def rewrite_cache_entry(path: Path, entry: dict, payload: dict, *, key: bytes | None = None) -> None:
    """The cache file holding `payload`, signed with `key` (None: the entry's old signature kept,
    as a forger without the user's key must)."""
    entry["payload"] = msgpack.packb(payload, use_bin_type=True)
    if key is not None:
        entry["signature"] = hmac.new(key, entry["payload"], hashlib.sha256).digest()
    path.write_bytes(msgpack.packb(entry, use_bin_type=True))
