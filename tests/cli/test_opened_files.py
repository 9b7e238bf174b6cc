"""Files the model opens while it is exported are part of what the result depends on
(pipeline/opened_files.py): the real CLI process, a model whose factory reads `sizes.json`
and whose `forward` reads `activation.json`. An unchanged workspace is a cache hit; an edit to
either JSON file is a miss and the export sees the new content — `check` fails when the edit
breaks the model, where a cache keyed on the imported files only passed on the stale result.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import onnx
import pytest

from tests.support.net_workspace import READS_JSON, write_workspace
from tests.support.workspace import line_of, write

CLI = [sys.executable, "-m", "onnxlens.server.cli"]

def check(root: Path, user_cache: Path) -> tuple[int, dict]:
    process = subprocess.run([*CLI, "check", str(root), "--format", "json"], capture_output=True, text=True,
                             timeout=600, env={**os.environ, "XDG_CACHE_HOME": str(user_cache)})
    [target] = json.loads(process.stdout)["targets"]
    return process.returncode, target


def width(root: Path, target: dict) -> int:
    model = onnx.load(str(root / target["onnx"]), load_external_data=False)
    return model.graph.output[0].type.tensor_type.shape.dim[-1].dim_value


@pytest.fixture
def workspace(tmp_path) -> Path:
    root = tmp_path / "ws"
    write_workspace(root, READS_JSON)
    return root


def test_an_edit_to_a_file_the_factory_reads_exports_again(workspace, tmp_path):
    status, first = check(workspace, tmp_path / "cache")
    assert status == 0 and not first["cached"] and width(workspace, first) == 16
    assert check(workspace, tmp_path / "cache")[1]["cached"] is True

    write(workspace / "config" / "sizes.json", '{"hidden": 24}')
    status, second = check(workspace, tmp_path / "cache")
    assert status == 0 and second["cached"] is False
    assert width(workspace, second) == 24


def test_an_edit_to_a_file_forward_reads_that_breaks_the_model_fails_check(workspace, tmp_path):
    status, first = check(workspace, tmp_path / "cache")
    assert status == 0 and first["status"] == "ok"

    write(workspace / "activation.json", '{"activation": "zeta"}')
    status, second = check(workspace, tmp_path / "cache")
    assert status == 1 and second["cached"] is False
    [problem] = second["diagnostics"]
    assert problem["code"] == "unsupported-op"
    assert problem["line"] == line_of(workspace / "net.py", "# activation line")
