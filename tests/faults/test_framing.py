"""Fault matrix, wire rows: framing errors and the lifecycle over the real server's stdio
(tests.support.lsp.RawServer: a typed client cannot send a bad header).

Each framing fault is answered with a ParseError (id null), and the normal request sent right
after it is answered with nothing more sent: the stream resynced. The reader resyncs on bytes
alone (server/lsp/connection/framing.py: the next `Content-Length` line), never on a timer, so the answer
either comes from the bytes already sent or never; the test asserts that state, not a time
(measured: 0.3–16 ms after each fault, against the issue's 1 s). Before the fix the server went deaf after any of them, and
`Content-Length: 99999999999` killed it (MemoryError).
"""

from __future__ import annotations

import os
import time

import psutil
import pytest

from tests.support.faults import exported_server, make_fault_workspace
from tests.support.lsp import RawServer, uri

pytestmark = pytest.mark.slow  # the language server and the export worker as processes

PARSE_ERROR = -32700
INVALID_REQUEST = -32600


@pytest.fixture(scope="module")
def ws(tmp_path_factory):
    return make_fault_workspace(tmp_path_factory.mktemp("framing"))


@pytest.fixture(scope="module")
def server(ws):
    server = exported_server(ws)
    yield server
    server.kill()


def hover_params(ws) -> dict:
    return {"textDocument": {"uri": uri(ws.net)}, "position": {"line": 0, "character": 0}}


def answered_after(server: RawServer, ws, *bad: bytes) -> dict:
    """Send the chunks of `bad`, then a normal hover request, then nothing: its answer (a server
    still waiting for bytes of the bad frame never gives it: RawServer.response fails)."""
    errors_before = parse_errors(server)
    for chunk in bad:
        server.send_bytes(chunk)
    reply = server.response(server.request("textDocument/hover", hover_params(ws)))
    assert "error" not in reply, reply
    server.wait_until(lambda: parse_errors(server) > errors_before, "the parse error for the bad frame", 10)
    return reply


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
    answered_after(server, ws, FAULTS[fault])
    assert server.proc.poll() is None


def test_a_body_over_the_limit_is_not_read_into_memory(server, ws):
    """80 MB streamed after a header that declares it (the limit is 64 MB): refused, skipped
    as it arrives; the server's memory does not grow by the body's size."""
    process = psutil.Process(server.proc.pid)
    before = process.memory_info().rss
    size = 80 * 1024 * 1024
    chunk = b"x" * (1 << 20)
    answered_after(server, ws, b"Content-Length: %d\r\n\r\n" % size, *[chunk] * (size // len(chunk)))
    grown = process.memory_info().rss - before
    assert grown < size // 4, f"the server grew by {grown / 2**20:.0f} MB reading a refused 80 MB body"


def test_zz_requests_after_shutdown_get_invalid_request(server, ws):
    reply = server.call("shutdown")
    assert "error" not in reply, reply
    for method, params in [("textDocument/hover", hover_params(ws)),
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


def quiet(server: RawServer, seconds: float = 1.0) -> dict:
    """The server's stats once no export has run, waited or been triggered for `seconds`."""
    last, since = None, time.monotonic()

    def settled():
        nonlocal last, since
        stats = server.call("onnxlens/stats", {})["result"]
        state = (stats["triggers"], stats["started"], tuple(stats["running"]), tuple(stats["pending"]))
        if state != last:
            last, since = state, time.monotonic()
        return stats if not state[2] and not state[3] and time.monotonic() - since >= seconds else None
    return server.wait_until(settled, f"the server quiet for {seconds} s")


def test_initialized_again_changes_nothing(tmp_path):
    """15 `initialized` notifications: one watcher, one worker, one export; (threads, fds,
    inotify instances) stay as they were. Each `initialized` acted on would start a session of
    its own (a watcher, a worker, their threads and inotify instances), and none would ever be
    stopped. Threads and fds get a margin of 2: a thread pool of the server may add a thread
    for other work meanwhile."""
    ws = make_fault_workspace(tmp_path)
    server = exported_server(ws)
    try:
        stats = quiet(server)
        threads, fds, inotify = fds_and_threads(server.proc.pid)
        for _ in range(14):
            server.notify("initialized", {})
        server.wait_until(lambda: sum("`initialized` was sent again" in str(m.get("params", {}).get("message"))
                                      for m in list(server.received)) == 14, "the 14 notifications handled")
        quiet(server)
        after = fds_and_threads(server.proc.pid)
        assert after[2] == inotify and after[0] <= threads + 2 and after[1] <= fds + 2, \
            f"(threads, fds, inotify) {(threads, fds, inotify)} -> {after}"
        again = quiet(server)
        assert (again["started"], again["worker_pid"], again["projects"]) == \
            (stats["started"], stats["worker_pid"], stats["projects"])
    finally:
        server.kill()
