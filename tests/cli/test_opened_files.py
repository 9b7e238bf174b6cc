"""Files the model opens while it is exported are part of what the result depends on
(pipeline/target/opened_files.py): the real CLI process, a model whose factory reads `sizes.json`
and whose `forward` reads `activation.json`. An unchanged workspace is a cache hit; an edit to
either JSON file is a miss and the export sees the new content — `check` fails when the edit
breaks the model, where a cache keyed on the imported files only passed on the stale result.
"""

from __future__ import annotations

from pathlib import Path

import onnx
import pytest

from tests.support.net_workspace import READS_JSON, check_json, write_workspace
from tests.support.workspace import line_of, write

pytestmark = pytest.mark.slow  # onnxlens as a subprocess, exporting through its worker


def width(root: Path, target: dict) -> int:
    model = onnx.load(str(root / target["onnx"]), load_external_data=False)
    return model.graph.output[0].type.tensor_type.shape.dim[-1].dim_value


@pytest.fixture
def workspace(tmp_path) -> Path:
    root = tmp_path / "ws"
    write_workspace(root, READS_JSON)
    return root


def test_an_edit_to_a_file_the_factory_reads_exports_again(workspace, tmp_path):
    first = check_json(workspace, tmp_path / "cache")
    assert first.status == 0 and not first.target["cached"] and width(workspace, first.target) == 16
    assert check_json(workspace, tmp_path / "cache").target["cached"] is True

    write(workspace / "config" / "sizes.json", '{"hidden": 24}')
    second = check_json(workspace, tmp_path / "cache")
    assert second.status == 0 and second.target["cached"] is False
    assert width(workspace, second.target) == 24


def test_an_edit_to_a_file_forward_reads_that_breaks_the_model_fails_check(workspace, tmp_path):
    first = check_json(workspace, tmp_path / "cache")
    assert first.status == 0 and first.target["status"] == "ok"

    write(workspace / "activation.json", '{"activation": "zeta"}')
    second = check_json(workspace, tmp_path / "cache")
    assert second.status == 1 and second.target["cached"] is False
    [problem] = second.target["diagnostics"]
    assert problem["code"] == "unsupported-op"
    assert problem["line"] == line_of(workspace / "net.py", "# activation line")
