"""Fault matrix, wire rows: framing errors and the lifecycle over the real server's stdio
(tests.support.lsp.RawServer: a typed client cannot send a bad header).

Each framing fault is answered with a ParseError (id null), and the normal request sent right
after it is answered: the stream resynced. The issue asks for that answer within 1 s; measured
here (2-core machine, other test runs beside it) 0.3–16 ms after each fault, so the 1 s bound
has a wide margin. Before the fix the server went deaf after any of them, and
`Content-Length: 99999999999` killed it (MemoryError).
"""

from __future__ import annotations

import json
import os
import time

import psutil
import pytest

from tests.support.faults import exported, make_fault_workspace
from tests.support.lsp import RawServer, uri

ANSWER_BOUND = 1.0  # seconds: the number; measured 0.3-16 ms
PARSE_ERROR = -32700
INVALID_REQUEST = -32600


@pytest.fixture(scope="module")
def ws(tmp_path_factory):
    return make_fault_workspace(tmp_path_factory.mktemp("framing"))


@pytest.fixture(scope="module")
def server(ws):
    server = RawServer(ws.root)
    server.initialize()
    server.open_and_save(ws.net)
    server.wait_until(lambda: exported(ws.onnx, 1), "the first export")
    yield server
    server.kill()


def hover(server: RawServer, ws) -> bytes:
    server._next_id += 1
    body = json.dumps({"jsonrpc": "2.0", "id": server._next_id, "method": "textDocument/hover", "params": {
        "textDocument": {"uri": uri(ws.net)}, "position": {"line": 0, "character": 0}}}).encode()
    return body


def answered_after(server: RawServer, ws, *bad: bytes) -> tuple[float, dict]:
    """Send the chunks of `bad`, then a normal hover request; its answer and the seconds from
    sending it to the answer."""
    errors_before = parse_errors(server)
    body = hover(server, ws)
    request_id = server._next_id
    for chunk in bad:
        server.send_bytes(chunk)
    started = time.monotonic()
    server.send_bytes(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    reply = server.response(request_id)
    took = time.monotonic() - started
    assert "error" not in reply, reply
    server.wait_until(lambda: parse_errors(server) > errors_before, "the parse error for the bad frame", 10)
    return took, reply


def parse_errors(server: RawServer) -> int:
    return sum(1 for m in list(server.received)
               if m.get("id") is None and m.get("error", {}).get("code") == PARSE_ERROR)


SAMPLE = b'{"jsonrpc": "2.0", "id": 999999, "method": "textDocument/hover", "params": {}}'
FAULTS = {
    "length not a number": b"Content-Length: abc\r\n\r\n" + SAMPLE,
    "negative length": b"Content-Length: -12\r\n\r\n" + SAMPLE,
    "no length": b"Content-Type: application/vscode-jsonrpc\r\n\r\n" + SAMPLE,
    "length too long": b"Content-Length: %d\r\n\r\n" % (len(SAMPLE) + 500) + SAMPLE,
    "length too short": b"Content-Length: 20\r\n\r\n" + SAMPLE,
    "length over the limit": b"Content-Length: 99999999999\r\n\r\n" + SAMPLE,
    "no header at all": b"this is not LSP\n" + SAMPLE,
    "body not JSON": b"Content-Length: 11\r\n\r\n{not json!}",
}


@pytest.mark.parametrize("fault", FAULTS)
def test_a_framing_error_is_answered_and_the_next_request_too(server, ws, fault):
    took, _ = answered_after(server, ws, FAULTS[fault])
    assert took < ANSWER_BOUND, f"the request after {fault!r} took {took:.3f} s"
    assert server.proc.poll() is None


def test_a_body_over_the_limit_is_not_read_into_memory(server, ws):
    """80 MB streamed after a header that declares it (the limit is 64 MB): refused, skipped
    as it arrives; the server's memory does not grow by the body's size."""
    process = psutil.Process(server.proc.pid)
    before = process.memory_info().rss
    size = 80 * 1024 * 1024
    chunk = b"x" * (1 << 20)
    took, _ = answered_after(server, ws, b"Content-Length: %d\r\n\r\n" % size, *[chunk] * (size // len(chunk)))
    grown = process.memory_info().rss - before
    assert grown < size // 4, f"the server grew by {grown / 2**20:.0f} MB reading a refused 80 MB body"
    assert took < ANSWER_BOUND


def test_zz_requests_after_shutdown_get_invalid_request(server, ws):
    reply = server.call("shutdown")
    assert "error" not in reply, reply
    for method, params in [("textDocument/hover", json.loads(hover(server, ws))["params"]),
                           ("onnxlens/stats", {}), ("shutdown", None)]:
        reply = server.call(method, params, timeout=10)
        assert reply.get("error", {}).get("code") == INVALID_REQUEST, (method, reply)
    server.notify("exit")
    assert server.proc.wait(timeout=30) == 0


def fds_and_threads(pid: int) -> tuple[int, int, int]:
    """(threads, open fds, inotify instances) of the process."""
    process = psutil.Process(pid)
    inotify = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            inotify += os.readlink(f"/proc/{pid}/fd/{fd}") == "anon_inode:inotify"
        except OSError:
            pass
    return process.num_threads(), process.num_fds(), inotify


def test_initialized_again_changes_nothing(tmp_path):
    """15 `initialized` notifications: one watcher, one worker, one export; (threads, fds,
    inotify instances) stayed (7, 12, 1). Before the fix each started another file watcher
    (threads 10 -> 41, inotify fds 2 -> 17)."""
    ws = make_fault_workspace(tmp_path)
    server = RawServer(ws.root)
    try:
        server.initialize()
        server.open_and_save(ws.net)
        server.wait_until(lambda: exported(ws.onnx, 1), "the first export")
        stats = server.call("onnxlens/stats", {})["result"]
        before = fds_and_threads(server.proc.pid)
        for _ in range(14):
            server.notify("initialized", {})
        server.call("textDocument/hover", json.loads(hover(server, ws))["params"])  # all handled
        after = fds_and_threads(server.proc.pid)
        assert after == before, f"(threads, fds, inotify) {before} -> {after}"
        again = server.call("onnxlens/stats", {})["result"]
        assert (again["started"], again["worker_pid"], again["projects"]) == \
            (stats["started"], stats["worker_pid"], stats["projects"])
    finally:
        server.kill()
