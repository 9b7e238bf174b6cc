"""Insertions (server/fixits/edits.py: decided without LSP) as one LSP WorkspaceEdit: the one
conversion, for code actions' edits and the edits the server asks the client to apply
(workspace/applyEdit)."""

from __future__ import annotations

from lsprotocol import types as lsp

from onnxlens.server.fixits.edits import Insertion
from onnxlens.server.lsp.uris import uri_of


def workspace_edit(insertions: list[Insertion]) -> lsp.WorkspaceEdit:
    """Insertions as documentChanges: files created first, then each file's edits in order (same-
    position inserts apply in list order)."""
    changes: list = [lsp.CreateFile(uri=uri_of(i.file), options=lsp.CreateFileOptions(overwrite=False, ignore_if_exists=True))
                     for i in insertions if i.create]
    by_file: dict[str, list[lsp.TextEdit]] = {}
    for insertion in insertions:
        position = lsp.Position(line=insertion.line - 1, character=insertion.column - 1)
        by_file.setdefault(insertion.file, []).append(lsp.TextEdit(range=lsp.Range(start=position, end=position),
                                                                   new_text=insertion.text))
    changes += [lsp.TextDocumentEdit(text_document=lsp.OptionalVersionedTextDocumentIdentifier(uri=uri_of(file), version=None),
                                     edits=edits) for file, edits in by_file.items()]
    return lsp.WorkspaceEdit(document_changes=changes)
