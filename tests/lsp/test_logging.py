"""Each log message reaches the editor once: editors show the server's stderr in the same output
panel as window/logMessage, so a message must not go both ways."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from lsp_support import copy_examples


def _frame(message: dict) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def _read_messages(stdout: bytes) -> list[dict]:
    messages, rest = [], stdout
    while b"\r\n\r\n" in rest:
        header, _, rest = rest.partition(b"\r\n\r\n")
        fields = dict(line.split(b":", 1) for line in header.split(b"\r\n"))
        length = int(fields[b"Content-Length"])
        messages.append(json.loads(rest[:length]))
        rest = rest[length:]
    return messages


def test_log_messages_are_not_repeated_on_stderr(tmp_path: Path):
    workspace = copy_examples(tmp_path)
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "processId": None, "rootUri": workspace.as_uri(), "capabilities": {},
        "workspaceFolders": [{"uri": workspace.as_uri(), "name": "examples"}]}}
    server = subprocess.Popen([sys.executable, "-m", "onnxlens.server"], cwd=workspace,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    server.stdin.write(_frame(initialize) + _frame({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
    server.stdin.flush()
    time.sleep(3)  # long enough for the config and warm-up messages; the export result is not needed
    server.stdin.write(_frame({"jsonrpc": "2.0", "id": 2, "method": "shutdown", "params": None})
                       + _frame({"jsonrpc": "2.0", "method": "exit", "params": None}))
    server.stdin.flush()
    stdout, stderr = server.communicate(timeout=60)
    logged = [m["params"]["message"] for m in _read_messages(stdout) if m.get("method") == "window/logMessage"]
    assert any("warming up the export worker" in text for text in logged), logged
    for text in logged:
        assert text not in stderr.decode(errors="replace"), f"logged twice: {text!r}"
