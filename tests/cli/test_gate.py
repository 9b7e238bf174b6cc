"""The regression gate end to end: `onnxlens check --save-baseline` on the main branch's state of a
team's workspace, then `--baseline` on a pull request that adds an op, grows a model and makes an
axis static (tests/support/team.py) — real CLI processes, real exports. Lines are found by their
text in the files the test wrote.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.team import ADDED_LINES, onnxlens, open_pull_request, shift_lines, write_team
from tests.support.workspace import line_of, write

pytestmark = pytest.mark.slow  # onnxlens as a subprocess, exporting through its worker


@pytest.fixture(scope="module")
def team(tmp_path_factory):
    """(workspace, the baseline's JSON, the saving run): main's state checked and saved."""
    root = write_team(tmp_path_factory.mktemp("team"))
    process = onnxlens("check", root, "--jobs", "2", "--save-baseline", root / "baseline.json", "--format", "json")
    return root, json.loads((root / "baseline.json").read_text()), process


@pytest.fixture(scope="module")
def unchanged(team):
    """The gate on the unchanged workspace (served from the result cache)."""
    root, _, _ = team
    process = onnxlens("check", root, "--baseline", root / "baseline.json", "--format", "json",
                       "--summary", root / "unchanged.md")
    return json.loads(process.stdout), process


@pytest.fixture(scope="module")
def pull_request(team, unchanged):
    """The gate on the pull request's state (after the unchanged run: the fixtures share a workspace)."""
    root, _, _ = team
    open_pull_request(root)
    process = onnxlens("check", root, "--baseline", root / "baseline.json", "--format", "json",
                       "--summary", root / "pr.md")
    return json.loads(process.stdout), process


def _diagnostics(data: dict, target: str) -> list[dict]:
    return next(t for t in data["targets"] if t["name"] == target)["diagnostics"]


def test_the_baseline_holds_what_a_comparison_needs(team):
    root, baseline, process = team
    assert process.returncode == 1, process.stderr  # known_bad fails: no baseline was given, so it fails the check
    assert json.loads(process.stdout) == baseline  # --save-baseline writes the JSON result, details included
    targets = {t["name"]: t for t in baseline["targets"]}
    assert targets["known_bad"]["status"] == "failed" and targets["grower"]["status"] == "ok"
    grower = targets["grower"]
    assert grower["graph"]["ops"] == {"Gemm": 2, "Relu": 1} and grower["graph"]["node_count"] == 3
    # Linear(16, 32) and Linear(32, 8) in float32: (16*32 + 32) * 4 and (32*8 + 8) * 4 bytes.
    assert grower["graph"]["initializers"] == {"fc1": (16 * 32 + 32) * 4, "fc2": (32 * 8 + 8) * 4}
    relu_line = line_of(root / "models" / "grower.py", "h = torch.relu(self.fc1(x))")
    assert {"file": "models/grower.py", "line": relu_line, "text": "h = torch.relu(self.fc1(x))",
            "ops": {"Gemm": 1, "Relu": 1}, "modules": ["fc1"]} in grower["lines"]
    shaper_input, = targets["shaper"]["graph"]["inputs"]
    assert isinstance(shaper_input["dims"][0], str) and shaper_input["dims"][1] == 16  # the batch is dynamic
    assert all(d["fingerprint"] for t in baseline["targets"] for d in t["diagnostics"])
    assert all(t["memory_mb"] > 0 for t in baseline["targets"] if not t["cached"])


def test_an_unchanged_workspace_passes_the_gate(unchanged):
    data, process = unchanged
    assert process.returncode == 0, process.stderr  # known_bad still fails: the baseline has that problem
    assert data["gate"]["passed"] is True
    assert data["gate"]["regressions"] == 0 and data["gate"]["new_findings"] == 0 and data["gate"]["fixed"] == []
    (zeta,) = _diagnostics(data, "known_bad")
    assert zeta["code"] == "unsupported-op" and zeta["baseline_state"] == "unchanged"


def test_the_pull_request_fails_the_gate(pull_request):
    data, process = pull_request
    assert process.returncode == 1, process.stderr
    assert data["gate"]["passed"] is False and data["gate"]["regressions"] >= 4


def test_the_new_op_is_on_the_line_that_makes_it(pull_request, team):
    root, _, _ = team
    data, _ = pull_request
    new_ops = [d for d in _diagnostics(data, "opper") if d["code"] == "new-op"]
    assert [(d["file"], d["line"]) for d in new_ops] == [
        ("models/opper.py", line_of(root / "models" / "opper.py", ADDED_LINES["opper"]))]
    assert "CumSum" in new_ops[0]["message"] and new_ops[0]["severity"] == "error"
    assert new_ops[0]["baseline_state"] == "new"


def test_the_grown_model_is_reported_on_the_added_layer(pull_request, team):
    root, _, _ = team
    data, _ = pull_request
    added = line_of(root / "models" / "grower.py", ADDED_LINES["grower"])
    found = {d["code"]: d for d in _diagnostics(data, "grower")}
    assert (found["node-count"]["file"], found["node-count"]["line"]) == ("models/grower.py", added)
    assert "3 → 5" in found["node-count"]["message"] and "Gemm +1, Relu +1" in found["node-count"]["message"]
    assert (found["initializer-size"]["file"], found["initializer-size"]["line"]) == ("models/grower.py", added)
    assert "`extra`" in found["initializer-size"]["message"] and "(new)" in found["initializer-size"]["message"]
    assert "new-op" not in found  # Gemm and Relu were in the graph already


def test_the_static_axis_is_on_the_line_that_fixed_it(pull_request, team):
    root, _, _ = team
    data, _ = pull_request
    fixed_at = line_of(root / "models" / "shaper.py", ADDED_LINES["shaper"])
    static = [d for d in _diagnostics(data, "shaper") if d["code"] == "static-axis"]
    assert static and {(d["file"], d["line"]) for d in static} == {("models/shaper.py", fixed_at)}
    assert all("axis 0" in d["message"] and "fixed to 4" in d["message"] for d in static)
    # torch.export's own warning on that line is a new finding too.
    warning = [d for d in _diagnostics(data, "shaper") if d["code"] == "torch-export"]
    assert [(d["line"], d["baseline_state"]) for d in warning] == [(fixed_at, "new")]


def test_unchanged_targets_have_no_regression(pull_request):
    data, _ = pull_request
    assert _diagnostics(data, "steady") == []
    assert [(d["code"], d["baseline_state"]) for d in _diagnostics(data, "known_bad")] == [("unsupported-op", "unchanged")]


def test_the_summary_is_a_pull_request_comment(pull_request, team):
    root, _, _ = team
    summary = (root / "pr.md").read_text()
    lines = summary.splitlines()
    assert lines[0] == "<!-- onnxlens-summary -->"
    assert lines[1].startswith("### onnxlens regression gate failed:")
    for target, added in ADDED_LINES.items():
        assert f"`models/{target}.py:{line_of(root / 'models' / f'{target}.py', added)}`" in summary
    assert "| grower | ok | 3 → 5 |" in summary
    assert (root / "unchanged.md").read_text().splitlines()[1].startswith("### onnxlens regression gate passed:")


def test_text_output_puts_each_regression_on_its_line(pull_request, team):
    root, _, _ = team
    process = onnxlens("check", root, "--baseline", root / "baseline.json")  # cached: text of the same run
    assert process.returncode == 1
    added = line_of(root / "models" / "opper.py", ADDED_LINES["opper"])
    assert any(line.startswith(f"models/opper.py:{added}:9: error[new-op] [opper] new ONNX operator")
               for line in process.stdout.splitlines()), process.stdout


def test_thresholds_come_from_the_config(pull_request, team):
    root, _, _ = team
    config = (root / "pyproject.toml").read_text()
    write(root / "pyproject.toml", config.replace(
        'output-dir = ".onnxlens"\n',
        'output-dir = ".onnxlens"\n\n[tool.onnxlens.gate]\nnode-count-percent = 200\ninitializer-size-percent = 200\n', 1))
    try:
        process = onnxlens("check", root, "--baseline", root / "baseline.json", "--format", "json")
    finally:
        write(root / "pyproject.toml", config)
    data = json.loads(process.stdout)
    codes = {d["code"] for t in data["targets"] for d in t["diagnostics"]}
    assert "node-count" not in codes and "initializer-size" not in codes  # +67 % and +131 % are under 200 %
    assert {"new-op", "static-axis"} <= codes and process.returncode == 1
    assert data["gate"]["thresholds"]["node-count-percent"] == 200


def test_a_line_shifting_edit_is_no_regression(tmp_path):
    """The known problem moves three lines down: the same finding (by fingerprint), the gate passes."""
    root = write_team(tmp_path, ("steady", "known_bad"))
    assert onnxlens("check", root, "--save-baseline", root / "baseline.json").returncode == 1
    before = line_of(root / "models" / "known_bad.py", "torch.special.zeta(")
    shift_lines(root / "models" / "known_bad.py", 3)
    process = onnxlens("check", root, "--baseline", root / "baseline.json", "--format", "json")
    assert process.returncode == 0, process.stdout
    (zeta,) = _diagnostics(json.loads(process.stdout), "known_bad")
    assert (zeta["line"], zeta["baseline_state"]) == (before + 3, "unchanged")


def test_a_target_that_stops_exporting_is_reported_on_its_error(tmp_path):
    root = write_team(tmp_path, ("steady",))
    assert onnxlens("check", root, "--save-baseline", root / "baseline.json").returncode == 0
    model = root / "models" / "steady.py"
    write(model, model.read_text().replace("return self.fc(x).softmax(dim=-1)",
                                           "return torch.special.zeta(self.fc(x), 2.0)"))
    process = onnxlens("check", root, "--baseline", root / "baseline.json", "--format", "json")
    assert process.returncode == 1
    diagnostics = _diagnostics(json.loads(process.stdout), "steady")
    zeta_line = line_of(model, "torch.special.zeta(")
    assert [(d["code"], d["line"], d["baseline_state"]) for d in diagnostics] == [
        ("unsupported-op", zeta_line, "new"), ("stopped-exporting", zeta_line, "new")]


def test_a_baseline_that_is_no_result_is_a_usage_error(tmp_path):
    root = write_team(tmp_path, ("steady",))
    write(root / "baseline.json", '{"not": "a result"}')
    process = onnxlens("check", root, "--baseline", root / "baseline.json")
    assert process.returncode == 2 and "is not a JSON result of onnxlens" in process.stderr
    assert "Traceback" not in process.stderr
    missing = onnxlens("check", root, "--baseline", root / "nowhere.json")
    assert missing.returncode == 2 and "no such file" in missing.stderr


def test_a_grown_verification_error_is_a_regression(tmp_path):
    """Outputs scaled by 10^4: onnxruntime still agrees within rtol, but its largest absolute
    difference from torch grows far past ×10 and atol; no line computed a mismatch, so the
    finding is at the model's definition."""
    root = write_team(tmp_path, ("steady",))
    assert onnxlens("check", root, "--save-baseline", root / "baseline.json").returncode == 0
    model = root / "models" / "steady.py"
    write(model, model.read_text().replace("return self.fc(x).softmax(dim=-1)", "return self.fc(x) * 10000.0"))
    process = onnxlens("check", root, "--baseline", root / "baseline.json", "--format", "json")
    data = json.loads(process.stdout)
    (grown,) = [d for d in _diagnostics(data, "steady") if d["code"] == "verification-error"]
    assert (grown["file"], grown["line"]) == ("models/steady.py", line_of(model, "class Steady("))
    before, now = data["gate"]["measures"]["steady"]["max_abs_diff"]
    assert now > 10 * before and now - before > 1e-5 and process.returncode == 1
