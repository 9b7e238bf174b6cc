"""[tool.onnxlens.gate]: the regression gate's thresholds, validated like every other key."""

from __future__ import annotations

from onnxlens.server.check.gate import Thresholds
from onnxlens.server.config import load_config
from tests.support.workspace import line_of, write

TARGET = '\n[[tool.onnxlens.target]]\nmodel = "m.py:Net"\ninputs = "m.py:inputs"\n'


def _load(tmp_path, gate: str):
    write(tmp_path / "m.py", "")
    write(tmp_path / "pyproject.toml", '[tool.onnxlens]\noutput-dir = ".onnxlens"\n\n' + gate + TARGET)
    return load_config(tmp_path / "pyproject.toml")


def test_thresholds_are_read(tmp_path):
    workspace = _load(tmp_path, "[tool.onnxlens.gate]\nnode-count-percent = 25\nverification-error-factor = 100.5\n")
    assert workspace.findings == []
    assert Thresholds.from_config(workspace.gate) == Thresholds(node_count_percent=25.0, verification_error_factor=100.5)
    assert Thresholds.from_config({}) == Thresholds()  # the defaults: 10 %, 10 %, ×10


def test_a_mistake_in_the_gate_is_a_config_finding_on_its_line(tmp_path):
    workspace = _load(tmp_path, "[tool.onnxlens.gate]\nnode-count = 25\ninitializer-size-percent = -1\n")
    config = tmp_path / "pyproject.toml"
    found = [(f.location.line, f.message) for f in workspace.findings]
    assert found[0][0] == line_of(config, "node-count = 25")
    assert "unknown key `node-count`" in found[0][1] and "did you mean `node-count-percent`?" in found[0][1]
    assert found[1][0] == line_of(config, "initializer-size-percent = -1")
    assert "must be a number of percent, 0 or more" in found[1][1]
    assert workspace.gate == {} and [t.name for t in workspace.targets] == ["net"]  # the targets still export


def test_a_gate_that_is_no_table_is_a_config_finding(tmp_path):
    write(tmp_path / "m.py", "")
    write(tmp_path / "onnxlens.toml", 'gate = 3\n' + TARGET.replace("tool.onnxlens.", ""))
    workspace = load_config(tmp_path / "onnxlens.toml")
    assert [(f.location.line, f.message) for f in workspace.findings] == [(1, "`gate` must be a table ([gate])")]
