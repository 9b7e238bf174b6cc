"""The one shape of a quick fix, and what a fix of a configured target is planned from.

Every fix-it (translation.py, decomposition.py, dynamic_shapes.py, new_targets.py) plans a `Fix`:
plain insertions (edits.py), decided without LSP. The language server turns one into a code
action (server/lsp/features/code_actions.py reads registry.py) and `onnxlens init` applies a plan's
insertions to disk; neither needs to know which kind of fix it holds.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from onnxlens.exporter.types import TargetSpec
from onnxlens.server.fixits.edits import Insertion


@dataclass(frozen=True)
class Show:
    """Where a fix takes the user once it is applied: `file` at its 1-based `line` (`title`
    names the step: "Open the translation")."""

    title: str
    file: str
    line: int


@dataclass(frozen=True)
class Fix:
    """A quick fix: what the editor lists (`title`), the text it inserts, and where to take the
    user once it is applied (None: nowhere, the edit is all). Insertions into files that do not
    exist yet (`Insertion.create`) need a client that creates files from a WorkspaceEdit."""

    title: str
    insertions: list[Insertion]
    show: Show | None = None

    @property
    def creates_files(self) -> bool:
        return any(insertion.create for insertion in self.insertions)


@dataclass(frozen=True)
class ConfiguredTarget:
    """What a fix of a configured target is planned from: its spec, the config file that declares
    it, and its `[[...target]]` header line there (None when the config no longer has it)."""

    spec: TargetSpec
    config_file: Path
    header_line: int | None
