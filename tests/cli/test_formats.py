"""server/check/formats.py on hand-made results: the cases a real export rarely produces at once
(findings outside the workspace, without a location, without columns, multi-line messages)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from onnxlens.exporter.types import ExportResult, Finding, Location, Related, VerificationSummary
from onnxlens.server.config import load_config
from onnxlens.server.check.formats import (CheckRun, display_path, progress_line, render_json, render_sarif,
                                           render_text, summary_line)


@pytest.fixture
def workspace(tmp_path: Path):
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "net.py").write_text("import torch\n\ndef helper(x):\n    return torch.special.zeta(x, 2.0)\n")
    (tmp_path / "onnxlens.toml").write_text(
        '[[target]]\nname = "net"\nmodel = "models/net.py:build"\ninputs = "models/net.py:inputs"\n'
        '\n[[target]]\nname = "other"\nmodel = "models/net.py:other"\ninputs = "models/net.py:inputs"\n')
    return load_config(tmp_path / "onnxlens.toml")


@pytest.fixture
def run(workspace, tmp_path):
    net = str(tmp_path / "models" / "net.py")
    library = "/usr/lib/python3/site-packages/transformers/modeling.py"
    failed = ExportResult(target="net", status="failed", seconds=1.25, stages={"capture": 0.5}, findings=[
        Finding(code="unsupported-op", message="aten.special_zeta has no ONNX translation\nsecond line",
                stage="scan", location=Location(net, 4, 12),
                related=[Related(net, 9, "called from forward"), Related(library, 40, "in a library")]),
        Finding(code="crash", message="the export process died (SIGSEGV)", stage="load"),
    ])
    ok = ExportResult(target="other", status="ok", onnx=str(tmp_path / ".onnxlens" / "other.onnx"),
                      seconds=0.5, verification=VerificationSummary(max_abs_diff=0.25, max_rel_diff=0.5, passed=False),
                      findings=[Finding(code="mismatch", message="outputs differ", stage="verify",
                                        location=Location(net, 4, 5, 4, 30))])
    return CheckRun(config=workspace, results=[failed, ok], seconds=2.0)


def test_display_path_is_relative_inside_the_root_only(tmp_path):
    assert display_path(tmp_path / "models" / "net.py", tmp_path) == "models/net.py"
    assert display_path("/elsewhere/x.py", tmp_path) == "/elsewhere/x.py"


def test_text_lines_notes_excerpt_and_summary(run, workspace):
    lines = render_text(run).splitlines()
    assert lines[0] == "models/net.py:4:12: error[unsupported-op] [net] aten.special_zeta has no ONNX translation"
    assert lines[1] == "    second line"  # continuation lines are indented: one diagnostic per unindented line
    assert lines[2] == "    models/net.py:9: note: called from forward"
    assert lines[3] == "    /usr/lib/python3/site-packages/transformers/modeling.py:40: note: in a library"
    # No source location: the target's [[target]] header in the config file.
    assert lines[4] == f"onnxlens.toml:{workspace.target_lines['net']}:1: error[crash] [net] the export process died (SIGSEGV)"
    assert lines[5] == "models/net.py:4:5: warning[mismatch] [other] outputs differ"
    assert lines[-1] == "2 targets: 1 exported, 1 failed (2 errors, 1 warning) in 2.0 s"


def test_json_fills_every_location_field(run, workspace):
    data = json.loads(render_json(run))
    net, other = data["targets"]
    assert (net["onnx"], other["onnx"]) == (None, ".onnxlens/other.onnx")
    zeta, crash = net["diagnostics"]
    # No end column from the exporter: up to the end of the source line.
    line = "    return torch.special.zeta(x, 2.0)"
    assert (zeta["line"], zeta["column"], zeta["end_line"], zeta["end_column"]) == (4, 12, 4, len(line) + 1)
    assert zeta["related"][1] == {"file": "/usr/lib/python3/site-packages/transformers/modeling.py",
                                  "line": 40, "message": "in a library"}
    assert (crash["file"], crash["line"]) == ("onnxlens.toml", workspace.target_lines["net"])
    assert other["verification"] == run.results[1].verification.to_dict() and other["verification"]["passed"] is False
    assert other["diagnostics"][0]["severity"] == "warning"


def test_sarif_locations_and_levels(run, tmp_path):
    results = json.loads(render_sarif(run))["runs"][0]["results"]
    assert [(r["ruleId"], r["level"]) for r in results] == [
        ("unsupported-op", "error"), ("crash", "error"), ("mismatch", "warning")]
    zeta = results[0]
    artifact = zeta["locations"][0]["physicalLocation"]["artifactLocation"]
    assert artifact == {"uri": "models/net.py", "uriBaseId": "%SRCROOT%"}
    outside = zeta["relatedLocations"][1]["physicalLocation"]["artifactLocation"]
    assert outside == {"uri": "file:///usr/lib/python3/site-packages/transformers/modeling.py"}
    assert zeta["properties"] == {"stage": "scan", "target": "net"}
    assert results[2]["locations"][0]["physicalLocation"]["region"] == {
        "startLine": 4, "startColumn": 5, "endLine": 4, "endColumn": 30}


def test_a_weights_free_result_is_an_export_with_a_note_in_every_format(workspace, tmp_path):
    net = str(tmp_path / "models" / "net.py")
    graph = str(tmp_path / ".onnxlens" / "net.graph.onnx")
    note = Finding(code="weights-free", severity="info", stage="load", location=Location(net, 3, 5),
                   message="weights-free model: 8 parameters (32 bytes as float32) are on the meta device")
    run = CheckRun(config=workspace, seconds=1.0, results=[
        ExportResult(target="net", status="ok", graph_onnx=graph, seconds=1.0, findings=[note])])
    assert render_text(run).splitlines()[0].startswith("models/net.py:3:5: info[weights-free] weights-free model:")
    assert summary_line(run) == "1 target: 1 exported, 0 failed (0 errors, 0 warnings) in 1.0 s"
    assert progress_line(run.results[0]) == "onnxlens: net: exported (graph only, no weights) in 1.00 s"
    (target,) = json.loads(render_json(run))["targets"]
    assert (target["onnx"], target["graph_onnx"]) == (None, ".onnxlens/net.graph.onnx")
    assert target["diagnostics"][0]["severity"] == "info"
    sarif = json.loads(render_sarif(run))["runs"][0]
    assert [(r["ruleId"], r["level"]) for r in sarif["results"]] == [("weights-free", "note")]
    levels = {rule["id"]: rule["defaultConfiguration"]["level"] for rule in sarif["tool"]["driver"]["rules"]}
    assert levels["weights-free"] == "note" and set(levels.values()) <= {"error", "warning", "note"}


def test_config_findings_are_reported_apart_from_targets(tmp_path):
    (tmp_path / "onnxlens.toml").write_text("verfy = true\n")
    workspace = load_config(tmp_path / "onnxlens.toml")
    data = json.loads(render_json(CheckRun(config=workspace)))
    assert data["targets"] == []
    assert [(d["file"], d["line"], d["code"]) for d in data["config_diagnostics"]] == [
        ("onnxlens.toml", 1, "config"), ("onnxlens.toml", 1, "config")]  # unknown key; no targets
    text = render_text(CheckRun(config=workspace)).splitlines()
    assert text[0].startswith("onnxlens.toml:1:1: error[config] unknown key `verfy`")
    assert text[-1] == "0 targets: 0 exported, 0 failed (2 errors, 0 warnings) in 0.0 s"


def test_terminal_colour_codes_are_removed_from_messages(workspace, tmp_path):
    coloured = Finding(code="translation", stage="translate", location=Location(str(tmp_path / "models" / "net.py"), 4),
                       message="This is \x1b[96mstep 3/3\x1b[0m of exporting")
    run = CheckRun(config=workspace, results=[ExportResult(target="net", status="failed", findings=[coloured])])
    assert "] This is step 3/3 of exporting" in render_text(run).splitlines()[0]
    assert json.loads(render_json(run))["targets"][0]["diagnostics"][0]["message"] == "This is step 3/3 of exporting"
    assert json.loads(render_sarif(run))["runs"][0]["results"][0]["message"]["text"] == "This is step 3/3 of exporting"


def test_summary_counts_targets_left_out_by_config_errors(tmp_path):
    (tmp_path / "m.py").write_text("")
    (tmp_path / "onnxlens.toml").write_text(
        '[[target]]\nname = "good"\nmodel = "m.py:a"\ninputs = "m.py:b"\n'
        '[[target]]\nname = "bad"\nmodel = "m.py:a"\n'  # no inputs
        '[[target]]\nname = "worse"\nmodel = "m.py:a"\n')
    workspace = load_config(tmp_path / "onnxlens.toml")
    results = [ExportResult(target="good", status="ok", seconds=1.0)]
    everything = CheckRun(config=workspace, results=results, seconds=1.0)
    assert render_text(everything).splitlines()[-1] == "3 targets: 1 exported, 0 failed, 2 invalid (2 errors, 0 warnings) in 1.0 s"
    selected = CheckRun(config=workspace, results=results, seconds=1.0, selection=["good", "bad"])
    assert summary_line(selected) == "2 targets: 1 exported, 0 failed, 1 invalid (2 errors, 0 warnings) in 1.0 s"
