"""Fault matrix, client-lifecycle rows: when the client disconnects (closes the server's stdin)
or the editor process is killed outright, the server, its worker and the running export child
all exit within seconds, with no shutdown request.

Each test catches the server in the worst moment: an export child is running user code (it
sleeps), so there are three generations of processes to clean up.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

from faultkit import (
    EXIT_WAIT,
    RawServer,
    kill_tree,
    make_fault_workspace,
    net_source,
    read_pid,
    tree,
    wait_gone,
    write,
)

SLOW = "open({pidfile!r}, 'w').write(str(os.getpid()))\ntime.sleep(120)"


def wait_for_pid(path: Path, timeout: float = 90.0) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pid = read_pid(path)
        if pid:
            return pid
        time.sleep(0.1)
    raise AssertionError("the export job never started")


def start_export(server: RawServer, ws) -> tuple[int, set]:
    """Open the workspace and save the slow model; once its export child runs, return the
    child's pid and the server's process tree."""
    server.initialize()
    server.open_and_save(ws.net)
    child = wait_for_pid(ws.pidfile)
    return child, tree(server.proc.pid)


def slow_workspace(base: Path):
    ws = make_fault_workspace(base)
    write(ws.net, net_source(2, factory=SLOW.format(pidfile=str(ws.pidfile))))
    return ws


def test_client_closing_stdin_ends_server_worker_and_child(tmp_path):
    ws = slow_workspace(tmp_path)
    server = RawServer(ws.root)
    procs: set = set()
    try:
        child, procs = start_export(server, ws)
        assert child in {pid for pid, _ in procs}, "the export child is not in the server's tree"
        assert len(procs) >= 3, "expected server, worker and export child"

        server.proc.stdin.close()  # the client goes away without shutdown/exit

        left = wait_gone(procs, EXIT_WAIT)
        assert not left, f"still running {EXIT_WAIT:.0f} s after the client disconnected: {left}"
    finally:
        kill_tree(procs | tree(server.proc.pid))  # the orphans too, if an assertion failed
        server.kill()


EDITOR = textwrap.dedent('''
    """A stand-in editor: starts the server, opens the workspace, saves the model, then waits
    to be killed. It holds the only write end of the server's stdin."""
    import sys, time
    from pathlib import Path
    sys.path[:0] = [{kit_dir!r}, {tests_dir!r}]  # faultkit, and the helpers it shares with tests/lsp
    from faultkit import RawServer
    server = RawServer(Path({root!r}))
    server.initialize()
    server.open_and_save(Path({net!r}))
    print(server.proc.pid, flush=True)
    time.sleep(600)
''')


def test_editor_killed_ends_server_worker_and_child(tmp_path):
    ws = slow_workspace(tmp_path)
    script = tmp_path / "editor.py"
    script.write_text(EDITOR.format(kit_dir=str(Path(__file__).parent), tests_dir=str(Path(__file__).parents[1]),
                                    root=str(ws.root),
                                    net=str(ws.net)))
    editor = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    procs: set = set()
    try:
        server_pid = int(editor.stdout.readline())
        child = wait_for_pid(ws.pidfile)
        procs = tree(server_pid)
        assert child in {pid for pid, _ in procs}, "the export child is not in the server's tree"

        editor.kill()  # SIGKILL: the editor cannot say goodbye
        editor.wait()

        left = wait_gone(procs, EXIT_WAIT)
        assert not left, f"still running {EXIT_WAIT:.0f} s after the editor was killed: {left}"
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
        time.sleep(2)  # the server starts its worker in the background
        procs = tree(server.proc.pid)
        server.proc.stdin.close()
        left = wait_gone(procs, EXIT_WAIT)
        assert not left, f"still running {EXIT_WAIT:.0f} s after the client disconnected: {left}"
    finally:
        kill_tree(procs | tree(server.proc.pid))  # the orphans too, if an assertion failed
        server.kill()


def test_server_killed_outright_takes_worker_and_child_with_it(tmp_path):
    """Not a polite exit at all: the server is SIGKILLed mid-export (an editor killing its
    process group does this). The worker notices its pipe closing and the child its parent
    dying; nothing may keep running on its own."""
    ws = slow_workspace(tmp_path)
    server = RawServer(ws.root)
    procs: set = set()
    try:
        child, procs = start_export(server, ws)
        assert child in {pid for pid, _ in procs}, "the export child is not in the server's tree"

        server.proc.kill()
        server.proc.wait()

        left = wait_gone(procs, EXIT_WAIT)
        assert not left, f"still running {EXIT_WAIT:.0f} s after the server was killed: {left}"
    finally:
        kill_tree(procs)  # the orphans, if the assertion failed
        server.kill()
