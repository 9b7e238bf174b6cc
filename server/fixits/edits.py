"""Text insertions into the user's files: what a quick fix changes, decided by a torch-free and
LSP-free module (translation.py, decomposition.py, dynamic_shapes.py, new_targets.py) and
turned into a WorkspaceEdit in one place (server/lsp/features/workspace_edits.py), or applied to disk by
`onnxlens init` (`apply_insertions`); and the workspace module a fix may edit
(`editable_module`)."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from onnxlens.exporter import references


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


@dataclass(frozen=True)
class EditableModule:
    """A Python file of the workspace a reference points into, read and parsed for a quick fix."""

    file: str
    text: str
    tree: ast.Module
    reference: references.Reference  # where (FILE.py or package.module) and the attribute


def editable_module(root: str, reference: str | None) -> EditableModule | None:
    """The module `reference` points into, when a quick fix may edit it: inside the workspace
    `root`, readable, valid Python; None otherwise (the fix is then not offered)."""
    parsed = references.parse(reference)
    file = references.source_file(root, reference)
    if parsed is None or file is None or not Path(file).is_relative_to(Path(root).resolve()):
        return None
    try:
        text = Path(file).read_text(encoding="utf-8")
        return EditableModule(file, text, ast.parse(text), parsed)
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
        return None


def dict_entry(file: str, literal: ast.Dict | None, lines: list[str], entry: str) -> Insertion | None:
    """`entry` (`key: value`) as a new line of a dict literal, before a closing brace that stands
    on its own line, after an entry ending with a comma (the layout our fixes write); None for
    any other layout. `lines`: the file's lines, with their endings."""
    if literal is None or literal.end_lineno is None:
        return None
    closing = lines[literal.end_lineno - 1]
    if closing[:literal.end_col_offset - 1].strip():
        return None  # `}` shares its line with an entry
    if literal.values:
        last = literal.values[-1]
        rest = lines[last.end_lineno - 1][last.end_col_offset:] if last.end_lineno else ""
        if not rest.lstrip().startswith(","):
            return None
        key = literal.keys[-1]
        indent = " " * (key.col_offset if key is not None else literal.values[-1].col_offset)
    else:
        indent = " " * (len(closing) - len(closing.lstrip()) + 4)
    return Insertion(file, literal.end_lineno, 1, f"{indent}{entry},\n")
