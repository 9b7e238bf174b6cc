"""`onnxlens serve` hands stdio to the language server (server/lsp, tested in tests/lsp/):
here only that the console script's subcommand reaches it and that it answers and exits."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


def frame(message: dict) -> bytes:
    body = json.dumps({"jsonrpc": "2.0", **message}).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def test_serve_answers_initialize_and_exits_on_request(tmp_path):
    script = Path(sys.executable).parent / "onnxlens"
    messages = (frame({"id": 1, "method": "initialize", "params": {"processId": None, "rootUri": None, "capabilities": {}}})
                + frame({"id": 2, "method": "shutdown"})
                + frame({"method": "exit"}))
    process = subprocess.run([str(script), "serve"], input=messages, capture_output=True, cwd=tmp_path, timeout=120)
    assert process.returncode == 0, process.stderr.decode()
    header, _, rest = process.stdout.partition(b"\r\n\r\n")
    length = int(header.split(b"Content-Length: ")[1].split(b"\r\n")[0])
    reply = json.loads(rest[:length])
    assert reply["id"] == 1 and "capabilities" in reply["result"]
    assert b"Traceback" not in process.stderr
