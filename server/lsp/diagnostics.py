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
    encoding: str = "utf-16"  # the negotiated position encoding (LSP's default: UTF-16 code units)

    @classmethod
    def of(cls, capabilities: lsp.ClientCapabilities | None, encoding: object = None) -> DiagnosticFeatures:
        encoding = encoding_name(encoding)
        publish = capabilities and capabilities.text_document and capabilities.text_document.publish_diagnostics
        if not publish:
            return cls(related_information=False, code_description=False, encoding=encoding)
        return cls(related_information=bool(publish.related_information),
                   code_description=bool(publish.code_description_support), encoding=encoding)


def encoding_name(encoding: object) -> str:
    """"utf-16" for pygls' negotiated PositionEncodingKind (an enum, a string, or None)."""
    return str(getattr(encoding, "value", encoding) or "utf-16")


def units(text: str | None, index: int, encoding: str = "utf-16") -> int:
    """A code-point index into a line -> the client's position units (they differ only when
    the line has non-ASCII text before the index)."""
    if text is None or encoding == "utf-32" or text.isascii():
        return index
    prefix, beyond = text[:index], max(index - len(text), 0)
    if encoding == "utf-8":
        return len(prefix.encode("utf-8")) + beyond
    return len(prefix.encode("utf-16-le")) // 2 + beyond


def line_range(line: int, column: int, end_line: int | None, end_column: int | None,
               text: str | None, encoding: str = "utf-16") -> lsp.Range:
    """0-based wire range of a 1-based (line, column, end_line, end_column) location in code
    points; `text` is the text of `line`."""
    start_line = max(line - 1, 0)
    start = max(column - 1, 0)
    if end_column is None:
        # The rest of the line's text; unknown text: the start of the next line (whole line).
        if text is None:
            return lsp.Range(start=lsp.Position(line=start_line, character=start),
                             end=lsp.Position(line=start_line + 1, character=0))
        stripped = text.rstrip("\r\n")
        if column <= 1:
            start = len(stripped) - len(stripped.lstrip())
        end = max(len(stripped.rstrip()), start)
        return lsp.Range(start=lsp.Position(line=start_line, character=units(text, start, encoding)),
                         end=lsp.Position(line=start_line, character=units(text, end, encoding)))
    end_line0 = max((end_line or line) - 1, 0)
    end_text = text if end_line0 == start_line else None  # other lines: no text at hand, as is
    return lsp.Range(start=lsp.Position(line=start_line, character=units(text, start, encoding)),
                     end=lsp.Position(line=end_line0, character=units(end_text, max(end_column - 1, 0), encoding)))


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
                    range=line_range(r.line, r.column, None, None, line_text(r.file, r.line), features.encoding),
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
                         line_text(location.file, location.line), features.encoding),
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
