"""What the client can do, resolved once at `initialize` from its ClientCapabilities.

Every feature asks this one frozen value (`Client.features`) instead of walking lsprotocol's
optional capability tree again, so "does the client support X" has one answer per session.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lsprotocol import types as lsp

# The experimental client capability that asks for `onnxlens/exportStatus` notifications:
# {"experimental": {"onnxlens": {"exportStatus": true}}} (the VS Code extension sends it).
EXPERIMENTAL_SECTION = "onnxlens"
EXPORT_STATUS_CAPABILITY = "exportStatus"


@dataclass(frozen=True)
class ClientFeatures:
    """The defaults are what a client that announced nothing gets."""

    related_information: bool = False  # textDocument.publishDiagnostics.relatedInformation
    code_description: bool = False  # textDocument.publishDiagnostics.codeDescriptionSupport
    encoding: str = "utf-16"  # the negotiated position encoding (LSP's default: UTF-16 code units)
    show_document: bool = False  # window.showDocument.support
    create_files: bool = False  # workspace.workspaceEdit: documentChanges with the `create` resource operation
    apply_edit: bool = False  # workspace.applyEdit: the server may ask the client to apply a WorkspaceEdit
    work_done_progress: bool = False  # window.workDoneProgress
    code_lens_refresh: bool = False  # workspace.codeLens.refreshSupport
    inlay_hint_refresh: bool = False  # workspace.inlayHint.refreshSupport
    configuration: bool = False  # workspace.configuration: settings can be pulled
    export_status: bool = False  # experimental.onnxlens.exportStatus: wants onnxlens/exportStatus

    @classmethod
    def of(cls, capabilities: lsp.ClientCapabilities | None, encoding: object = None) -> ClientFeatures:
        """`encoding`: the position encoding pygls negotiated (an enum, a string, or None)."""
        capabilities = capabilities or lsp.ClientCapabilities()
        document, window, workspace = capabilities.text_document, capabilities.window, capabilities.workspace
        publish = document.publish_diagnostics if document else None
        return cls(
            related_information=bool(publish and publish.related_information),
            code_description=bool(publish and publish.code_description_support),
            encoding=encoding_name(encoding),
            show_document=bool(window and window.show_document and window.show_document.support),
            create_files=_creates_files(workspace),
            apply_edit=bool(workspace and workspace.apply_edit),
            work_done_progress=bool(window and window.work_done_progress),
            code_lens_refresh=bool(workspace and workspace.code_lens and workspace.code_lens.refresh_support),
            inlay_hint_refresh=bool(workspace and workspace.inlay_hint and workspace.inlay_hint.refresh_support),
            configuration=bool(workspace and workspace.configuration),
            export_status=_experimental(capabilities.experimental).get(EXPORT_STATUS_CAPABILITY) is True,
        )


def _creates_files(workspace: lsp.WorkspaceClientCapabilities | None) -> bool:
    edit = workspace.workspace_edit if workspace else None
    return bool(edit and edit.document_changes and lsp.ResourceOperationKind.Create in (edit.resource_operations or []))


def _experimental(experimental: Any) -> dict[str, Any]:
    """Our section of the client's `experimental` capabilities (LSPAny: anything may be there)."""
    section = experimental.get(EXPERIMENTAL_SECTION) if isinstance(experimental, dict) else None
    return section if isinstance(section, dict) else {}


def encoding_name(encoding: object) -> str:
    """"utf-16" for pygls' negotiated PositionEncodingKind (an enum, a string, or None)."""
    return str(getattr(encoding, "value", encoding) or "utf-16")
