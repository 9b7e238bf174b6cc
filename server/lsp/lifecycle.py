"""initialize / initialized / shutdown.

`initialize` answers at once (no config reading, no worker): the editor waits on it. After
`initialized` the server finds the config of every workspace folder, starts watching the disk,
and starts the export service in the background, saying so ("onnxlens: warming up").
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from pathlib import Path
from typing import TYPE_CHECKING

from lsprotocol import types as lsp
from pygls.uris import to_fs_path

from onnxlens.server.config import find_config
from onnxlens.server.exports import ExportService

from .progress import Progress
from .project import Project, norm
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
    from .documents import on_disk_change  # documents imports server helpers; avoid a cycle

    ls.watcher = DiskWatcher(loop, lambda path: on_disk_change(ls, path), ignore_dir=_ignored_dir(ls))
    ls.watcher.start()
    for folder in _folders(ls):
        add_folder(ls, folder, export=False)
    await start_service(ls)
    export_everything(ls, reason="workspace opened")


def _ignored_dir(ls: OnnxlensServer):
    def ignored(path: str) -> bool:
        path = norm(path)
        return any(p.contains(path) and p.is_ignored_dir(path) for p in ls.projects.values())
    return ignored


def add_folder(ls: OnnxlensServer, folder: Path, *, export: bool) -> Project | None:
    config = find_config(folder)
    if config is None:
        ls.log(logging.INFO, f"onnxlens: no [tool.onnxlens] configuration for {folder}")
        return None
    project = ls.add_project(config)
    if project is not None and export:
        export_project(ls, project, reason="folder added")
    return project


async def start_service(ls: OnnxlensServer) -> None:
    """Start the export service; exports wait on `service_ready`, other requests do not."""
    ls.service_ready.clear()
    progress = await Progress.begin(ls, "warming up", cancellable=False)
    ls.log(logging.INFO, "onnxlens: warming up the export worker")
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


def export_everything(ls: OnnxlensServer, *, reason: str) -> None:
    for project in list(ls.projects.values()):
        export_project(ls, project, reason=reason)


def export_project(ls: OnnxlensServer, project: Project, *, reason: str) -> None:
    """Show cached results at once where the service has them; export the rest."""
    asyncio.ensure_future(_export_project(ls, project, reason))


async def _export_project(ls: OnnxlensServer, project: Project, reason: str) -> None:
    lookup = getattr(ls.service, "cached", None)
    for name, state in list(project.targets.items()):
        result = None
        if lookup is not None:
            try:
                result = lookup(state.spec)
                if inspect.isawaitable(result):
                    result = await result
            except Exception as error:  # noqa: BLE001 - a cache problem only costs an export
                ls.log(logging.WARNING, f"onnxlens: cache lookup for {name} failed: {error}")
                result = None
        if result is not None:
            ls.scheduler.show_cached(project, name, result)
        else:
            ls.scheduler.request(project, name, reason, delay_s=0)


async def did_change_workspace_folders(ls: OnnxlensServer, params: lsp.DidChangeWorkspaceFoldersParams) -> None:
    for folder in params.event.removed:
        path = to_fs_path(folder.uri)
        for project in [p for p in ls.projects.values() if path and p.contains(str(Path(path).resolve()))]:
            remove_project(ls, project)
    for folder in params.event.added:
        if path := to_fs_path(folder.uri):
            add_folder(ls, Path(path), export=True)


def remove_project(ls: OnnxlensServer, project: Project) -> None:
    from .diagnostics import CONFIG_OWNER

    for name in project.targets:
        ls.scheduler.cancel(project, name)
        ls.clear_target(project, name)
    ls.publish(ls.diagnostics.replace((project.key, CONFIG_OWNER), []))
    ls.projects.pop(project.key, None)


async def shutdown(ls: OnnxlensServer, params: None) -> None:
    await ls.scheduler.cancel_all()
    if ls.service is not None:
        await ls.service.shutdown()
    if ls.watcher is not None:
        ls.watcher.stop()
