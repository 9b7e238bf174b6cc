"""What makes the server export: a file saved in the editor or changed on disk (watchdog), edits
of the config file, and packages installed or removed.

A save or disk change of a file re-exports the targets whose closure contains it (the files
its last export imported or opened, and where the modules it did not find would be); a file no
target depends on exports nothing. The config file reloads the configuration and re-exports the
targets whose definition changed. The editor's save and watchdog's event for it race; whichever
comes second finds the file as already seen and does nothing.

A change in a directory the export worker's interpreter imports from (a `pip install`, an
upgrade) waits until those directories have been quiet for INSTALL_QUIET_S (an install writes
for seconds); then, if the installed packages' fingerprint (server/service/installed.py) differs from
the one last acted on, every target is looked up again: each key changed with it, so every
target exports (on a new worker: the service retires the one that preloaded the old versions).
"""

from __future__ import annotations

import asyncio
import logging
import os
from pathlib import Path

from onnxlens.server.config import CONFIG_NAMES, find_config
from onnxlens.server.lsp.exporting.project import Project, norm
from onnxlens.server.lsp.exporting.watcher import DiskWatcher
from onnxlens.server.lsp.session import Session

_UNSEEN = object()  # no signature recorded for the path yet
INSTALL_QUIET_S = 2.0  # an install's directories quiet this long: it is over


class Triggers:
    def __init__(self, session: Session) -> None:
        self._session = session
        # path -> (mtime_ns, size) when we last acted on it: a watchdog event for a file the
        # editor just saved (didSave already handled it) must not export twice.
        self._signatures: dict[str, tuple[int, int] | None] = {}
        self._reloads: dict[str, asyncio.TimerHandle] = {}  # project key -> pending config reload
        self._installed_seen: str | None = None  # the installed packages' fingerprint last acted on
        self._installed_settling: asyncio.TimerHandle | None = None

    def start_watching(self) -> None:
        """Watch the disk (on the running event loop); projects added from now on are watched."""
        session = self._session
        session.watcher = DiskWatcher(asyncio.get_running_loop(), self.disk_changed,
                                      ignore_dir=session.is_ignored_dir)
        session.watcher.start()

    async def watch_installed(self) -> None:
        """Watch the directories the export service's interpreter imports from (once the service
        exists; its import path is asked in a subprocess: off the event loop)."""
        session = self._session
        service = session.service.current
        if session.watcher is None or service is None:
            return
        installed = service.cache.installed
        directories = await asyncio.to_thread(installed.directories)
        self._installed_seen = installed.fingerprint()  # the listings were just read: a few stat calls
        await asyncio.to_thread(session.watcher.watch_installed, directories, self._installed_changed)

    def _installed_changed(self) -> None:
        if self._installed_settling is not None:
            self._installed_settling.cancel()
        self._installed_settling = asyncio.get_running_loop().call_later(INSTALL_QUIET_S, self._installed_settled)

    def _installed_settled(self) -> None:
        self._installed_settling = None
        session = self._session
        service = session.service.current
        if service is None:
            return
        fingerprint = service.cache.installed.fingerprint()
        if fingerprint == self._installed_seen:
            return  # an entry no import sees (a log file, `__pycache__`): nothing to export
        self._installed_seen = fingerprint
        if session.settings.export_on_save:
            session.log(logging.INFO, "onnxlens: the installed packages changed; exporting the targets again")
            session.export_everything(reason="installed packages changed")

    def saved(self, path: str) -> None:
        """The editor saved `path`. A save without changes exports nothing: the result would be
        the cached one (and a started job is not cancelled for the same content)."""
        if Path(path).name in CONFIG_NAMES and not self._session.projects_containing(norm(path)):
            # A config saved where there was none (the "Add as an ONNX export target" fix, a
            # pyproject.toml given a [tool.onnxlens] table): its folder gets a project.
            self._maybe_new_config(norm(path))
            return
        reason = f"saved {Path(path).name}"
        if self._act_on_change(path, self._session.projects_containing(path), reason=reason, explicit=True):
            return
        # The file-system event for this save came first and is waiting for the debounce.
        for project, target in self._exported_on_change(path):
            self._session.scheduler.promote(project, target, reason)

    def disk_changed(self, path: str) -> None:
        """A watchdog event (on the event loop): act only if the file really differs from last time."""
        session = self._session
        path = norm(path)
        projects = [p for p in session.projects_containing(path) if not p.is_ignored(path)]
        if not projects and Path(path).name in CONFIG_NAMES:
            self._maybe_new_config(path)
            return
        if not projects:
            return
        self._act_on_change(path, projects, reason=f"{Path(path).name} changed on disk")

    def file_changed(self, path: str, *, reason: str, explicit: bool = False) -> None:
        """`explicit`: the editor saved it (the user waits: no debounce for the first save);
        otherwise a disk event, debounced (git checkouts and formatters come in bursts)."""
        for project in list(self._session.projects.values()):
            if path == str(project.config_file):
                self._reload_config_soon(project)
        for project, target in self._exported_on_change(path):
            self._session.scheduler.request(project, target, reason, automatic=True, leading=explicit)

    def _exported_on_change(self, path: str) -> list[tuple[Project, str]]:
        """(project, target) that a change of `path` re-exports: the targets whose closure holds
        it, while `exportOnSave` is on."""
        session = self._session
        if not session.settings.export_on_save:
            return []
        return [(project, target) for project in list(session.projects.values())
                if path != str(project.config_file) and not project.is_ignored(path)
                for target in project.targets_depending_on(path)]

    def _act_on_change(self, path: str, projects: list[Project], *, reason: str, explicit: bool = False) -> bool:
        """Act on `path` if it differs from when we last acted on it (whichever of the editor's
        save and watchdog's event comes first); False when it does not."""
        try:
            stat = os.stat(path)
            signature = (stat.st_mtime_ns, stat.st_size)
        except OSError:
            signature = None
        before = self._signatures.get(path, _UNSEEN)
        if before == signature:
            return False
        self._signatures[path] = signature
        if path.endswith(".py") and (before is _UNSEEN or (before is None) != (signature is None)):
            # A Python file appeared or vanished (deleted, renamed, restored): the config may name
            # it. Re-validating the config turns a missing model file into a `config` diagnostic on
            # the line naming it and clears the target's old diagnostics; its return re-adds the
            # target. Reloading an unchanged config exports nothing.
            for project in projects:
                self._reload_config_soon(project)
        self.file_changed(path, reason=reason, explicit=explicit)
        return True

    def _reload_config_soon(self, project: Project) -> None:
        """Reload after the debounce time, like exports: a watchdog event can catch the file
        half-written (truncated), and reading that would drop every target for a moment."""
        if (timer := self._reloads.pop(project.key, None)) is not None:
            timer.cancel()
        loop = asyncio.get_running_loop()
        self._reloads[project.key] = loop.call_later(self._session.settings.debounce_ms / 1000,
                                                     self._reload_now, project)

    def _reload_now(self, project: Project) -> None:
        self._reloads.pop(project.key, None)
        if self._session.projects.get(project.key) is project:  # not removed meanwhile
            self._config_changed(project)

    def _config_changed(self, project: Project) -> None:
        session = self._session
        if not project.config_file.exists():
            session.log(logging.INFO, f"onnxlens: {project.config_file} was removed")
            session.remove_project(project)
            return
        changed, removed = project.load()
        session.diagnostics.publish_config(project)
        for name in removed:
            session.forget_target(project, name)
        for name, state in project.targets.items():
            # A finding about a reference is shown on its value in the config: where that is now.
            if name not in changed and state.result and any(f.reference for f in state.result.findings):
                session.diagnostics.publish_target(project, name, announce=False)
        if session.settings.export_on_save:
            for name in changed:
                session.scheduler.request(project, name, "configuration changed", automatic=True)
        session.client.refresh_code_lens()
        if removed:
            session.client.refresh_inlay_hints()

    def _maybe_new_config(self, path: str) -> None:
        """A config file appeared, or a pyproject.toml gained [tool.onnxlens], in a workspace
        folder that had none (saved in the editor, or seen on disk: folders without a config
        are watched for it, watcher.py `watch_for_config`)."""
        session = self._session
        parent = str(Path(path).parent)
        if parent not in {norm(folder) for folder in session.client.folders()}:
            return
        config = find_config(Path(parent))
        if config is None or norm(config.parent) != parent:
            return
        session.add_project(config, export_reason="configuration added")
