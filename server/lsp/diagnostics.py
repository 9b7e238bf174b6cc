"""Findings as LSP diagnostics: the ONE place where onnxlens findings become lsprotocol types and
where they are placed and published.

Findings are 1-based (lines and columns, `end_column` exclusive); the wire is 0-based. A finding
without an end column covers the rest of its line's text (not the whole line: the indentation
stays unmarked, as editors show it for compiler errors). A finding without a location (e.g. the
export rejected the model's output type) is shown where its target is defined. Stored results
are never changed: placing a finding (its path normalised, or the fallback location) makes a copy.

Findings a running export sent ahead of its result (FindingsEvent) are shown with the target's
last result, labelled as not final: the message says so and `data.preliminary` is true. The
result's publish replaces them; a cancelled export's are withdrawn.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import attrs
from lsprotocol import types as lsp

from onnxlens.exporter.events import FindingsEvent
from onnxlens.exporter.types import Finding, Location
from onnxlens.server.lsp.capabilities import ClientFeatures
from onnxlens.server.lsp.client import Client
from onnxlens.server.lsp.exporting.project import Project, norm
from onnxlens.server.lsp.uris import uri_of
from onnxlens.server.shared_findings import grouped, problem_key, with_targets

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


def to_diagnostic(finding: Finding, line_text: LineText, features: ClientFeatures,
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
    client holds one list per file, so every publish sends the union, a problem the targets
    share once (`data.targets` names them).
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
        """The file's entries, each with the diagnostic the client is sent for it: a problem the
        targets of one config share is one diagnostic (server/shared_findings.py), naming them."""
        own = [e for files in self._by_owner.values() for e in files.get(path, [])]
        shown = []
        for group in grouped(((entry.owner[0], problem_key(entry.finding)), entry) for entry in own):
            diagnostic = group[0].diagnostic
            if len(group) > 1:
                related = [r for entry in group for r in entry.diagnostic.related_information or []]
                diagnostic = attrs.evolve(
                    diagnostic, message=with_targets(diagnostic.message, [entry.owner[1] for entry in group]),
                    related_information=list({(r.location.uri, r.location.range.start.line, r.message): r
                                              for r in related}.values()) or None,
                    data={**(diagnostic.data or {}), "targets": [entry.owner[1] for entry in group]})
            shown += [dataclasses.replace(entry, diagnostic=diagnostic) for entry in group]
        return shown

    def diagnostics(self, path: str) -> list[lsp.Diagnostic]:
        """What the client is sent for the file: one diagnostic per problem."""
        return list({id(entry.diagnostic): entry.diagnostic for entry in self.entries(path)}.values())


class SourceLines:
    """Lines of files as on disk: the text the export saw (an open buffer may have unsaved edits
    that shift it). Cached by modification time: related frames often repeat a file."""

    def __init__(self) -> None:
        self._files: dict[str, tuple[int, list[str]]] = {}  # path -> (mtime_ns, lines)

    def __call__(self, path: str, line: int) -> str | None:
        try:
            mtime = os.stat(path).st_mtime_ns
            cached = self._files.get(path)
            if cached is None or cached[0] != mtime:
                if len(self._files) > 256:
                    self._files.clear()
                cached = self._files[path] = (mtime, Path(path).read_text(
                    encoding="utf-8", errors="replace").splitlines())
        except OSError:
            return None
        lines = cached[1]
        return lines[line - 1] if 0 < line <= len(lines) else None


def labelled(finding: Finding, event: FindingsEvent) -> Finding:
    """A copy of a finding sent ahead of the export's result, saying that it is not final: found
    while tracing (the stage that decides has not run yet), or by a stage that has ended while
    the rest of the export runs."""
    note = "found while tracing; the export is still running" if event.preliminary else "the export is still running"
    return dataclasses.replace(finding, message=f"{finding.message} ({note})")


def fallback_location(project: Project, owner: str, finding: Finding) -> Location:
    """Where a finding without a location is shown: a finding about a reference on its value in
    the config; else its target's model definition, else the target's [[target]] line in the
    config (a config finding: the config's first line)."""
    if finding.reference is None:
        state = project.targets.get(owner)
        definition = state.model_definition() if state else None
        if definition is not None:
            return definition
    return project.config.place_in_config(owner, finding)


def placed(finding: Finding, fallback: Callable[[], Location]) -> Finding:
    """A copy of the finding at its own location, or at `fallback()`, with the path in the one
    spelling the store and the clients' URIs use."""
    location = finding.location or fallback()
    return dataclasses.replace(finding, location=dataclasses.replace(location, file=norm(location.file)))


class Diagnostics:
    """What the client has been sent: each target's and each config's findings, placed, converted
    and published per file (a file shared by several owners gets the union)."""

    def __init__(self, client: Client, lines: LineText) -> None:
        self._client = client
        self._lines = lines
        self._store = DiagnosticStore()

    def entries(self, path: str) -> list[Entry]:
        return self._store.entries(path)

    def publish_target(self, project: Project, target: str, *, announce: bool = True) -> None:
        """Publish the target's findings (its last result's, and what a running export reported
        ahead of its result); files whose findings went away get an empty list.

        `announce` (an export finished, or settled its errors): the model's own file is
        published, even when clean, so a client always sees that its errors are known now (and
        benchmarks have something to time).
        """
        state = project.targets.get(target)
        final, early = state.findings_shown() if state else ([], [])
        changed = self._replace(project, target, final, early)
        if announce and state is not None and (definition := state.model_definition()) is not None:
            changed.add(definition.file)
        self._publish(changed)

    def clear_target(self, project: Project, target: str) -> None:
        self._publish(self._replace(project, target, []))

    def publish_config(self, project: Project) -> None:
        changed = self._replace(project, CONFIG_OWNER, project.config.findings)
        changed.add(str(project.config_file))
        self._publish(changed)

    def clear_config(self, project: Project) -> None:
        self._publish(self._replace(project, CONFIG_OWNER, []))

    def _replace(self, project: Project, owner: str, findings: list[Finding],
                 early: Iterable[tuple[Finding, FindingsEvent]] = ()) -> set[str]:
        """Set the owner's diagnostics: `findings`, then `early` (sent ahead of a running
        export's result: labelled, `data.preliminary`)."""
        features = self._client.features
        data = {"config": project.key, "target": owner}
        entries = []
        for finding, event in [*((finding, None) for finding in findings), *early]:
            finding = placed(finding, lambda: fallback_location(project, owner, finding))
            if event is not None:
                finding = labelled(finding, event)
            diagnostic = to_diagnostic(finding, self._lines, features,
                                       data=data if event is None else {**data, "preliminary": True})
            if diagnostic is not None:
                entries.append(Entry(diagnostic, finding, (project.key, owner)))
        return self._store.replace((project.key, owner), entries)

    def _publish(self, paths: set[str]) -> None:
        for path in sorted(paths):
            self._client.publish_diagnostics(uri_of(path), self._store.diagnostics(path))
