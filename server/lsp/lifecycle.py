"""initialize / initialized / shutdown.

`initialize` answers at once (no config reading, no worker): the editor waits on it. After
`initialized` the server finds the config of every workspace folder, starts watching the disk,
and starts the export service in the background, saying so ("onnxlens: warming up").
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import TYPE_CHECKING

from lsprotocol import types as lsp
from pygls.uris import to_fs_path

from onnxlens.server.exports import ExportService

from .documents import on_disk_change
from .progress import Progress
from .settings import parse_settings
from .watcher import DiskWatcher

if TYPE_CHECKING:
    from .server import OnnxlensServer


def register(server: OnnxlensServer) -> None:
    server.feature(lsp.INITIALIZE)(initialize)
    server.feature(lsp.INITIALIZED)(initialized)
    server.feature(lsp.SHUTDOWN)(shutdown)
    server.feature(lsp.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)(did_change_workspace_folders)


def initialize(ls: OnnxlensServer, params: lsp.InitializeParams) -> None:
    ls.settings, problems = parse_settings(params.initialization_options, ls.settings)
    logging.getLogger("onnxlens").setLevel(ls.settings.logging_level)
    for problem in problems:
        ls.log(logging.WARNING, problem)


def _folders(ls: OnnxlensServer) -> list[Path]:
    folders = [to_fs_path(f.uri) for f in ls.workspace.folders.values()]
    if not folders and ls.workspace.root_path:
        folders = [ls.workspace.root_path]
    return [Path(f) for f in folders if f]


async def initialized(ls: OnnxlensServer, params: lsp.InitializedParams) -> None:
    loop = asyncio.get_running_loop()
    ls.watcher = DiskWatcher(loop, lambda path: on_disk_change(ls, path), ignore_dir=ls.is_ignored_dir)
    ls.watcher.start()
    for folder in _folders(ls):
        ls.add_folder(folder, export=False)
    # Cached results need no worker: show them before it has warmed up; misses wait for it.
    ls.service = ExportService(jobs=ls.settings.jobs)
    ls.export_everything(reason="workspace opened")
    await start_service(ls)


async def start_service(ls: OnnxlensServer) -> None:
    """Start the export service; exports wait on `service_ready`, other requests do not."""
    ls.service_ready.clear()
    progress = await Progress.begin(ls, "warming up", cancellable=False)
    ls.log(logging.INFO, "onnxlens: warming up the export worker")
    if ls.service is None:
        ls.service = ExportService(jobs=ls.settings.jobs)
    try:
        await ls.service.start()
    except Exception as error:  # noqa: BLE001 - report it; exports will fail visibly as diagnostics
        ls.log(logging.ERROR, f"onnxlens: the export worker did not start: {error}")
        ls.window_show_message(lsp.ShowMessageParams(
            type=lsp.MessageType.Error, message=f"onnxlens: the export worker did not start: {error}"))
    else:
        ls.log(logging.INFO, "onnxlens: export worker ready")
    ls.service_ready.set()
    progress.end("ready")


async def did_change_workspace_folders(ls: OnnxlensServer, params: lsp.DidChangeWorkspaceFoldersParams) -> None:
    for folder in params.event.removed:
        path = to_fs_path(folder.uri)
        for project in [p for p in ls.projects.values() if path and p.contains(str(Path(path).resolve()))]:
            ls.remove_project(project)
    for folder in params.event.added:
        if path := to_fs_path(folder.uri):
            ls.add_folder(Path(path), export=True)


async def shutdown(ls: OnnxlensServer, params: None) -> None:
    await ls.scheduler.cancel_all()
    if ls.service is not None:
        await ls.service.shutdown()
    if ls.watcher is not None:
        ls.watcher.stop()
