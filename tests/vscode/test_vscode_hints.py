"""Inlay hints and the change lenses in a real VS Code: the packaged extension in code-server,
driven by headless Chromium, on a copy of examples/ with the real server and real exports.

The example encoder (examples/models/encoder.py: six blocks, the batch declared `Dim("batch")`):
after its export, each line of `Block.forward` shows what it produced at its end, once for the
six blocks — `[batch, 16, 256] f32 ×6 in layers.0–5`. A line typed above them (not saved yet)
moves their hints down with them; saved, it is exported, and a lens above it says what it added
since the last export. Screenshots go to test-artifacts/vscode-hints/ (hints-hints.png: the hints;
hints-change.png: the lens).

Skipped only when the tools are not installed (scripts/install-vscode-e2e).
"""

from __future__ import annotations

import contextlib
import json

import pytest

from tests.support.workspace import copy_examples, line_of
from tests.vscode.vscode_harness import DRIVE_TIMEOUT, HINTS_DRIVER, REPO, CodeServer, drive, missing_tools

pytestmark = [
    pytest.mark.skipif(
        bool(missing_tools()),
        reason=f"VS Code e2e tools not installed ({', '.join(missing_tools())}): run scripts/install-vscode-e2e",
    ),
    pytest.mark.slow,  # a real VS Code (code-server and headless Chromium)
]

ARTIFACTS = REPO / "test-artifacts" / "vscode-hints"
PYTHON = REPO / ".venv" / "bin" / "python"
HINT = "[batch, 16, 256] f32 ×6 in layers.0–5"
BLOCK_LINES = ("h = self.norm1(x)", "x = x + self.attn(h, h, h, need_weights=False)[0]",
               "return x + self.ff(self.norm2(x))")
ADDED = "x = self.norm1(x)"


@pytest.mark.timeout(DRIVE_TIMEOUT + 180)  # a hang of the whole run, not a performance assertion
def test_vscode_shows_what_each_line_produced_and_what_a_save_changed(tmp_path, vsix):
    workspace = copy_examples(tmp_path / "ws")
    encoder = workspace / "models" / "encoder.py"
    forward = line_of(encoder, "def forward(self, x: torch.Tensor) -> torch.Tensor:")
    assert line_of(encoder, BLOCK_LINES[0]) == forward + 1  # what the typed line goes above
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    # No auto-save (VS Code for the Web saves after a delay by default): the typed line stays unsaved.
    settings = {"onnxlens.interpreter": str(PYTHON), "onnxlens.logLevel": "debug", "editor.inlayHints.enabled": "on",
                "files.autoSave": "off"}
    with contextlib.ExitStack() as stack:
        server = stack.enter_context(CodeServer(tmp_path / "vscode", settings, extensions=(vsix,), path_prefix=(PYTHON.parent,)))
        result = drive({
            "artifacts": str(ARTIFACTS),
            "url": server.url(workspace),
            "file": "models/encoder.py",
            "hintText": HINT,
            "edit": {"line": forward, "text": ADDED, "movedHint": f"{BLOCK_LINES[0]} {HINT}",
                     "lens": "since the last export"},
            "exportTimeoutMs": 240_000,
        }, tmp_path, driver=HINTS_DRIVER)
        (ARTIFACTS / "result.json").write_text(json.dumps(result, indent=2))
        why = f"errors: {result['errors']}\n{result.get('driver_log', '')[-3000:]}\n{server.extension_host_logs()[-6000:]}"
    steps = result["steps"]

    # The hints, at the end of each line of Block.forward, as the editor renders them.
    hints = steps["hints"]
    assert not hints.get("failed"), f"{hints['observed']['lines']}\n{why}"
    lines = [line.strip() for line in hints["observed"]["lines"]]
    for code in BLOCK_LINES:  # the hint after the code, past a hair space of padding
        assert f"{code} {HINT}" in lines, lines
    assert not any("s77" in line or "s0" in line for line in lines), "torch's symbols, not the declared name"
    # Lines that produced nothing themselves have none (the loop calls the blocks' lines).
    assert "x = layer(x)" in lines, lines

    # A typed line moves the hints below it; saved, a lens above it says what it added.
    change = steps["change"]
    assert not change.get("failed"), f"{change['observed']['lines']}\n{change['observed']['lenses']}\n{why}"
    unsaved = [line.strip() for line in change["unsaved"]["lines"]]
    added = unsaved.index(ADDED)  # no hint: not exported yet
    assert unsaved[added + 1] == f"{BLOCK_LINES[0]} {HINT}", unsaved
    lenses = change["observed"]["lenses"]
    assert any("encoder +6 nodes (LayerNormalization ×6)" in lens and "since the last export" in lens
               for lens in lenses), lenses
