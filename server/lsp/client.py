"""The editor as the features talk to it: what the server sends (logs, messages, diagnostics,
progress, lens and inlay hint refreshes, documents to show, export status) and asks (settings).

The one module that knows pygls' sending API, and the one holder of `ClientFeatures`: every
"can the client do X" is answered from what `initialize` resolved, and a message the client did
not ask for is not sent.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any
from urllib.parse import unquote

from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from onnxlens.server.lsp.capabilities import ClientFeatures
from onnxlens.server.lsp.exporting.progress import Progress
from onnxlens.server.lsp.exporting.status import ExportStatus

log = logging.getLogger("onnxlens.server.lsp")

# The custom notification the VS Code status bar follows (clients opt in: capabilities.py).
EXPORT_STATUS = "onnxlens/exportStatus"


class Client:
    def __init__(self, server: LanguageServer) -> None:
        self._server = server
        self.features = ClientFeatures()  # until `initialize`: a client that announced nothing
        self.log_level = logging.INFO  # the `logLevel` setting

    def initialize(self, capabilities: lsp.ClientCapabilities) -> ClientFeatures:
        """Resolve what the client can do, once (pygls negotiated the position encoding already)."""
        self.features = ClientFeatures.of(capabilities, self._server.workspace.position_encoding)
        return self.features

    # --- the workspace the client opened -----------------------------------------------------
    def folders(self) -> list[str]:
        """The paths of the workspace folders; the root path for a client without folders."""
        folders = [to_fs_path(f.uri) for f in self._server.workspace.folders.values()]
        if not folders and self._server.workspace.root_path:
            folders = [self._server.workspace.root_path]
        return [f for f in folders if f]

    def document_text(self, uri: str) -> str | None:
        """The text of a document the editor has open (unsaved edits included); None if closed."""
        document = self._server.workspace.text_documents.get(unquote(uri))  # pygls' keys are unquoted
        return document.source if document is not None else None

    # --- messages ----------------------------------------------------------------------------
    def log(self, level: int, message: str) -> None:
        """At or above the `logLevel` setting: to the client's output panel; below it: to stderr
        at debug level. Not both: editors show the server's stderr in the same panel, so a
        message sent both ways appears twice."""
        if level < self.log_level:
            log.debug(message)
            return
        kind = (lsp.MessageType.Error if level >= logging.ERROR else lsp.MessageType.Warning
                if level >= logging.WARNING else lsp.MessageType.Info if level >= logging.INFO
                else lsp.MessageType.Log)
        self._server.window_log_message(lsp.LogMessageParams(type=kind, message=message))

    def show_message(self, kind: lsp.MessageType, message: str) -> None:
        self._server.window_show_message(lsp.ShowMessageParams(type=kind, message=message))

    # --- results -----------------------------------------------------------------------------
    def publish_diagnostics(self, uri: str, diagnostics: list[lsp.Diagnostic]) -> None:
        self._server.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics))

    def refresh_code_lens(self) -> None:
        if self.features.code_lens_refresh:
            self._server.workspace_code_lens_refresh(None).add_done_callback(_ignore_outcome)

    def refresh_inlay_hints(self) -> None:
        if self.features.inlay_hint_refresh:
            self._server.workspace_inlay_hint_refresh(None).add_done_callback(_ignore_outcome)

    def export_status(self, status: ExportStatus) -> None:
        """`onnxlens/exportStatus`, params `ExportStatus.to_dict()`: the dataclass's field names as
        they are (snake_case: target, state, stage, seconds, node_count, problems, warnings,
        cached, verified, summary), like the `onnxlens/stats` reply. Sent when an export begins,
        enters a stage and ends (ok, failed, cancelled), and when a cached result is shown; only
        to a client that asked for it."""
        if self.features.export_status:
            self._server.protocol.notify(EXPORT_STATUS, status.to_dict())

    async def begin_progress(self, message: str, *, cancellable: bool,
                             on_cancel: Callable[[], None] | None = None) -> Progress:
        """Work-done progress; one that does nothing for a client that does not show progress."""
        manager = self._server.work_done_progress if self.features.work_done_progress else None
        return await Progress.begin(manager, message, cancellable=cancellable, on_cancel=on_cancel)

    async def show_document(self, uri: str, selection: lsp.Range | None = None) -> bool:
        """window/showDocument (the caller checks `features.show_document`); True if shown."""
        result = await self._server.window_show_document_async(
            lsp.ShowDocumentParams(uri=uri, take_focus=True, selection=selection))
        return bool(result and result.success)

    # --- questions ---------------------------------------------------------------------------
    async def ask(self, kind: lsp.MessageType, message: str, actions: list[str]) -> str | None:
        """window/showMessageRequest: the title of the action the user chose; None if dismissed."""
        chosen = await self._server.window_show_message_request_async(lsp.ShowMessageRequestParams(
            type=kind, message=message, actions=[lsp.MessageActionItem(title=a) for a in actions]))
        return chosen.title if chosen is not None else None

    async def apply_edit(self, label: str, edit: lsp.WorkspaceEdit) -> bool:
        """workspace/applyEdit (the caller checks `features.apply_edit`); True if applied."""
        result = await self._server.workspace_apply_edit_async(lsp.ApplyWorkspaceEditParams(edit=edit, label=label))
        return bool(result and result.applied)

    async def configuration(self, section: str) -> Any:
        """workspace/configuration for one section (the caller checks `features.configuration`)."""
        [value] = await self._server.workspace_configuration_async(lsp.ConfigurationParams(
            items=[lsp.ConfigurationItem(section=section)]))
        return value


def _ignore_outcome(future: Any) -> None:
    """Refreshes are fire and forget: a client that fails one keeps what it shows."""
    if not future.cancelled():
        future.exception()
