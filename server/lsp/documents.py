"""What makes the server export: saves in the editor, changes on disk, config edits, settings.

A save or disk change of a file re-exports the targets whose closure contains it; a file no
target depends on exports nothing. The config file reloads the configuration and re-exports the
targets whose definition changed.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types as lsp

from onnxlens.server.config import CONFIG_NAMES, find_config

from .project import Project, norm
from .settings import parse_settings
from .uris import path_of

if TYPE_CHECKING:
    from .server import OnnxlensServer


def register(server: OnnxlensServer) -> None:
    server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)(did_open)
    server.feature(lsp.TEXT_DOCUMENT_DID_SAVE, lsp.SaveOptions(include_text=False))(did_save)
    server.feature(lsp.WORKSPACE_DID_CHANGE_CONFIGURATION)(did_change_configuration)


def did_open(ls: OnnxlensServer, params: lsp.DidOpenTextDocumentParams) -> None:
    """A file outside every known project (an editor opened without a folder): find its config."""
    path = path_of(params.text_document.uri)
    if ls.projects_containing(path) or not path.endswith((".py", ".toml")):
        return
    config = find_config(Path(path).parent)
    if config is not None and (project := ls.add_project(config)) is not None and ls.service is not None:
        ls.export_project(project, reason="file opened")


def did_save(ls: OnnxlensServer, params: lsp.DidSaveTextDocumentParams) -> None:
    """The editor's save and watchdog's event for it race; whichever comes second finds the
    file as already seen and does nothing (a started job is not cancelled for the same content).
    A save without changes exports nothing either: the result would be the cached one."""
    path = path_of(params.text_document.uri)
    if ls.signature_changed(path):
        file_changed(ls, path, reason=f"saved {Path(path).name}")


def on_disk_change(ls: OnnxlensServer, path: str) -> None:
    """A watchdog event (on the event loop): act only if the file really differs from last time."""
    path = norm(path)
    projects = [p for p in ls.projects_containing(path) if not p.is_ignored(path)]
    if not projects and Path(path).name in CONFIG_NAMES:
        _maybe_new_config(ls, path)
        return
    if not projects:
        return
    before = ls.signatures.get(path, _UNSEEN)
    if not ls.signature_changed(path):
        return
    if path.endswith(".py") and (before is _UNSEEN or (before is None) != (ls.signatures[path] is None)):
        # A Python file appeared or vanished (deleted, renamed, restored): the config may name
        # it. Re-validating the config turns a missing model file into a `config` diagnostic on
        # the line naming it and clears the target's old diagnostics; its return re-adds the
        # target. Reloading an unchanged config exports nothing.
        for project in projects:
            _reload_config_soon(ls, project)
    file_changed(ls, path, reason=f"{Path(path).name} changed on disk")


_UNSEEN = object()  # no signature recorded for the path yet


def file_changed(ls: OnnxlensServer, path: str, *, reason: str) -> None:
    for project in list(ls.projects.values()):
        if path == str(project.config_file):
            _reload_config_soon(ls, project)
            continue
        if not ls.settings.export_on_save or project.is_ignored(path):
            continue
        for target in project.targets_depending_on(path):
            ls.scheduler.request(project, target, reason)


def _reload_config_soon(ls: OnnxlensServer, project: Project) -> None:
    """Reload after the debounce time, like exports: a watchdog event can catch the file
    half-written (truncated), and reading that would drop every target for a moment."""
    if (timer := ls.config_reloads.pop(project.key, None)) is not None:
        timer.cancel()
    loop = asyncio.get_running_loop()
    ls.config_reloads[project.key] = loop.call_later(ls.settings.debounce_ms / 1000, _reload_now, ls, project)


def _reload_now(ls: OnnxlensServer, project: Project) -> None:
    ls.config_reloads.pop(project.key, None)
    if ls.projects.get(project.key) is project:  # not removed meanwhile
        config_changed(ls, project)


def config_changed(ls: OnnxlensServer, project: Project) -> None:
    if not project.config_file.exists():
        ls.log(logging.INFO, f"onnxlens: {project.config_file} was removed")
        ls.remove_project(project)
        return
    changed, removed = project.load()
    ls.publish_config(project)
    for name in removed:
        ls.scheduler.cancel(project, name)
        ls.clear_target(project, name)
    if ls.settings.export_on_save:
        for name in changed:
            ls.scheduler.request(project, name, "configuration changed")
    ls.refresh_code_lens()


def _maybe_new_config(ls: OnnxlensServer, path: str) -> None:
    """A config file appeared in a workspace folder that had none."""
    parent = str(Path(path).parent)
    if parent not in {path_of(f.uri) for f in ls.workspace.folders.values()}:
        return
    config = find_config(Path(parent))
    if config is None or norm(config.parent) != parent:
        return
    project = ls.add_project(config)
    if project is not None:
        ls.export_project(project, reason="configuration added")


def did_change_configuration(ls: OnnxlensServer, params: lsp.DidChangeConfigurationParams) -> None:
    """Settings pushed with the notification, or, when it carries none (the pull model), asked
    for with workspace/configuration (section "onnxlens").

    Pushed settings apply before the next message is handled (a synchronous handler): a save
    sent right after "exportOnSave: false" must not export."""
    workspace = ls.client_capabilities.workspace
    if not params.settings and workspace and workspace.configuration:
        asyncio.ensure_future(_pull_settings(ls))
    else:
        _apply_settings(ls, params.settings)


async def _pull_settings(ls: OnnxlensServer) -> None:
    try:
        [raw] = await ls.workspace_configuration_async(lsp.ConfigurationParams(
            items=[lsp.ConfigurationItem(section="onnxlens")]))
    except Exception as error:  # noqa: BLE001 - keep the current settings
        ls.log(logging.WARNING, f"onnxlens: could not read the settings: {error}")
        return
    _apply_settings(ls, raw)


def _apply_settings(ls: OnnxlensServer, raw: Any) -> None:
    before = ls.settings
    ls.settings, problems = parse_settings(raw, before)
    logging.getLogger("onnxlens").setLevel(ls.settings.logging_level)
    for problem in problems:
        ls.log(logging.WARNING, problem)
    if ls.settings != before:
        ls.log(logging.INFO, f"onnxlens: settings now {ls.settings.describe()}")
    if ls.settings.jobs != before.jobs:
        ls.log(logging.INFO, "onnxlens: `jobs` takes effect at the next worker restart (onnxlens.restartWorker)")
    if ls.settings.verify != before.verify:
        ls.export_everything(reason="verify setting changed")
