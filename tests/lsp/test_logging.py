"""Each log message reaches the editor once: editors show the server's stderr in the same output
panel as window/logMessage, so a message must not go both ways."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.lsp import RawServer
from tests.support.workspace import copy_examples

pytestmark = pytest.mark.slow  # the language server and the export worker as processes


def test_log_messages_are_not_repeated_on_stderr(tmp_path: Path):
    workspace = copy_examples(tmp_path)
    with open(tmp_path / "stderr.txt", "w+b") as stderr:
        server = RawServer(workspace, stderr=stderr)
        try:
            server.initialize(capabilities={})
            # The config and warm-up messages are all out once the worker is ready; the export
            # result is not needed.
            server.wait_notification("window/logMessage", lambda params: "export worker ready" in params["message"])
            assert server.shutdown(timeout=60) == 0
        finally:
            server.kill()
        stderr.seek(0)
        errors = stderr.read().decode(errors="replace")
    logged = [m["params"]["message"] for m in server.received if m.get("method") == "window/logMessage"]
    assert any("warming up the export worker" in text for text in logged), logged
    for text in logged:
        assert text not in errors, f"logged twice: {text!r}"


def test_the_versions_and_the_torch_adapter_are_logged_at_start(tmp_path: Path):
    """What `onnxlens --version` says, before the worker warms up; the adapter the warm worker
    loaded, after (the VS Code extension shows both in its output channel)."""
    import importlib.metadata
    import sys

    workspace = copy_examples(tmp_path)
    server = RawServer(workspace)
    try:
        server.initialize(capabilities={})
        server.wait_notification("window/logMessage", lambda params: "the export worker is warm" in params["message"])
        assert server.shutdown(timeout=60) == 0
    finally:
        server.kill()
    logged = [m["params"]["message"] for m in server.received if m.get("method") == "window/logMessage"]
    versions = next(index for index, text in enumerate(logged) if text.startswith("onnxlens: onnxlens "))
    line = logged[versions]
    assert f"torch {importlib.metadata.version('torch')}, onnx {importlib.metadata.version('onnx')}" in line
    assert f"worker python {sys.executable} (Python " in line and "; torch adapter torch_2_1" in line
    assert versions < next(i for i, text in enumerate(logged) if "warming up the export worker" in text)
    adapter = line.split("; torch adapter ")[1].split(" ")[0]
    assert f"onnxlens: the export worker is warm; torch adapter {adapter}" in logged
