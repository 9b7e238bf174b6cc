"""Fault matrix, client-abuse rows: malformed or out-of-range requests, unknown commands and
paths outside the workspace get an error response; the server does not crash, runs no code
the workspace config does not name, and opens nothing outside the workspace.

Spoken over raw stdio (tests.support.lsp.RawServer) because a typed client cannot send garbage.
"""

from __future__ import annotations

import time

import psutil
import pytest

from tests.support.faults import exported, exported_server, make_fault_workspace, net_source, tree, wait_gone
from tests.support.lsp import RawServer, uri, uri_path
from tests.support.workspace import write

pytestmark = pytest.mark.slow  # the language server and the export worker as processes

COMMANDS = ["onnxlens.openReport", "onnxlens.showExportedProgram", "onnxlens.export"]


@pytest.fixture(scope="module")
def ws(tmp_path_factory):
    ws = make_fault_workspace(tmp_path_factory.mktemp("abuse"))
    sentinel = ws.scratch / "PWNED-outside"
    # a model file outside the workspace, and a stray one inside that no target names: if the
    # server ever imported either, the sentinel file would appear
    for evil in (ws.scratch / "evil.py", ws.root / "models" / "stray.py"):
        write(evil, f"open({str(sentinel)!r}, 'a').write({str(evil)!r} + '\\n')\n"
                    "def build_model():\n    raise SystemExit('ran untrusted code')\n")
    write(ws.scratch / "secret.md", "# not yours\n")
    return ws


@pytest.fixture(scope="module")
def server(ws):
    server = exported_server(ws)
    yield server
    server.kill()


def assert_still_answers(server: RawServer, ws) -> None:
    reply = server.call("textDocument/hover", {
        "textDocument": {"uri": uri(ws.net)}, "position": {"line": 0, "character": 0}})
    assert "error" not in reply, reply
    assert server.proc.poll() is None


def test_garbage_bytes_do_not_kill_the_server(server: RawServer, ws):
    server.send(b"{not json!!}")
    server.send(b'{"jsonrpc": "2.0", "id": "x"}')  # valid JSON, not a message
    server.send(b"[1, 2, 3]")
    assert_still_answers(server, ws)


def test_invalid_params_get_an_error_response(server: RawServer, ws):
    for method, params in [
        ("textDocument/hover", {"textDocument": {"uri": 42}, "position": "nowhere"}),
        ("textDocument/codeAction", {"textDocument": {"uri": uri(ws.net)}}),
        ("textDocument/codeLens", {"textDocument": None}),
        ("workspace/executeCommand", {"command": 7, "arguments": "no"}),
    ]:
        reply = server.call(method, params)
        assert "error" in reply, f"{method} with bad params got {reply}"
    assert_still_answers(server, ws)


def test_unknown_method_is_method_not_found(server: RawServer, ws):
    reply = server.call("onnxlens/noSuchMethod", {})
    assert reply.get("error", {}).get("code") == -32601, reply
    assert_still_answers(server, ws)


def test_out_of_range_positions_get_a_response(server: RawServer, ws):
    far = {"line": 10**6, "character": 10**6}
    for method, params in [
        ("textDocument/hover", {"textDocument": {"uri": uri(ws.net)}, "position": far}),
        ("textDocument/codeAction", {"textDocument": {"uri": uri(ws.net)},
                                     "range": {"start": far, "end": far},
                                     "context": {"diagnostics": []}}),
        ("textDocument/hover", {"textDocument": {"uri": "file:///nonexistent/dir/x.py"},
                                "position": {"line": 0, "character": 0}}),
        ("textDocument/codeLens", {"textDocument": {"uri": "file:///nonexistent/dir/x.py"}}),
        ("textDocument/hover", {"textDocument": {"uri": uri(ws.net)},
                                "position": {"line": -5, "character": -1}}),
    ]:
        reply = server.call(method, params)  # an answer, error or empty, but an answer
        assert "result" in reply or "error" in reply, reply
    assert_still_answers(server, ws)


def test_unknown_command_is_an_error(server: RawServer, ws):
    reply = server.call("workspace/executeCommand",
                        {"command": "onnxlens.noSuchCommand", "arguments": []})
    assert "error" in reply, reply
    assert_still_answers(server, ws)


def test_commands_cannot_reach_outside_the_workspace(server: RawServer, ws):
    evil = ws.scratch / "evil.py"
    hostile = [
        str(evil), f"{evil}:build_model", uri(evil), "../scratch/evil.py:build_model",
        str(ws.scratch / "secret.md"), "/etc/passwd", "../../../../../../etc/passwd",
        {"uri": "file:///etc/passwd"}, {"target": "../scratch/evil.py"},
        {"path": str(ws.scratch / "secret.md")}, "no-such-target",
        str(ws.out / ".." / ".." / "scratch" / "secret.md"),  # escapes the output dir
    ]
    before = len(server.received)
    for command in COMMANDS:
        for argument in hostile:
            reply = server.call("workspace/executeCommand",
                                {"command": command, "arguments": [argument]})
            assert "error" in reply, f"{command}({argument!r}) was accepted: {reply}"
    time.sleep(2)  # anything the commands started in the background has had time to happen
    shown = [m for m in server.received[before:] if m.get("method") == "window/showDocument"]
    outside = [m["params"]["uri"] for m in shown
               if not uri_path(m["params"]["uri"]).is_relative_to(ws.root)]
    assert not outside, f"the server asked the editor to open files outside the workspace: {outside}"
    assert not (ws.scratch / "PWNED-outside").exists(), (ws.scratch / "PWNED-outside").read_text()
    assert_still_answers(server, ws)


def test_saving_files_no_target_names_runs_nothing(server: RawServer, ws):
    server.open_and_save(ws.scratch / "evil.py")  # outside the workspace
    server.open_and_save(ws.root / "models" / "stray.py")  # inside, but in no target's closure
    # a real save afterwards: once it is exported, the two saves above have been handled
    version = ws.next_version()
    write(ws.net, net_source(version))
    server.notify("textDocument/didSave", {"textDocument": {"uri": uri(ws.net)}})
    server.wait_until(lambda: exported(ws.onnx, version), "the normal save's export")
    time.sleep(2)
    assert not (ws.scratch / "PWNED-outside").exists(), (ws.scratch / "PWNED-outside").read_text()


def test_no_network_socket_anywhere_in_the_server_tree(server: RawServer, ws):
    """stdio only: neither the server nor the worker nor a job opens an internet socket, let
    alone listens on one."""
    sockets = []
    for pid, _ in tree(server.proc.pid):
        try:
            sockets += [(pid, c.status, c.laddr) for c in
                        psutil.Process(pid).net_connections(kind="inet")]
        except psutil.NoSuchProcess:
            pass
    assert not sockets, f"network sockets in the server's process tree: {sockets}"
    assert len(tree(server.proc.pid)) >= 2  # the worker was there to be checked


def test_zz_shutdown_leaves_no_process(server: RawServer, ws):
    procs = tree(server.proc.pid)
    assert len(procs) >= 2, "expected the server and its worker"
    assert server.shutdown() == 0
    left = wait_gone(procs)
    assert not left, f"processes left after shutdown: {left}"
