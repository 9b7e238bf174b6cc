"""`onnxlens check` end to end: the real CLI process, real torch exports through ExportService.

Exports cost seconds each, so each module-scoped fixture runs `check` once and several tests
assert on its output. Expected source lines are found by searching the example sources.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.workspace import EXAMPLES, copy_examples, line_of

pytestmark = pytest.mark.slow  # onnxlens as a subprocess, exporting through its worker

CLI = [sys.executable, "-m", "onnxlens.server.cli"]
TEXT_DIAGNOSTIC = re.compile(r"^(?P<file>\S+):(?P<line>\d+):(?P<column>\d+): (?P<severity>error|warning)\[(?P<code>[a-z-]+)\] (?P<message>.+)$")


def check(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, "check", *args], cwd=cwd, capture_output=True, text=True, timeout=600)


# Where the spectral target's two unsupported operators are (docs/diagnostics.md: one finding per source location).
SPECTRAL_FINDINGS = {
    ("models/spectral.py", line_of(EXAMPLES / "models" / "spectral.py", "torch.linalg.eigvals(")),
    ("models/features.py", line_of(EXAMPLES / "models" / "features.py", "torch.special.zeta(")),
}


# --- JSON on the whole example workspace ---------------------------------------------------

@pytest.fixture(scope="module")
def examples_workspace(tmp_path_factory):
    """One copy of examples/ for the JSON, text and SARIF runs: the first run exports (fresh
    cache), the others may be served from the result cache (an honest second `check` in CI)."""
    return copy_examples(tmp_path_factory.mktemp("examples"))


@pytest.fixture(scope="module")
def json_run(examples_workspace):
    process = check(str(examples_workspace), "--format", "json", "--jobs", "2")
    return examples_workspace, process, json.loads(process.stdout)


def test_json_follows_the_design_schema(json_run):
    _, process, data = json_run
    assert data["version"] == 1
    assert data["config"] == "pyproject.toml" and data["config_diagnostics"] == []
    assert [t["name"] for t in data["targets"]] == ["mlp", "encoder", "spectral"]
    for target in data["targets"]:
        assert {"name", "status", "onnx", "report", "seconds", "stages", "verification", "diagnostics"} <= set(target)
        assert target["status"] in ("ok", "failed")
        assert isinstance(target["seconds"], float) and target["seconds"] > 0
        assert isinstance(target["stages"], dict) and all(isinstance(v, float) for v in target["stages"].values())
        assert target["verification"] is None or {"max_abs_diff", "max_rel_diff", "passed"} <= set(target["verification"])
        for diagnostic in target["diagnostics"]:
            assert set(diagnostic) >= {"file", "line", "column", "end_line", "end_column", "severity",
                                       "code", "message", "stage", "related"}
            assert all(isinstance(diagnostic[k], int) for k in ("line", "column", "end_line", "end_column"))
            assert diagnostic["end_line"] >= diagnostic["line"] >= 1
            assert diagnostic["severity"] in ("error", "warning")
            for related in diagnostic["related"]:
                assert set(related) == {"file", "line", "message"} and isinstance(related["line"], int)
    assert "Traceback" not in process.stderr


def test_json_exit_status_is_1_when_a_target_fails(json_run):
    _, process, _ = json_run
    assert process.returncode == 1, process.stderr


def test_json_clean_targets_are_exported(json_run):
    workspace, _, data = json_run
    targets = {t["name"]: t for t in data["targets"]}
    for name in ("mlp", "encoder"):
        target = targets[name]
        assert target["status"] == "ok"
        assert target["onnx"] == f".onnxlens/{name}.onnx"  # relative to the workspace root
        assert (workspace / target["onnx"]).stat().st_size > 1000
        assert [d for d in target["diagnostics"] if d["severity"] == "error"] == []


def test_json_spectral_has_two_unsupported_ops_in_two_files(json_run):
    """Needs the real pipeline (the bootstrap reports one generic finding)."""
    workspace, _, data = json_run
    spectral = next(t for t in data["targets"] if t["name"] == "spectral")
    assert spectral["status"] == "failed" and spectral["onnx"] is None
    assert not (workspace / ".onnxlens" / "spectral.onnx").exists()
    diagnostics = spectral["diagnostics"]
    assert [d["code"] for d in diagnostics] == ["unsupported-op", "unsupported-op"]
    assert {(d["file"], d["line"]) for d in diagnostics} == SPECTRAL_FINDINGS
    assert all(d["severity"] == "error" and d["stage"] == "scan" for d in diagnostics)


def test_json_verification_and_report_of_a_clean_target(json_run):
    """Needs the real pipeline (the bootstrap neither verifies nor writes reports)."""
    workspace, _, data = json_run
    mlp = next(t for t in data["targets"] if t["name"] == "mlp")
    assert mlp["verification"]["passed"] is True
    assert mlp["report"] == ".onnxlens/reports/mlp.md" and (workspace / mlp["report"]).is_file()


# --- text and SARIF on a selection of targets ----------------------------------------------

@pytest.fixture(scope="module")
def text_run(examples_workspace):
    # No PATH: the current directory is searched upward for the config.
    return check("--target", "spectral", "--target", "mlp", cwd=examples_workspace / "models")


def test_text_selects_targets_and_ends_with_a_summary(text_run):
    assert text_run.returncode == 1, text_run.stderr
    lines = text_run.stdout.splitlines()
    assert re.fullmatch(r"2 targets: 1 exported, 1 failed( \(2 cached\))? \(\d+ errors?, 0 warnings\) in \d+\.\d s",
                        lines[-1])
    assert "encoder" not in text_run.stdout + text_run.stderr  # not selected, not exported
    # Progress goes to stderr, one line per finished target.
    # A cached result's seconds are the earlier export's: its line says so instead of "in".
    finished = r"( in \d+\.\d\d s| \(cached: nothing it depends on changed since an export of \d+\.\d\d s\))$"
    assert re.search(r"^onnxlens: mlp: exported" + finished, text_run.stderr, re.M)
    assert re.search(r"^onnxlens: spectral: failed: \d+ problems?" + finished, text_run.stderr, re.M)
    assert "Traceback" not in text_run.stderr


def test_text_puts_each_unsupported_op_on_its_line(text_run):
    """Needs the real pipeline (the bootstrap reports one generic finding)."""
    found = [TEXT_DIAGNOSTIC.match(line) for line in text_run.stdout.splitlines()]
    found = [m for m in found if m]
    assert {(m["file"], int(m["line"])) for m in found} == SPECTRAL_FINDINGS
    assert all(m["severity"] == "error" and m["code"] == "unsupported-op" for m in found)
    assert "2 errors" in text_run.stdout.splitlines()[-1]


def test_text_notes_show_the_call_chain(text_run):
    """Needs the real pipeline: the zeta finding (in a helper) notes forward's call of it."""
    notes = [line for line in text_run.stdout.splitlines() if ": note: " in line]
    assert notes and all(re.match(r"^    \S+:\d+: note: .+", line) for line in notes)
    call = line_of(EXAMPLES / "models" / "spectral.py", "zeta_features(eig)")
    assert any(line.startswith(f"    models/spectral.py:{call}: note: ") for line in notes), notes


@pytest.fixture(scope="module")
def sarif_run(examples_workspace):
    process = check(str(examples_workspace / "pyproject.toml"), "--target", "spectral", "--format", "sarif")
    return examples_workspace, process, json.loads(process.stdout)


def test_sarif_has_the_required_structure(sarif_run):
    workspace, process, sarif = sarif_run
    assert process.returncode == 1
    assert process.stderr.count("onnxlens: spectral") == 0  # progress only in text mode
    assert sarif["version"] == "2.1.0" and "sarif-schema-2.1.0" in sarif["$schema"]
    (run,) = sarif["runs"]
    driver = run["tool"]["driver"]
    assert driver["name"] == "onnxlens" and driver["version"] and driver["informationUri"].startswith("https://")
    rule_ids = [rule["id"] for rule in driver["rules"]]
    assert {"config", "unsupported-op", "torch-export", "mismatch", "crash"} <= set(rule_ids)
    for rule in driver["rules"]:
        assert rule["shortDescription"]["text"] and rule["helpUri"].startswith("https://")
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == workspace.resolve().as_uri() + "/"
    assert run["results"]
    for result in run["results"]:
        assert result["ruleId"] in rule_ids and rule_ids[result["ruleIndex"]] == result["ruleId"]
        assert result["level"] in ("error", "warning", "note") and result["message"]["text"]
        (location,) = result["locations"]
        physical = location["physicalLocation"]
        artifact = physical["artifactLocation"]
        if artifact.get("uriBaseId") == "%SRCROOT%":
            assert not artifact["uri"].startswith("/") and (workspace / artifact["uri"]).is_file()
        region = physical["region"]
        assert region["endLine"] >= region["startLine"] >= 1
        assert region["startColumn"] >= 1 and region["endColumn"] > 0
        for related in result["relatedLocations"]:
            assert related["physicalLocation"]["region"]["startLine"] >= 1 and related["message"]["text"]


def test_sarif_results_are_the_unsupported_ops(sarif_run):
    """Needs the real pipeline (the bootstrap reports one generic finding)."""
    _, _, sarif = sarif_run
    results = sarif["runs"][0]["results"]
    assert {r["ruleId"] for r in results} == {"unsupported-op"}
    places = {(r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
               r["locations"][0]["physicalLocation"]["region"]["startLine"]) for r in results}
    assert places == SPECTRAL_FINDINGS
    assert all(r["locations"][0]["physicalLocation"]["artifactLocation"]["uriBaseId"] == "%SRCROOT%" for r in results)


# --- exit status 0, selection, usage errors ------------------------------------------------

@pytest.fixture(scope="module")
def clean_runs(tmp_path_factory):
    """A workspace whose one target exports, checked three times: fresh, again (unchanged: from
    the cache), and with --no-cache."""
    workspace = tmp_path_factory.mktemp("clean")
    shutil.copytree(EXAMPLES / "models", workspace / "models")
    (workspace / "onnxlens.toml").write_text(
        '[[target]]\nname = "mlp"\nmodel = "models/mlp.py:MLP"\ninputs = "models/mlp.py:example_inputs"\n')
    runs = [check(str(workspace), "--format", "json", "--no-verify", *extra) for extra in ([], [], ["--no-cache"])]
    return workspace, runs


def test_a_workspace_whose_targets_all_export_exits_0(clean_runs):
    workspace, (first, _, _) = clean_runs
    assert first.returncode == 0, first.stdout + first.stderr
    (mlp,) = json.loads(first.stdout)["targets"]
    assert mlp["status"] == "ok" and (workspace / mlp["onnx"]).is_file()
    assert mlp["verification"] is None  # --no-verify (a verified run has it: see the JSON run)


def test_unchanged_rerun_comes_from_the_cache_unless_no_cache(clean_runs):
    _, runs = clean_runs
    assert [run.returncode for run in runs] == [0, 0, 0]
    assert [json.loads(run.stdout)["targets"][0]["cached"] for run in runs] == [False, True, False]


def test_target_option_selects_one_target(examples_workspace):
    process = check(str(examples_workspace), "--target", "mlp")
    assert process.returncode == 0, process.stdout + process.stderr
    assert process.stdout.splitlines()[-1].startswith("1 target: 1 exported, 0 failed")
    assert "spectral" not in process.stdout + process.stderr and "encoder" not in process.stderr


def test_a_profiled_target_says_what_each_line_costs_in_the_json(tmp_path_factory):
    """`profile = true`: the example MLP's one line that computes (its forward's return) has all
    of onnxruntime's kernel time, and the profile onnxruntime wrote is named, workspace-relative.
    One target with `--jobs 2` is one job, and it runs on every CPU (with 2 jobs' share, the
    verification of a big model took twice as long)."""
    workspace = copy_examples(tmp_path_factory.mktemp("profiled"))
    config = workspace / "pyproject.toml"
    config.write_text(config.read_text().replace("verify = true\n", "verify = true\nprofile = true\n", 1))
    process = check(str(workspace), "--target", "mlp", "--format", "json", "--jobs", "2")
    assert process.returncode == 0, process.stdout + process.stderr
    (target,) = json.loads(process.stdout)["targets"]
    cost = target["cost"]
    assert cost["threads"] == os.cpu_count()
    mlp = workspace / "models" / "mlp.py"
    [line] = cost["lines"]
    assert (line["file"], line["line"]) == ("models/mlp.py", line_of(mlp, "return self.net(x)"))
    assert line["share"] == 1.0 and line["microseconds"] == cost["total_us"] > 0 and cost["other_us"] == 0
    events = json.loads((workspace / cost["profile"]).read_text())
    kernels = [e for e in events if e.get("cat") == "Node" and e["name"].endswith("_kernel_time")]
    assert sum(e["dur"] for e in kernels) == cost["total_us"] and len(kernels) == cost["kernel_count"]
    assert sum(line["kernels"].values()) == len(kernels)


def test_unknown_target_exits_2_listing_the_targets(tmp_path_factory):
    workspace = copy_examples(tmp_path_factory.mktemp("unknown"))
    process = check(str(workspace), "--target", "mpl")
    assert process.returncode == 2
    assert process.stdout == ""
    assert "unknown target 'mpl'" in process.stderr and "mlp, encoder, spectral" in process.stderr
    assert not (workspace / ".onnxlens").exists()  # nothing exported


def test_no_configuration_exits_2_with_a_message(tmp_path):
    # Through the installed console script this time.
    script = Path(sys.executable).parent / "onnxlens"
    process = subprocess.run([str(script), "check", str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert process.returncode == 2
    assert "no onnxlens configuration" in process.stderr and "Traceback" not in process.stderr


@pytest.mark.parametrize("args", [["--jobs", "0"], ["--format", "xml"], ["--bogus"]])
def test_usage_errors_exit_2(tmp_path, args):
    process = check(str(tmp_path), *args)
    assert process.returncode == 2 and "usage:" in process.stderr


# --- config mistakes through the CLI -------------------------------------------------------

TARGET = '[[tool.onnxlens.target]]\nname = "net"\nmodel = "models/net.py:build"\ninputs = "models/net.py:inputs"\n'

# name -> (config text, (text on the offending line, which occurrence)). Every target here is invalid, so nothing
# is exported and the runs are quick.
CONFIG_MISTAKES = {
    "invalid-toml": ("[tool.onnxlens]\ntimeout = = 3\n" + TARGET, ("timeout = = 3", 1)),
    "unknown-key": (TARGET + "verfy = false\n", ("verfy = false", 1)),
    "wrong-type": (TARGET + 'timeout = "long"\n', ('timeout = "long"', 1)),
    "missing-key": ('[[tool.onnxlens.target]]\nname = "net"\nmodel = "models/net.py:build"\n',
                    ("[[tool.onnxlens.target]]", 1)),
    "bad-reference": (TARGET.replace("models/net.py:build", "models/net.py"), ('model = "models/net.py"', 1)),
    "missing-file": (TARGET.replace("models/net.py:inputs", "models/gone.py:inputs"), ("models/gone.py", 1)),
    # The first target lacks `inputs` (so nothing exports); the second reuses its name.
    "duplicate-name": (TARGET.replace('inputs = "models/net.py:inputs"\n', "") + TARGET, ('name = "net"', 2)),
}


def write_mistake(root: Path, config: str) -> Path:
    (root / "models").mkdir()
    (root / "models" / "net.py").write_text("def build():\n    pass\n")
    (root / "pyproject.toml").write_text(config)
    return root / "pyproject.toml"


@pytest.mark.parametrize("mistake", CONFIG_MISTAKES)
def test_config_mistake_is_a_finding_on_its_line_and_exits_2(tmp_path, mistake):
    config, offending = CONFIG_MISTAKES[mistake]
    path = write_mistake(tmp_path, config)
    expected_line = line_of(path, *offending)

    process = check(str(tmp_path), "--format", "json")
    assert process.returncode == 2, process.stdout + process.stderr
    data = json.loads(process.stdout)
    assert data["targets"] == []
    lines = {(d["file"], d["line"], d["code"]) for d in data["config_diagnostics"]}
    assert ("pyproject.toml", expected_line, "config") in lines, data["config_diagnostics"]

    text = check(str(tmp_path))
    assert text.returncode == 2
    assert re.search(rf"^pyproject\.toml:{expected_line}:\d+: error\[config\] ", text.stdout, re.M), text.stdout
    assert "Traceback" not in text.stderr
