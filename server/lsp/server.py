"""The onnxlens language server: state, wiring of the feature modules, and `serve()`.

Feature handlers live one per module (lifecycle, documents, hover, code_lens, code_actions,
commands, stats); this module holds what they share: the projects (one per config file), the
published diagnostics, the export scheduler and the export service.

Never imports torch: exports run in the worker processes behind ExportService.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
import sys
import threading
from pathlib import Path

from lsprotocol import types as lsp
from pygls.io_ import StdinAsyncReader, StdoutWriter, run_async
from pygls.lsp.server import LanguageServer

from onnxlens.exporter.types import Finding, Location
from onnxlens.server.config import find_config
from onnxlens.server.exports import ExportService

from . import code_actions, code_lens, commands, documents, hover, lifecycle, stats
from .diagnostics import CONFIG_OWNER, DiagnosticFeatures, DiagnosticStore, Entry, to_diagnostic
from .project import Project, norm
from .protocol import OnnxlensProtocol
from .scheduler import ExportScheduler
from .settings import Settings
from .uris import uri_of
from .watcher import DiskWatcher

log = logging.getLogger("onnxlens.server.lsp")

VERSION = "0.1.0"
DISCONNECT_CLEANUP_S = 15.0  # bound on stopping jobs and the worker after the client went away


class OnnxlensServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("onnxlens", VERSION, text_document_sync_kind=lsp.TextDocumentSyncKind.Incremental,
                         protocol_cls=OnnxlensProtocol)
        self.settings = Settings()
        self.projects: dict[str, Project] = {}  # config file -> project
        self.diagnostics = DiagnosticStore()
        self.scheduler = ExportScheduler(self)
        self.service: ExportService | None = None
        self.service_ready = asyncio.Event()
        self.watcher: DiskWatcher | None = None
        # path -> (mtime_ns, size) when we last acted on it: a watchdog event for a file the
        # editor just saved (didSave already handled it) must not export twice.
        self.signatures: dict[str, tuple[int, int] | None] = {}
        self._lines: dict[str, tuple[int, list[str]]] = {}  # path -> (mtime_ns, lines), for line_text
        self.config_reloads: dict[str, asyncio.TimerHandle] = {}  # project key -> pending reload

    # --- logging -------------------------------------------------------------------------
    def log(self, level: int, message: str) -> None:
        """At or above the `logLevel` setting: to the client's output panel; below it: to stderr
        at debug level. Not both: editors show the server's stderr in the same panel, so a
        message sent both ways appears twice."""
        if level < self.settings.logging_level:
            log.debug(message)
            return
        kind = (lsp.MessageType.Error if level >= logging.ERROR else lsp.MessageType.Warning
                if level >= logging.WARNING else lsp.MessageType.Info if level >= logging.INFO
                else lsp.MessageType.Log)
        self.window_log_message(lsp.LogMessageParams(type=kind, message=message))

    # --- projects ------------------------------------------------------------------------
    def add_project(self, config_file: Path) -> Project | None:
        """Start tracking a config file; returns the new project, None if it was known already."""
        project = Project(config_file)
        if project.key in self.projects:
            return None
        self.projects[project.key] = project
        project.load()
        self.publish_config(project)
        if self.watcher is not None:
            # inotify adds one watch per directory, walking the tree: not on the event loop.
            asyncio.get_running_loop().run_in_executor(None, self.watcher.watch_root, str(project.root))
        self.log(logging.INFO, f"onnxlens: {project.config_file} with targets "
                               f"{', '.join(project.targets) or '(none)'}")
        return project

    def add_folder(self, folder: Path, *, export: bool) -> Project | None:
        """A workspace folder: track the config that governs it, if there is one."""
        config = find_config(folder)
        if config is None:
            self.log(logging.INFO, f"onnxlens: no [tool.onnxlens] configuration for {folder}")
            return None
        project = self.add_project(config)
        if project is not None and export:
            self.export_project(project, reason="folder added")
        return project

    def remove_project(self, project: Project) -> None:
        for name in project.targets:
            self.scheduler.cancel(project, name)
            self.clear_target(project, name)
        self.publish(self.diagnostics.replace((project.key, CONFIG_OWNER), []))
        self.projects.pop(project.key, None)

    def export_everything(self, *, reason: str) -> None:
        for project in list(self.projects.values()):
            self.export_project(project, reason=reason)

    def export_project(self, project: Project, *, reason: str) -> None:
        """Show cached results at once where the service has them (no worker needed); export the rest."""
        for name, state in list(project.targets.items()):
            try:
                result = self.service.cached(self.scheduler.effective_spec(state)) if self.service else None
            except Exception as error:  # noqa: BLE001 - a cache problem only costs an export
                self.log(logging.WARNING, f"onnxlens: cache lookup for {name} failed: {error}")
                result = None
            if result is not None:
                self.scheduler.show_cached(project, name, result)
            else:
                self.scheduler.request(project, name, reason, delay_s=0)

    def is_ignored_dir(self, path: str) -> bool:
        """A directory not worth watching: outputs, VCS data, environments, caches."""
        path = norm(path)
        return any(p.contains(path) and p.is_ignored_dir(path) for p in self.projects.values())

    def projects_containing(self, path: str) -> list[Project]:
        return [p for p in self.projects.values() if p.contains(path)]

    def find_targets(self, name: str) -> list[tuple[Project, str]]:
        return [(p, name) for p in self.projects.values() if name in p.targets]

    # --- diagnostics -----------------------------------------------------------------------
    def line_text(self, path: str, line: int) -> str | None:
        """A line of a file as on disk: the text the export saw (an open buffer may have unsaved
        edits that shift it). Cached by modification time: related frames often repeat a file."""
        try:
            mtime = os.stat(path).st_mtime_ns
            cached = self._lines.get(path)
            if cached is None or cached[0] != mtime:
                if len(self._lines) > 256:
                    self._lines.clear()
                cached = self._lines[path] = (mtime, Path(path).read_text(
                    encoding="utf-8", errors="replace").splitlines())
        except OSError:
            return None
        lines = cached[1]
        return lines[line - 1] if 0 < line <= len(lines) else None

    def publish(self, paths: set[str]) -> None:
        for path in sorted(paths):
            self.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(
                uri=uri_of(path), diagnostics=self.diagnostics.diagnostics(path)))

    def _entries(self, project: Project, owner: str, findings: list[Finding]) -> list[Entry]:
        features = DiagnosticFeatures.of(self.client_capabilities, self.workspace.position_encoding)
        entries = []
        for finding in findings:
            if finding.location is None:
                # No user line (e.g. export rejected the model's output type): an editor can only
                # show a diagnostic somewhere, so show it where the target is defined.
                finding = dataclasses.replace(finding, location=self._fallback_location(project, owner))
            finding.location.file = norm(finding.location.file)
            diagnostic = to_diagnostic(finding, self.line_text, features,
                                       data={"config": project.key, "target": owner})
            if diagnostic is not None:
                entries.append(Entry(diagnostic, finding, (project.key, owner)))
        return entries

    def _fallback_location(self, project: Project, owner: str) -> Location:
        state = project.targets.get(owner)
        definition = state.model_definition() if state else None
        return definition or Location(file=str(project.config_file), line=project.workspace.target_lines.get(owner, 1))

    def publish_target(self, project: Project, target: str) -> None:
        """Publish the target's findings; files whose findings went away get an empty list.

        The model's own file is published every time, even when clean, so a client always sees
        that an export finished (and benchmarks have something to time).
        """
        state = project.targets.get(target)
        findings = state.result.findings if state and state.result else []
        changed = self.diagnostics.replace((project.key, target), self._entries(project, target, findings))
        if state is not None and (definition := state.model_definition()) is not None:
            changed.add(definition.file)
        self.publish(changed)

    def clear_target(self, project: Project, target: str) -> None:
        self.publish(self.diagnostics.replace((project.key, target), []))

    def publish_config(self, project: Project) -> None:
        changed = self.diagnostics.replace((project.key, CONFIG_OWNER),
                                           self._entries(project, CONFIG_OWNER, project.workspace.findings))
        changed.add(str(project.config_file))
        self.publish(changed)

    def refresh_code_lens(self) -> None:
        workspace = self.client_capabilities.workspace
        if workspace and workspace.code_lens and workspace.code_lens.refresh_support:
            # Fire and forget; a client that fails the request just keeps its old lenses.
            self.workspace_code_lens_refresh(None).add_done_callback(
                lambda future: future.cancelled() or future.exception())

    # --- the connection --------------------------------------------------------------------
    def start_io(self, stdin=None, stdout=None) -> None:
        """pygls' stdio loop, plus what pygls does not do when the client just goes away (stdin
        closed, the editor killed, no shutdown/exit): stop every job and the worker while the
        event loop still runs. Otherwise asyncio.run() only cancels the tasks, a cancelled export
        waits for a worker whose replies nobody reads any more, and the server, the zygote and
        the running child outlive the editor."""
        self._stop_event = threading.Event()
        reader = StdinAsyncReader(stdin or sys.stdin.buffer, self.thread_pool)
        self.protocol.set_writer(StdoutWriter(stdout or sys.stdout.buffer))

        async def connection() -> None:
            try:
                await run_async(stop_event=self._stop_event, reader=reader, protocol=self.protocol,
                                logger=log, error_handler=self.report_server_error)
            finally:
                log.info("onnxlens: the client is gone; stopping the export worker")
                try:
                    await asyncio.wait_for(lifecycle.stop_everything(self), DISCONNECT_CLEANUP_S)
                except Exception as error:  # noqa: BLE001 - exiting anyway
                    log.warning("onnxlens: cleanup after disconnect failed: %r", error)

        try:
            asyncio.run(connection())
        except BrokenPipeError:
            log.error("onnxlens: the connection to the client was lost")
        except (KeyboardInterrupt, SystemExit):
            pass
        finally:
            self.shutdown()

    # --- disk ------------------------------------------------------------------------------
    def signature_changed(self, path: str) -> bool:
        """True if the file differs from when we last acted on it (and remember it now)."""
        try:
            stat = os.stat(path)
            signature = (stat.st_mtime_ns, stat.st_size)
        except OSError:
            signature = None
        if path in self.signatures and self.signatures[path] == signature:
            return False
        self.signatures[path] = signature
        return True


def create_server() -> OnnxlensServer:
    server = OnnxlensServer()
    for module in (lifecycle, documents, hover, code_lens, code_actions, commands, stats):
        module.register(server)
    return server


def serve() -> None:
    """`onnxlens serve`: the language server on stdio."""
    logging.basicConfig(level=logging.INFO, format="onnxlens %(levelname)s %(name)s: %(message)s")
    logging.getLogger("pygls").setLevel(logging.WARNING)  # it logs every message at INFO
    create_server().start_io()
