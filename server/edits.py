"""Text insertions into the user's files: what a quick fix changes, decided by a torch-free and
LSP-free module (translation_fix.py, decomposition_fix.py) and turned into a WorkspaceEdit in one
place (server/lsp/workspace_edits.py), or applied to disk by `onnxlens init`
(`apply_insertions`)."""

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


def apply_insertions(text: str, insertions: list[Insertion]) -> str:
    """`text` with `insertions` (all of one file, positions in the original text) applied as an
    editor applies them: inserts at the same position end up in list order. Columns count
    characters; a line past the end is the end of the text."""
    lines = text.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))

    def offset(insertion: Insertion) -> int:
        if insertion.line > len(lines):
            return len(text)
        return min(starts[insertion.line - 1] + insertion.column - 1, starts[insertion.line])

    ordered = sorted(enumerate(insertions), key=lambda item: (offset(item[1]), item[0]), reverse=True)
    for _, insertion in ordered:
        at = offset(insertion)
        text = text[:at] + insertion.text + text[at:]
    return text
