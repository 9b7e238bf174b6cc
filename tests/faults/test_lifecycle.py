"""Fault matrix, client-lifecycle rows: when the client disconnects (closes the server's stdin)
or the editor process is killed outright, the server, its worker and the running export child
all exit within seconds, with no shutdown request.

Each test catches the server in the worst moment: an export child is running user code (it
sleeps), so there are three generations of processes to clean up.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.faults import (
    EXIT_WAIT,
    kill_tree,
    make_fault_workspace,
    net_source,
    start_stand_in_editor,
    tree,
    wait_for_pid,
    wait_gone,
)
from tests.support.lsp import RawServer
from tests.support.workspace import write

pytestmark = pytest.mark.slow  # the language server and the export worker as processes

SLOW = "open({pidfile!r}, 'w').write(str(os.getpid()))\ntime.sleep(120)"


def slow_workspace(base: Path):
    ws = make_fault_workspace(base)
    write(ws.net, net_source(2, factory=SLOW.format(pidfile=str(ws.pidfile))))
    return ws


@contextlib.contextmanager
def server_mid_export(tmp_path: Path) -> Iterator[tuple[RawServer, set]]:
    """A server whose export child is running the slow model, and the server's process tree;
    afterwards whatever is left of them is killed (the orphans too, if an assertion failed)."""
    ws = slow_workspace(tmp_path)
    server = RawServer(ws.root)
    procs: set = set()
    try:
        server.initialize()
        server.open_and_save(ws.net)
        child = wait_for_pid(ws.pidfile)
        procs = tree(server.proc.pid)
        assert child in {pid for pid, _ in procs}, "the export child is not in the server's tree"
        yield server, procs
    finally:
        kill_tree(procs | tree(server.proc.pid))
        server.kill()


def assert_all_exit(procs: set, after: str) -> None:
    left = wait_gone(procs, EXIT_WAIT)
    assert not left, f"still running {EXIT_WAIT:.0f} s after {after}: {left}"


def test_client_closing_stdin_ends_server_worker_and_child(tmp_path):
    with server_mid_export(tmp_path) as (server, procs):
        assert len(procs) >= 3, "expected server, worker and export child"
        server.proc.stdin.close()  # the client goes away without shutdown/exit
        assert_all_exit(procs, "the client disconnected")


def test_editor_killed_ends_server_worker_and_child(tmp_path):
    ws = slow_workspace(tmp_path)
    editor = start_stand_in_editor(ws.root, ws.net)
    procs: set = set()
    try:
        server_pid = int(editor.stdout.readline())
        child = wait_for_pid(ws.pidfile)
        procs = tree(server_pid)
        assert child in {pid for pid, _ in procs}, "the export child is not in the server's tree"

        editor.kill()  # SIGKILL: the editor cannot say goodbye
        editor.wait()

        assert_all_exit(procs, "the editor was killed")
    finally:
        editor.kill()
        kill_tree(procs | (tree(server_pid) if "server_pid" in locals() else set()))


def test_client_gone_right_after_initialize(tmp_path):
    """The editor opens the folder and is closed at once: the worker the server started in the
    background must not outlive it."""
    ws = make_fault_workspace(tmp_path)
    server = RawServer(ws.root)
    procs: set = set()
    try:
        server.initialize()

        def with_worker() -> set | None:  # the server starts it in the background
            found = tree(server.proc.pid)
            return found if len(found) >= 2 else None
        procs = server.wait_until(with_worker, "the server to start its worker")  # and close at once
        server.proc.stdin.close()
        assert_all_exit(procs, "the client disconnected")
    finally:
        kill_tree(procs | tree(server.proc.pid))  # the orphans too, if an assertion failed
        server.kill()


def test_server_killed_outright_takes_worker_and_child_with_it(tmp_path):
    """Not a polite exit at all: the server is SIGKILLed mid-export (an editor killing its
    process group does this). The worker notices its pipe closing and the child its parent
    dying; nothing may keep running on its own."""
    with server_mid_export(tmp_path) as (server, procs):
        server.proc.kill()
        server.proc.wait()
        assert_all_exit(procs, "the server was killed")
