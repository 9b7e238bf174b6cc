"""One configured workspace (a config file and its targets) as the language server sees it:
the targets, their latest results, and which files each target depends on (its closure).

No LSP types here: this is the server's model of the user's project.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from onnxlens.exporter import references
from onnxlens.exporter.events import FindingsEvent
from onnxlens.exporter.graph_change import GraphChange, graph_change
from onnxlens.exporter.locations.directories import not_users_directory, under_not_users
from onnxlens.exporter.types import STAGES, ExportedGraph, ExportResult, Finding, Location, TargetSpec
from onnxlens.server.config import Config, load_config


def norm(path: str | os.PathLike) -> str:
    """The one spelling of a path used as a key everywhere (absolute, symlinks resolved)."""
    return os.path.realpath(path)


@dataclass
class TargetState:
    spec: TargetSpec
    result: ExportResult | None = None
    closure: set[str] = field(default_factory=set)  # files whose change re-exports the target
    running: bool = False
    # What the running export reported before its result, per stage (the latest event of each):
    # shown with the last result's findings until its own result replaces them all.
    reported: dict[str, FindingsEvent] = field(default_factory=dict)
    # The last export's graph that had one (a failed export keeps the one before it): the next
    # result is compared with it, and the next job's report too.
    graph: ExportedGraph | None = None
    change: GraphChange | None = None  # what the last result's graph changed; None: nothing to compare

    @property
    def spec_files(self) -> set[str]:
        """The files the config names: the closure before any export told us more."""
        refs = (self.spec.model, self.spec.inputs, self.spec.dynamic_shapes, self.spec.custom_translations)
        return {f for f in (references.source_file(self.spec.root, r) for r in refs) if f}

    def record(self, result: ExportResult) -> None:
        """Keep the result and learn the closure from it: the files it imported or opened, and
        where the modules it looked for and did not find would be (their appearance re-exports).

        A failed export may have stopped importing early (a syntax error in the model file), so
        its closure is partial: keep what earlier results learned too, or a fix in a file the
        failed run never reached would not re-export.

        A saved export is recorded twice, shown before its verification and completed after it
        (the same `export_id`): its graph's change is the one against the export before it.
        """
        learned = {norm(p) for p in (*result.closure, *result.absent)}
        learned |= {norm(f.location.file) for f in result.findings if f.location}
        if result.status == "ok":
            self.closure = learned | self.spec_files
        else:
            self.closure |= learned | self.spec_files
        completes_shown = (self.result is not None and bool(result.export_id)
                           and self.result.export_id == result.export_id)
        self.result = result
        self.reported.clear()  # the result has the final word on every reported finding
        if completes_shown:
            return
        exported = ExportedGraph.of(result)
        self.change = graph_change(self.graph, exported) if exported is not None and self.graph is not None else None
        if exported is not None:
            self.graph = exported

    def report(self, event: FindingsEvent) -> None:
        """Findings the running export sent ahead of its result; they replace its earlier event
        for the same stage."""
        self.reported[event.stage] = event

    def withdraw_reported(self) -> bool:
        """The running export ended without a result (cancelled): what it reported goes, since
        nothing will confirm it. True when something was withdrawn."""
        had = bool(self.reported)
        self.reported.clear()
        return had

    def findings_shown(self) -> tuple[list[Finding], list[tuple[Finding, FindingsEvent]]]:
        """What the target shows now: the last result's findings, and those the running export
        reported so far with the event each came in. A reported finding replaces a result's
        finding with the same code on the same line (it is the newer word on it); once the
        running export has settled its stages (FindingsEvent.settled), the result's findings of
        those stages go."""
        early = [(finding, event) for event in self.reported.values() for finding in event.findings]
        replaced = {_place(finding) for finding, _ in early}
        settled = _settled_stages(self.reported.values())
        final = (self.result.findings if self.result else []) + self.change_findings()
        return [finding for finding in final
                if _place(finding) not in replaced and finding.stage not in settled], early

    def change_findings(self) -> list[Finding]:
        """The last result's changes of the graph the user may not have meant, as `graph-change`
        notes on the lines responsible (the model's definition when no line is known)."""
        notices = self.change.notices if self.change is not None else []
        return [Finding(code="graph-change", message=notice.message, stage="save", location=notice.location)
                for notice in notices]

    def model_definition(self) -> Location | None:
        """Where the model callable is defined: from the last result, else by reading its file."""
        if self.result and self.result.model_location:
            location = self.result.model_location
            return dataclasses.replace(location, file=norm(location.file))
        return references.model_definition(self.spec)


def _settled_stages(events: Iterable[FindingsEvent]) -> set[str]:
    """The stages whose findings a running export has made final: all up to a settled event's."""
    ends = [STAGES.index(event.stage) + 1 for event in events if event.settled and event.stage in STAGES]
    return set(STAGES[:max(ends)]) if ends else set()


def _place(finding: Finding) -> tuple:
    location = finding.location
    return (norm(location.file), location.line, finding.code) if location else (None, 0, finding.code)


def _unreadable_config(config_file: Path, error: Exception) -> Config:
    """A config with no targets and one `config` finding saying why the file could not be read."""
    line = getattr(error, "lineno", None) or 1
    message = f"cannot read the onnxlens configuration: {error}"
    config = Config(config_file=config_file, root=config_file.parent, output_dir=config_file.parent / ".onnxlens")
    config.findings.append(Finding(code="config", message=message, stage="load",
                                   location=Location(file=str(config_file), line=line)))
    return config


class Project:
    """A config file, its targets and their state. One per configured workspace folder."""

    def __init__(self, config_file: Path) -> None:
        self.config_file = Path(norm(config_file))
        self.root = self.config_file.parent
        self.config: Config = Config(self.config_file, self.root, self.root / ".onnxlens")
        self.targets: dict[str, TargetState] = {}

    @property
    def key(self) -> str:
        return str(self.config_file)

    @property
    def output_dir(self) -> Path:
        return Path(norm(self.config.output_dir))

    def load(self) -> tuple[list[str], list[str]]:
        """(Re)read the config. Returns (targets to export: new or changed, targets removed)."""
        try:
            config = load_config(self.config_file)
        except Exception as error:  # noqa: BLE001 - any unreadable config becomes a finding, not a crash
            config = _unreadable_config(self.config_file, error)
        self.config = config
        changed: list[str] = []
        states: dict[str, TargetState] = {}
        for spec in config.targets:
            old = self.targets.get(spec.name)
            if old is not None and old.spec == spec:
                states[spec.name] = old
                continue
            state = TargetState(spec=spec)
            if old is not None:  # keep what we know until the re-export replaces it
                state.result, state.closure, state.reported = old.result, set(old.closure), old.reported
                state.graph, state.change = old.graph, old.change
            state.closure |= state.spec_files
            states[spec.name] = state
            changed.append(spec.name)
        removed = [name for name in self.targets if name not in states]
        self.targets = states
        return changed, removed

    def targets_depending_on(self, path: str) -> list[str]:
        return [name for name, state in self.targets.items() if path in state.closure]

    def contains(self, path: str) -> bool:
        return path == str(self.root) or path.startswith(str(self.root) + os.sep)

    def is_ignored(self, path: str) -> bool:
        """True for files no export can depend on: outputs, and what is not the user's code
        (exporter/locations/directories.py: VCS data, environments, installed packages, caches)."""
        output = str(self.output_dir)
        if path == output or path.startswith(output + os.sep):
            return True
        return under_not_users(str(self.root), path)

    def is_ignored_dir(self, path: str) -> bool:
        """True for a directory not worth watching (see `is_ignored`)."""
        return self.is_ignored(path) or (path != str(self.root) and not_users_directory(path))
