"""Each log message reaches the editor once: editors show the server's stderr in the same output
panel as window/logMessage, so a message must not go both ways."""

from __future__ import annotations

from pathlib import Path

from tests.support.lsp import RawServer
from tests.support.workspace import copy_examples


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
