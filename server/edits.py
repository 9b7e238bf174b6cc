"""Text insertions into the user's files: what a quick fix changes, decided by a torch-free and
LSP-free module (translation_fix.py, decomposition_fix.py) and turned into a WorkspaceEdit in one
place (server/lsp/code_actions.py `workspace_edit`)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Insertion:
    """Text inserted at a 1-based line and column of a file; `create`: the file is new (the text
    is all of it)."""

    file: str
    line: int
    column: int
    text: str
    create: bool = False
