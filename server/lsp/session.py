"""What the features share: the client, the settings, the projects (one per config file), the
published diagnostics, the export service and the scheduler, and the few things several features
do with them (track a config, export a project, start or stop the worker).

Features get the session (and, where they need it, the triggers); they never import each other
or the server. The scheduler reports to the session through three callbacks: a result
(recorded, published, logged), findings a running export sent ahead of its result (published,
labelled; withdrawn if it is cancelled) and an export's status (lenses refreshed,
`onnxlens/exportStatus` sent).
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

from lsprotocol import types as lsp

from onnxlens.exporter.events import FindingsEvent
from onnxlens.exporter.types import ExportResult
from onnxlens.server.config import find_config
from onnxlens.server.lsp.client import Client
from onnxlens.server.lsp.diagnostics import Diagnostics, SourceLines
from onnxlens.server.lsp.exported_text import ExportedText
from onnxlens.server.lsp.exporting.project import Project, norm
from onnxlens.server.lsp.exporting.scheduler import ExportScheduler
from onnxlens.server.lsp.exporting.service import ServiceSlot
from onnxlens.server.lsp.exporting.status import ExportStatus
from onnxlens.server.lsp.exporting.watcher import DiskWatcher
from onnxlens.server.lsp.settings import Settings, parse_settings
from onnxlens.server.lsp.uris import uri_of
from onnxlens.server.offload import Offload


class Session:
    def __init__(self, client: Client) -> None:
        self.client = client
        self.settings = Settings()
        self.projects: dict[str, Project] = {}  # config file -> project
        self.lines = SourceLines()
        self.diagnostics = Diagnostics(client, self.lines)
        self.exported_text = ExportedText(_read_text, self.current_lines)
        self.service = ServiceSlot()
        self._adapter_report: asyncio.Task | None = None  # logs the worker's torch adapter once warm
        self.scheduler = ExportScheduler(settings=lambda: self.settings, service=self.service,
                                         begin_progress=client.begin_progress,
                                         on_result=self._export_finished, on_status=self._export_status,
                                         on_findings=self._export_reported)
        self.watcher: DiskWatcher | None = None  # set by Triggers.start_watching
        self.offload = Offload()  # parses of big buffers, off the event loop

    def log(self, level: int, message: str) -> None:
        self.client.log(level, message)

    # --- settings ------------------------------------------------------------------------
    def apply_settings(self, raw: Any) -> Settings:
        """Apply the client's settings over the current ones (a bad value keeps the old one and
        is logged); returns the settings before."""
        before = self.settings
        self.settings, problems = parse_settings(raw, before)
        self.client.log_level = self.settings.logging_level
        logging.getLogger("onnxlens").setLevel(self.settings.logging_level)
        for problem in problems:
            self.log(logging.WARNING, problem)
        return before

    # --- projects ------------------------------------------------------------------------
    def add_project(self, config_file: Path, *, export_reason: str | None = None) -> Project | None:
        """Start tracking a config file; returns the new project, None if it was known already.

        With `export_reason`, the project is exported once its directories are watched, not
        before: a file written in between (a folder being copied or cloned in) is then either
        read by that export or seen by the watcher. Exporting at once could read the file
        before the write and watch only after it, missing the change until the next one."""
        project = Project(config_file)
        if project.key in self.projects:
            return None
        self.projects[project.key] = project
        project.load()
        self.diagnostics.publish_config(project)
        self.log(logging.INFO, f"onnxlens: {project.config_file} with targets "
                               f"{', '.join(project.targets) or '(none)'}")
        if self.watcher is not None:
            # inotify adds one watch per directory, walking the tree: not on the event loop.
            watched = asyncio.get_running_loop().run_in_executor(None, self.watcher.watch_root, str(project.root))
            if export_reason is not None:
                watched.add_done_callback(lambda _: self._export_if_tracked(project, export_reason))
        elif export_reason is not None:
            self.export_project(project, reason=export_reason)
        return project

    def _export_if_tracked(self, project: Project, reason: str) -> None:
        if self.projects.get(project.key) is project:  # not removed while its tree was walked
            self.export_project(project, reason=reason)

    def add_folder(self, folder: Path, *, export: bool) -> Project | None:
        """A workspace folder: track the config that governs it, if there is one, and notice
        the folder being created again after it was deleted."""
        if self.watcher is not None:
            self.watcher.watch_folder(norm(folder), self._folder_appeared)
        config = find_config(folder)
        if config is None:
            self.log(logging.INFO, f"onnxlens: no [tool.onnxlens] configuration for {folder}")
            if self.watcher is not None:  # one non-recursive watch: cheap, and not on a big tree
                self.watcher.watch_for_config(norm(folder))
            return None
        return self.add_project(config, export_reason="folder added" if export else None)

    def remove_folder(self, folder: Path) -> None:
        """A workspace folder the client closed: the projects inside it go."""
        path = norm(folder)
        if self.watcher is not None:
            self.watcher.unwatch_folder(path)
        for project in [p for p in self.projects.values() if p.contains(path)]:
            self.remove_project(project)

    def _folder_appeared(self, folder: str) -> None:
        """A workspace folder was deleted and created again (a fresh clone, a restored copy):
        its watches died with it, and its projects are found again as when it was opened
        (a config that is not there yet is watched for)."""
        self.log(logging.INFO, f"onnxlens: {folder} was created again; looking for its configuration")
        for project in [p for p in self.projects.values() if Path(p.root).is_relative_to(folder)]:
            self.remove_project(project)
        if self.watcher is not None:
            self.watcher.forget(folder)
        self.add_folder(Path(folder), export=True)

    def remove_project(self, project: Project) -> None:
        for name in project.targets:
            self.forget_target(project, name)
        self.diagnostics.clear_config(project)
        self.projects.pop(project.key, None)

    def forget_target(self, project: Project, name: str) -> None:
        """A target that went (its config, or its entry in it): its job, diagnostics and line data."""
        self.scheduler.cancel(project, name)
        self.diagnostics.clear_target(project, name)
        self.exported_text.forget((project.key, name))

    def export_everything(self, *, reason: str) -> None:
        for project in list(self.projects.values()):
            self.export_project(project, reason=reason)

    def export_project(self, project: Project, *, reason: str) -> None:
        """Show cached results at once where the service has them (no worker needed); export the rest."""
        for name, state in list(project.targets.items()):
            try:
                result = self.service.cached(self.settings.applied_to(state.spec))
            except Exception as error:  # noqa: BLE001 - a cache problem only costs an export
                self.log(logging.WARNING, f"onnxlens: cache lookup for {name} failed: {error}")
                result = None
            if result is not None:
                self.scheduler.show_cached(project, name, result)
            else:
                self.scheduler.request(project, name, reason, delay_s=0)

    def workspace_folders_containing(self, path: str | Path) -> list[Path]:
        """The client's workspace folders `path` lies in (symlinks resolved). The trust boundary:
        the server runs user code only for configured projects of these folders (README,
        "Security"), never for a file opened elsewhere."""
        resolved = Path(norm(path))
        return [folder for folder in (Path(norm(f)) for f in self.client.folders()) if resolved.is_relative_to(folder)]

    def projects_containing(self, path: str) -> list[Project]:
        return [p for p in self.projects.values() if p.contains(path)]

    def find_targets(self, name: str) -> list[tuple[Project, str]]:
        return [(p, name) for p in self.projects.values() if name in p.targets]

    def is_ignored_dir(self, path: str) -> bool:
        """A directory not worth watching: outputs, VCS data, environments, caches."""
        path = norm(path)
        return any(p.contains(path) and p.is_ignored_dir(path) for p in self.projects.values())

    # --- the export worker -----------------------------------------------------------------
    async def start_service(self) -> None:
        """Start the export worker; exports wait for it, other requests do not."""
        progress = await self.client.begin_progress("warming up", cancellable=False)
        try:
            self.log(logging.INFO, "onnxlens: " + "; ".join(await self.service.version_lines(jobs=self.settings.jobs)))
        except Exception as error:  # noqa: BLE001 - the versions are for the log; the worker still starts
            self.log(logging.WARNING, f"onnxlens: could not read the worker's versions: {error}")
        self.log(logging.INFO, "onnxlens: warming up the export worker")
        try:
            await self.service.start(jobs=self.settings.jobs)
        except Exception as error:  # noqa: BLE001 - report it; exports will fail visibly as diagnostics
            self.log(logging.ERROR, f"onnxlens: the export worker did not start: {error}")
            self.client.show_message(lsp.MessageType.Error, f"onnxlens: the export worker did not start: {error}")
        else:
            self.log(logging.INFO, "onnxlens: export worker ready")
            self._report_adapter()
        progress.end("ready")

    def _report_adapter(self) -> None:
        """Log the torch adapter the worker uses once it is warm (the zygote says which: an
        adapter that could not load on this torch falls back to the public path)."""
        async def report() -> None:
            adapter = await self.service.worker_adapter()
            if adapter.get("name"):
                self.log(logging.INFO, f"onnxlens: the export worker is warm; torch adapter {adapter['name']}")
            if adapter.get("fallback"):
                self.log(logging.WARNING, f"onnxlens: {adapter['fallback']}: exports take the public torch.onnx.export")

        if self._adapter_report is not None:
            self._adapter_report.cancel()
        self._adapter_report = asyncio.ensure_future(report())

    async def restart_service(self) -> None:
        """Stop every job and the worker, start a fresh one (with the current `jobs` setting)."""
        await self.scheduler.cancel_all()
        await self.service.stop()
        self.log(logging.INFO, "onnxlens: restarting the export worker")
        await self.start_service()

    async def stop(self) -> None:
        """Cancel every job, stop the worker and the watcher (shutdown, or the client vanished)."""
        await self.scheduler.cancel_all()
        if self._adapter_report is not None:
            self._adapter_report.cancel()
        await self.service.stop()
        await self.offload.close()
        if self.watcher is not None:
            self.watcher.stop()

    # --- what the scheduler reports --------------------------------------------------------
    def _export_finished(self, project: Project, target: str, result: ExportResult, reason: str | None) -> None:
        state = project.targets.get(target)
        if state is None:
            return
        state.record(result)
        self.exported_text.remember((project.key, target), result)
        self.diagnostics.publish_target(project, target)
        summary = ExportStatus.of_result(result, state.change).summary
        self.log(logging.INFO, f"{summary} [{reason}]" if reason else summary)

    def _export_reported(self, project: Project, target: str, event: FindingsEvent | None) -> None:
        """Findings a running export sent ahead of its result are shown at once, labelled; a
        cancelled export's are withdrawn (nothing would ever confirm them)."""
        state = project.targets.get(target)
        if state is None:
            return
        if event is not None:
            state.report(event)
        elif not state.withdraw_reported():
            return
        self.diagnostics.publish_target(project, target, announce=event is not None and event.settled)

    def _export_status(self, status: ExportStatus) -> None:
        if status.state == "cancelled":
            self.log(logging.INFO, f"{status.target}: export cancelled")
        elif status.stage is None:  # an export began or ended: the lenses say so
            self.client.refresh_code_lens()
        if status.state in ("ok", "failed"):  # a result: its lines' hints
            self.client.refresh_inlay_hints()
        self.client.export_status(status)

    def current_lines(self, path: str) -> list[str] | None:
        """A file's text as the editor has it: the open buffer's (unsaved edits included), else
        the disk's."""
        text = self.client.document_text(uri_of(path))
        if text is None:
            text = _read_text(path)
        return text.splitlines() if text is not None else None


def _read_text(path: str) -> str | None:
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
