"""Fault matrix, workspace-folder rows.

* The workspace folder is deleted and created again (a fresh clone, a restored copy) under the
  running server, whose working directory it was: the new folder is watched (a change on disk
  re-exports) and the export worker restarts (it starts in the filesystem root: from the
  deleted directory torch could not even be imported). Before the fix nothing was watched after
  the recreation and every worker restart failed. A change written right after the folder came
  back was missed once in CI, and here once in 4 runs with three processes spinning on the two
  cores (0 in 14 after the fix): the folder's project was exported (a cached result, the old
  text) before its directories were watched, and the write fell in between. A project added
  mid-session is now exported once it is watched (server/lsp/session.py `add_project`).
* The workspace folder is `/`: the search for models to offer (server/fixits/workspace_scan.py) is bounded
  and runs in a helper process; the server answers meanwhile, the search ends within its bound
  and its helper ends with the server. Measured here (what / holds varies): the search stopped
  at 20,000 directories after 5.0 s with 265 models found, the server and its helpers used 2.9
  CPU-seconds, and 44 hovers meanwhile took at most 29 ms; when /tmp held thousands of test
  workspaces it stopped at 5,000 Python files (42 s, 27 CPU-seconds, before the bound on files
  with models, which now ends the planning of their edits early too). Before the fix it
  scanned the whole disk (111 s, 120 CPU-seconds).
"""

from __future__ import annotations

import asyncio
import shutil
import time
from pathlib import Path

import psutil
import pytest
from lsprotocol import types as lsp

from tests.support.faults import Session, exported, make_fault_workspace, net_source, wait_gone
from tests.support.workspace import write

from onnxlens.server.fixits.workspace_scan import MAX_SECONDS

pytestmark = pytest.mark.slow  # the language server and the export worker as processes


@pytest.mark.asyncio
async def test_a_recreated_workspace_folder_is_watched_and_the_worker_restarts(tmp_path):
    ws = make_fault_workspace(tmp_path)
    backup = ws.scratch / "copy"
    session = await Session.launch(ws.root)  # its working directory is the folder
    try:
        await session.wait_for(lambda: exported(ws.onnx, 1), "the first export")
        await session.wait_idle()
        shutil.copytree(ws.root, backup)
        shutil.rmtree(ws.root)
        await session.wait_for(lambda: any(f"{ws.config} was removed" in m.message for m in session.log_messages),
                               "the server noticing the deletion")
        shutil.copytree(backup, ws.root)
        await session.wait_for(lambda: any("was created again" in m.message for m in session.log_messages),
                               "the server noticing the folder again")

        version = ws.next_version()
        write(ws.net, net_source(version))  # on disk only: no didSave, the watcher must see it
        await session.wait_for(lambda: exported(ws.onnx, version), "the export of a change on disk after the recreation")

        await session.workspace_execute_command_async(lsp.ExecuteCommandParams(command="onnxlens.restartWorker"))
        version = ws.next_version()
        write(ws.net, net_source(version))
        await session.wait_for(lambda: exported(ws.onnx, version), "an export on the restarted worker")
        assert not session.all_diagnostics(), session.describe()
    finally:
        await session.close()


def _cpu_seconds(processes: list[psutil.Process]) -> float:
    """User and system CPU seconds of `processes`, their reaped children's included. A process
    that ended between the listing and the reading (the worker forks and ends job processes) is
    left out: the bound is an upper one."""
    total = 0.0
    for process in processes:
        try:
            total += sum(process.cpu_times()[:4])
        except psutil.NoSuchProcess:
            pass
    return total


@pytest.mark.asyncio
async def test_the_filesystem_root_as_workspace_folder_is_searched_within_bounds(tmp_path):
    session = await Session.launch(Path("/"))
    try:
        started = time.monotonic()
        server = psutil.Process(session.server_pid)
        hovers = []
        while not (searched := [m.message for m in session.log_messages if "searched / for PyTorch models" in m.message]):
            before = time.monotonic()
            await session.ping(Path("/etc/hostname"))
            hovers.append(time.monotonic() - before)
            assert time.monotonic() - started < MAX_SECONDS + 60, "the search of / did not end within its bound"
            await asyncio.sleep(0.1)
        took = time.monotonic() - started
        cpu = _cpu_seconds([server, *server.children(recursive=True)])
        print(f"/: {searched[0]!r} after {took:.1f} s, {cpu:.1f} CPU-seconds, {len(hovers)} hovers, "
              f"slowest {max(hovers) * 1000:.0f} ms")
        assert took < MAX_SECONDS + 60 and cpu < MAX_SECONDS + 60
        # Answered while the search ran: a search holding the event loop would let the first
        # hover through only when it ended, and the loop above would stop at one.
        assert len(hovers) >= 5, f"{len(hovers)} hovers answered during the search: the server stopped answering"
        procs = session.track()
    finally:
        await session.close()
    assert not await asyncio.to_thread(wait_gone, procs), "the search's helper outlived the server"
