"""Applying a WorkspaceEdit to disk as VS Code does for a code action's edit: resource operations
(CreateFile) and text edits, then the edited files saved (VS Code's `files.refactoring.autoSave`,
on by default). Positions are UTF-16 code units; the tests' files are ASCII."""

from __future__ import annotations

from pathlib import Path

from lsprotocol import types as lsp

from tests.support.lsp import uri_path


def apply_workspace_edit(edit: lsp.WorkspaceEdit) -> list[Path]:
    """Applies `edit` (documentChanges or changes); the files changed, in order."""
    changed: list[Path] = []
    for change in edit.document_changes or []:
        if isinstance(change, lsp.CreateFile):
            path = uri_path(change.uri)
            if path.exists() and not (change.options and (change.options.overwrite or change.options.ignore_if_exists)):
                raise AssertionError(f"CreateFile of an existing file: {path}")
            if not path.exists() or (change.options and change.options.overwrite):
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text("")
            changed.append(path)
        elif isinstance(change, lsp.TextDocumentEdit):
            changed.append(_apply_text_edits(uri_path(change.text_document.uri), change.edits))
        else:
            raise AssertionError(f"unexpected document change {change!r}")
    for uri, edits in (edit.changes or {}).items():
        changed.append(_apply_text_edits(uri_path(uri), edits))
    return list(dict.fromkeys(changed))


def _apply_text_edits(path: Path, edits: list) -> Path:
    lines = path.read_text().splitlines(keepends=True)

    def offset(position: lsp.Position) -> int:
        return sum(len(line) for line in lines[:position.line]) + position.character

    text = "".join(lines)
    # Later positions first; among inserts at one position the last in the list first, so the
    # text ends up in list order (the LSP rule).
    ordered = sorted(enumerate(edits), key=lambda item: (offset(item[1].range.start), item[0]), reverse=True)
    for _, text_edit in ordered:
        start, end = offset(text_edit.range.start), offset(text_edit.range.end)
        text = text[:start] + text_edit.new_text + text[end:]
    path.write_text(text)
    return path
