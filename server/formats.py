"""`onnxlens check` output: findings and results as text, JSON (the schema in docs/cli.md) or SARIF 2.1.0.

Every conversion of findings into an output format lives here, so the three formats agree on
paths, lines and columns:
* paths are relative to the workspace root when inside it, absolute otherwise;
* lines and columns are 1-based, `end_column` exclusive (exporter/types.py);
* a finding without a source location (e.g. a crash before any user code ran) is placed on its
  target's [[target]] header line in the config file, so every finding has a place to click; one
  about a reference (a callable the module does not define) on that reference's value.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any, Callable
from urllib.parse import quote

from onnxlens.exporter.types import CODES, ExportResult, Finding, Location
from onnxlens.server.config import Workspace
from onnxlens.server.shared_findings import grouped, merged, problem_key

INFORMATION_URI = "https://pypi.org/project/onnxlens/"
SARIF_SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"

# One line per diagnostic code (docs/diagnostics.md), for SARIF rules.
CODE_DESCRIPTIONS = {
    "config": "The onnxlens configuration is invalid.",
    "import": "The target's module failed to import.",
    "setup": "The model, inputs or dynamic-shapes factory raised an exception.",
    "torch-export": "torch.export could not capture the model.",
    "unsupported-op": "An operator has no ONNX translation.",
    "decomposition": "Decomposing the exported program failed.",
    "translation": "Building the ONNX graph failed.",
    "onnx-checker": "onnx.checker rejected the exported model.",
    "mismatch": "onnxruntime and torch outputs differ past tolerance.",
    "weights-free": "The model's weights have no data (meta device): only its graph was exported.",
    "torch-version": "The installed torch has no onnxlens adapter: exported with the public torch.onnx.export.",
    "timeout": "The export job exceeded its time limit.",
    "crash": "The export process died.",
    "output": "The model's files could not be written (a full disk, a path that is a directory, no permission).",
}
CODE_HELP = {
    "torch-export": "https://pytorch.org/docs/stable/generated/exportdb/index.html",
    "unsupported-op": "https://pytorch.org/docs/stable/onnx_dynamo.html",
    "decomposition": "https://pytorch.org/docs/stable/onnx_dynamo.html",
    "translation": "https://pytorch.org/docs/stable/onnx_dynamo.html",
    "onnx-checker": "https://onnx.ai/onnx/api/checker.html",
}
# Severities as SARIF levels: an `info` finding (weights-free, torch-version) is a SARIF "note".
SARIF_LEVELS = {"error": "error", "warning": "warning", "info": "note"}


@dataclass
class CheckRun:
    """Everything one `onnxlens check` produced, in config order."""

    workspace: Workspace
    results: list[ExportResult] = field(default_factory=list)
    seconds: float = 0.0
    selection: list[str] = field(default_factory=list)  # --target names; empty: every target

    @property
    def invalid_targets(self) -> list[str]:
        """Selected targets left out because of config errors."""
        valid = {spec.name for spec in self.workspace.targets}
        return [name for name in self.workspace.target_lines
                if name not in valid and (not self.selection or name in self.selection)]

    @property
    def findings(self) -> list[tuple[str | None, Finding]]:
        """(target name or None for config findings, finding), config findings first."""
        pairs: list[tuple[str | None, Finding]] = [(None, f) for f in self.workspace.findings]
        for result in self.results:
            pairs.extend((result.target, f) for f in result.findings)
        return pairs

    @property
    def shown(self) -> list[tuple[list[str | None], Finding]]:
        """The findings as the text and SARIF output show them: a problem several targets share
        once, naming them (server/shared_findings.py); config findings first."""
        pairs = self.findings
        keyed = ((problem_key(finding) if finding.location is not None else (target, index), (target, finding))
                 for index, (target, finding) in enumerate(pairs))
        return [([target for target, _ in group], merged([str(target) for target, _ in group], [f for _, f in group]))
                for group in grouped(keyed)]

    def count(self, severity: str) -> int:
        """Problems of a severity, a problem several targets share once."""
        return sum(1 for _, finding in self.shown if finding.severity == severity)


def version() -> str:
    try:
        return metadata.version("onnxlens")
    except metadata.PackageNotFoundError:
        return "0+unknown"


# --- shared conversions --------------------------------------------------------------------

def display_path(path: str | os.PathLike, root: Path) -> str:
    """Workspace-relative (forward slashes) when inside the root, absolute otherwise."""
    absolute = Path(path).resolve() if Path(path).is_absolute() else (root / path).resolve()
    try:
        return absolute.relative_to(root.resolve()).as_posix()
    except ValueError:
        return str(absolute)


def _optional_path(path: str | None, root: Path) -> str | None:
    return display_path(path, root) if path else None


def _read_line(file: str, line: int) -> str | None:
    try:
        with open(file, encoding="utf-8", errors="replace") as handle:
            for number, text in enumerate(handle, start=1):
                if number == line:
                    return text.rstrip("\n")
    except OSError:
        pass
    return None


def located(finding: Finding, target: str | None, workspace: Workspace) -> Location:
    """The finding's location with every field filled in (see the module docstring)."""
    location = finding.location
    if location is None or not location.file:
        location = workspace.place_in_config(target, finding)
    end_line = location.end_line or location.line
    end_column = location.end_column
    if end_column is None:
        # No columns known: the whole line (up to its end), as editors underline it.
        text = finding.source_line if finding.source_line is not None and end_line == location.line else None
        text = text if text is not None else _read_line(location.file, end_line)
        end_column = max(len(text.rstrip()) + 1 if text else 0, location.column + 1)
    return Location(location.file, location.line, location.column, end_line, end_column)


_ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def message_of(finding: Finding) -> str:
    """The message without terminal colour codes (torch's errors carry some)."""
    return _ANSI_ESCAPE.sub("", finding.message)


def _pluralize(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


# --- text ----------------------------------------------------------------------------------

def progress_line(result: ExportResult) -> str:
    """One stderr line per finished target in text mode."""
    if result.status == "ok":
        outcome = "exported" + (" (graph only, no weights)" if result.graph_onnx else "")
        warnings = sum(1 for f in result.findings if f.severity == "warning")
        if warnings:
            outcome += f" with {_pluralize(warnings, 'warning')}"
    else:
        problems = sum(1 for f in result.findings if f.severity != "info")  # a note is no problem
        outcome = f"failed: {_pluralize(problems, 'problem')}{result.elsewhere()}"
    if result.cached:  # the seconds are the earlier export's, not this run's
        return f"onnxlens: {result.target}: {outcome} (cached: nothing it depends on changed since an export of {result.seconds:.2f} s)"
    return f"onnxlens: {result.target}: {outcome} in {result.seconds:.2f} s"


def render_text(run: CheckRun) -> str:
    root = run.workspace.root
    out: list[str] = []
    for targets, finding in run.shown:
        target = targets[0]
        location = located(finding, target, run.workspace)
        message = message_of(finding).replace("\n", "\n    ")
        prefix = ""
        if target and len(run.results) > 1:
            prefix = f"[{target}] " if len(targets) == 1 else f"[{len(targets)} targets] "
        out.append(f"{display_path(location.file, root)}:{location.line}:{location.column}: "
                   f"{finding.severity}[{finding.code}] {prefix}{message}")
        if finding.source_line and finding.source_line.strip():
            out.append(f"    {location.line:>5} | {finding.source_line.rstrip()}")
        for related in finding.related:
            out.append(f"    {display_path(related.file, root)}:{related.line}: note: {related.message}")
    out.append(summary_line(run))
    return "\n".join(out) + "\n"


def summary_line(run: CheckRun) -> str:
    exported = sum(1 for r in run.results if r.status == "ok")
    failed = len(run.results) - exported
    parts = f"{exported} exported, {failed} failed"
    cached = sum(1 for r in run.results if r.cached)
    if cached:
        parts += f" ({cached} cached)"
    invalid = len(run.invalid_targets)
    if invalid:
        parts += f", {invalid} invalid"
    total = len(run.results) + invalid
    counts = f"{_pluralize(run.count('error'), 'error')}, {_pluralize(run.count('warning'), 'warning')}"
    return f"{_pluralize(total, 'target')}: {parts} ({counts}) in {run.seconds:.1f} s"


# --- JSON ----------------------------------------------------------------------------------

def _diagnostic(finding: Finding, target: str | None, workspace: Workspace) -> dict[str, Any]:
    root = workspace.root
    location = located(finding, target, workspace)
    return {
        "file": display_path(location.file, root),
        "line": location.line,
        "column": location.column,
        "end_line": location.end_line,
        "end_column": location.end_column,
        "severity": finding.severity,
        "code": finding.code,
        "message": message_of(finding),
        "stage": finding.stage,
        "related": [
            {"file": display_path(r.file, root), "line": r.line, "message": r.message}
            for r in finding.related
        ],
        "docs_url": finding.docs_url,  # extension
    }


def _rounded(seconds: float) -> float:
    return round(seconds, 3)


def to_json_data(run: CheckRun) -> dict[str, Any]:
    root = run.workspace.root
    return {
        "version": 1,
        "targets": [
            {
                "name": result.target,
                "status": result.status,
                "onnx": _optional_path(result.onnx, root),
                "onnx_data": _optional_path(result.onnx_data, root),  # extension: the weights' file it names
                "graph_onnx": _optional_path(result.graph_onnx, root),  # extension: weights-free models
                "report": _optional_path(result.report, root),
                "seconds": _rounded(result.seconds),
                "stages": {stage: _rounded(s) for stage, s in result.stages.items()},
                "verification": result.verification.to_dict() if result.verification is not None else None,
                "diagnostics": [_diagnostic(f, result.target, run.workspace) for f in result.findings],
                "cached": result.cached,  # extension
                "node_count": result.node_count,  # extension
            }
            for result in run.results
        ],
        # Extensions: the config file and its own problems (not tied to an exported target).
        "config": display_path(run.workspace.config_file, root),
        "config_diagnostics": [_diagnostic(f, None, run.workspace) for f in run.workspace.findings],
    }


def render_json(run: CheckRun) -> str:
    return json.dumps(to_json_data(run), indent=2) + "\n"


# --- SARIF 2.1.0 ---------------------------------------------------------------------------

def _artifact(path: str, root: Path) -> dict[str, Any]:
    shown = display_path(path, root)
    if Path(shown).is_absolute():
        return {"uri": Path(shown).as_uri()}
    return {"uri": quote(shown), "uriBaseId": "%SRCROOT%"}


def _sarif_result(finding: Finding, targets: list[str | None], workspace: Workspace, rule_index: int) -> dict[str, Any]:
    target = targets[0]
    location = located(finding, target, workspace)
    result: dict[str, Any] = {
        "ruleId": finding.code,
        "ruleIndex": rule_index,
        "level": SARIF_LEVELS.get(finding.severity, "note"),
        "message": {"text": message_of(finding)},
        "locations": [{
            "physicalLocation": {
                "artifactLocation": _artifact(location.file, workspace.root),
                "region": {
                    "startLine": location.line,
                    "startColumn": location.column,
                    "endLine": location.end_line,
                    "endColumn": location.end_column,
                },
            },
        }],
        "relatedLocations": [
            {
                "id": index,
                "physicalLocation": {
                    "artifactLocation": _artifact(related.file, workspace.root),
                    "region": {"startLine": related.line, "startColumn": related.column},
                },
                "message": {"text": related.message},
            }
            for index, related in enumerate(finding.related, start=1)
        ],
        "properties": {"stage": finding.stage, **({"target": target} if target else {}),
                       **({"targets": targets} if len(targets) > 1 else {})},
    }
    if finding.source_line:
        result["locations"][0]["physicalLocation"]["region"]["snippet"] = {"text": finding.source_line}
    return result


def to_sarif_data(run: CheckRun) -> dict[str, Any]:
    codes = list(CODES)
    rules = [
        {
            "id": code,
            "name": "".join(part.capitalize() for part in code.split("-")),
            "shortDescription": {"text": CODE_DESCRIPTIONS.get(code, code)},
            "helpUri": CODE_HELP.get(code, INFORMATION_URI),
            "defaultConfiguration": {"level": SARIF_LEVELS.get(CODES[code], "note")},
        }
        for code in codes
    ]
    results = [
        _sarif_result(finding, targets, run.workspace, codes.index(finding.code) if finding.code in codes else -1)
        for targets, finding in run.shown
    ]
    for result in results:
        if result["ruleIndex"] < 0:
            del result["ruleIndex"]
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "onnxlens",
                "version": version(),
                "informationUri": INFORMATION_URI,
                "rules": rules,
            }},
            "originalUriBaseIds": {"%SRCROOT%": {"uri": run.workspace.root.resolve().as_uri() + "/"}},
            "invocations": [{"executionSuccessful": True}],
            "results": results,
        }],
    }


def render_sarif(run: CheckRun) -> str:
    return json.dumps(to_sarif_data(run), indent=2) + "\n"


RENDERERS: dict[str, Callable[[CheckRun], str]] = {
    "text": render_text,
    "json": render_json,
    "sarif": render_sarif,
}
