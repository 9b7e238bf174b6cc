"""Findings as LSP diagnostics: the ONE place where onnxlens findings become lsprotocol types.

Findings are 1-based (lines and columns, `end_column` exclusive); the wire is 0-based. A finding
without an end column covers the rest of its line's text (not the whole line: the indentation
stays unmarked, as editors show it for compiler errors).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from lsprotocol import types as lsp

from onnxlens.exporter.types import Finding

from .uris import uri_of

SOURCE = "onnxlens"

SEVERITIES = {
    "error": lsp.DiagnosticSeverity.Error,
    "warning": lsp.DiagnosticSeverity.Warning,
    "info": lsp.DiagnosticSeverity.Information,
    "information": lsp.DiagnosticSeverity.Information,
    "hint": lsp.DiagnosticSeverity.Hint,
}

# (path, 1-based line) -> the line's text, or None when it cannot be read.
LineText = Callable[[str, int], "str | None"]


@dataclass(frozen=True)
class DiagnosticFeatures:
    """What the client said it can show (textDocument.publishDiagnostics capabilities)."""

    related_information: bool = True
    code_description: bool = True

    @classmethod
    def of(cls, capabilities: lsp.ClientCapabilities | None) -> DiagnosticFeatures:
        publish = capabilities and capabilities.text_document and capabilities.text_document.publish_diagnostics
        if not publish:
            return cls(related_information=False, code_description=False)
        return cls(related_information=bool(publish.related_information),
                   code_description=bool(publish.code_description_support))


def line_range(line: int, column: int, end_line: int | None, end_column: int | None,
               text: str | None) -> lsp.Range:
    """0-based wire range of a 1-based (line, column, end_line, end_column) location."""
    start = lsp.Position(line=max(line - 1, 0), character=max(column - 1, 0))
    if end_column is None:
        # The rest of the line's text; unknown text: the start of the next line (whole line).
        if text is None:
            return lsp.Range(start=start, end=lsp.Position(line=start.line + 1, character=0))
        stripped = text.rstrip("\r\n")
        if column <= 1:
            start = lsp.Position(line=start.line, character=len(stripped) - len(stripped.lstrip()))
        end_char = max(len(stripped.rstrip()), start.character)
        return lsp.Range(start=start, end=lsp.Position(line=start.line, character=end_char))
    end = lsp.Position(line=max((end_line or line) - 1, 0), character=max(end_column - 1, 0))
    return lsp.Range(start=start, end=end)


def to_diagnostic(finding: Finding, line_text: LineText, features: DiagnosticFeatures,
                  data: dict | None = None) -> lsp.Diagnostic | None:
    """The LSP diagnostic of a finding; None for a finding with no location (the caller gives
    those one: it knows where the target is defined)."""
    location = finding.location
    if location is None:
        return None
    related = None
    if features.related_information and finding.related:
        related = [
            lsp.DiagnosticRelatedInformation(
                location=lsp.Location(
                    uri=uri_of(r.file),
                    range=line_range(r.line, r.column, None, None, line_text(r.file, r.line)),
                ),
                message=r.message,
            )
            for r in finding.related
        ]
    description = None
    if features.code_description and finding.docs_url:
        description = lsp.CodeDescription(href=finding.docs_url)
    return lsp.Diagnostic(
        range=line_range(location.line, location.column, location.end_line, location.end_column,
                         line_text(location.file, location.line)),
        severity=SEVERITIES.get(finding.severity, lsp.DiagnosticSeverity.Error),
        code=finding.code,
        code_description=description,
        source=SOURCE,
        message=finding.message,
        related_information=related,
        data=data,
    )


@dataclass(frozen=True)
class Entry:
    """A published diagnostic with what produced it (code actions need the finding's fixes)."""

    diagnostic: lsp.Diagnostic
    finding: Finding
    owner: tuple[str, str]  # (config file, target name or CONFIG_OWNER)


CONFIG_OWNER = "<config>"


class DiagnosticStore:
    """Diagnostics per owner (a target, or a config file) and per file.

    A file can get diagnostics from several owners (two targets import the same helper); the
    client holds one list per file, so every publish sends the union.
    """

    def __init__(self) -> None:
        self._by_owner: dict[tuple[str, str], dict[str, list[Entry]]] = {}

    def replace(self, owner: tuple[str, str], entries: list[Entry]) -> set[str]:
        """Set the owner's diagnostics; returns the files whose list changed hands (to publish)."""
        new: dict[str, list[Entry]] = {}
        for entry in entries:
            path = entry.finding.location.file  # to_diagnostic dropped findings without location
            new.setdefault(path, []).append(entry)
        old = self._by_owner.get(owner, {})
        if new:
            self._by_owner[owner] = new
        else:
            self._by_owner.pop(owner, None)
        return set(old) | set(new)

    def entries(self, path: str) -> list[Entry]:
        return [e for files in self._by_owner.values() for e in files.get(path, [])]

    def diagnostics(self, path: str) -> list[lsp.Diagnostic]:
        return [e.diagnostic for e in self.entries(path)]

    def files(self, owner: tuple[str, str]) -> set[str]:
        return set(self._by_owner.get(owner, {}))
