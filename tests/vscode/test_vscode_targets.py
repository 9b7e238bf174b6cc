"""One-click targets in a real VS Code: the packaged extension in code-server, driven by headless
Chromium, in a workspace with PyTorch code and no onnxlens config (a pyproject.toml without
[tool.onnxlens]).

* The extension starts the server although there is no config (a Python file imports torch); the
  server's offer "This workspace has 1 PyTorch model and no ONNX export targets. Add it?" shows
  as a notification with "Add targets" and "Not now"; "Not now" is clicked.
* On the model's `class` line, Ctrl+. lists "Add Scorer as an ONNX export target"; clicking it
  makes VS Code apply the edit and save the files (files.refactoring.autoSave); the server picks
  the new config up and exports: the status entry says "ONNX: scorer … s" and scorer.onnx is
  written.
* In a second window, "Add targets" on the offer: VS Code applies the server's
  workspace/applyEdit, and the target exports the same way.

Skipped only when the tools are not installed (scripts/install-vscode-e2e).
"""

from __future__ import annotations

import contextlib
import json
import tomllib

import pytest

from tests.support.workspace import line_of, write
from tests.vscode.vscode_harness import DRIVE_TIMEOUT, REPO, TARGETS_DRIVER, CodeServer, drive, missing_tools

pytestmark = [
    pytest.mark.skipif(
        bool(missing_tools()),
        reason=f"VS Code e2e tools not installed ({', '.join(missing_tools())}): run scripts/install-vscode-e2e",
    ),
    pytest.mark.slow,  # a real VS Code (code-server and headless Chromium)
]

ARTIFACTS = REPO / "test-artifacts" / "vscode-targets"
PYTHON = REPO / ".venv" / "bin" / "python"
PROJECT = '[project]\nname = "scoring"\nversion = "0"\n'
MODEL = '''import torch
from torch import nn


class Scorer(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(12, 8), nn.ReLU(), nn.Linear(8, 1))

    def forward(self, features):
        return torch.sigmoid(self.layers(features))
'''


def _run(tmp_path, vsix, answer: str, title: str | None):
    workspace = tmp_path / "scoring"
    write(workspace / "pyproject.toml", PROJECT)
    write(workspace / "models" / "scorer.py", MODEL)
    model = workspace / "models" / "scorer.py"
    artifacts = ARTIFACTS / ("code-action" if title else "offer")
    artifacts.mkdir(parents=True, exist_ok=True)
    settings = {"onnxlens.interpreter": str(PYTHON), "onnxlens.logLevel": "debug"}
    with contextlib.ExitStack() as stack:
        server = stack.enter_context(CodeServer(tmp_path / "vscode", settings, extensions=(vsix,), path_prefix=(PYTHON.parent,)))
        result = drive({
            "artifacts": str(artifacts),
            "url": server.url(workspace),
            "file": "models/scorer.py",
            "offer": {"message": "PyTorch model and no ONNX export targets", "answer": answer},
            "classLine": line_of(model, "class Scorer"),
            "title": title,
            "statusOk": r"^ONNX: scorer [\d.]+ s",
            "onnxFile": str(workspace / ".onnxlens" / "scorer.onnx"),
            "exportTimeoutMs": 180_000,
        }, tmp_path, driver=TARGETS_DRIVER)
        (artifacts / "result.json").write_text(json.dumps(result, indent=2))
        why = f"errors: {result['errors']}\n{result.get('driver_log', '')[-3000:]}\n{server.extension_host_logs()[-6000:]}"
    steps = result["steps"]
    offer = steps["offer"]
    assert not offer.get("failed"), why
    assert offer["buttons"][:2] == ["Add targets", "Not now"], offer
    return workspace, model, steps, why


def _exported(workspace, model, steps, why):
    exported = steps["export"]
    assert not exported.get("failed"), f"{exported['observed']['statusItems']}\n{why}"
    assert exported["onnxFile"], why
    config = tomllib.loads((workspace / "pyproject.toml").read_text())
    assert config["tool"]["onnxlens"]["target"] == [{"name": "scorer", "model": "models/scorer.py:Scorer",
                                                    "inputs": "models/scorer.py:example_inputs_scorer"}]
    assert (workspace / "pyproject.toml").read_text().startswith(PROJECT)
    assert "torch.randn(2, 12)" in model.read_text()


@pytest.mark.timeout(DRIVE_TIMEOUT + 180)  # a hang of the whole run, not a performance assertion
def test_vscode_adds_a_target_in_one_click_and_it_exports(tmp_path, vsix):
    workspace, model, steps, why = _run(tmp_path, vsix, "Not now", "Add Scorer as an ONNX export target")
    action = steps["codeAction"]
    assert not action.get("failed"), f"{action}\n{why}"
    assert "Add Scorer as an ONNX export target" in action["actions"], action["actions"]
    _exported(workspace, model, steps, why)


@pytest.mark.timeout(DRIVE_TIMEOUT + 180)
def test_vscode_adds_the_offered_targets_and_they_export(tmp_path, vsix):
    workspace, model, steps, why = _run(tmp_path, vsix, "Add targets", None)
    assert "codeAction" not in steps
    _exported(workspace, model, steps, why)
