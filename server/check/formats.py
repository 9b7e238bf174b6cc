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

import dataclasses

import json
import os
import re
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any, Callable
from urllib.parse import quote

from onnxlens.exporter.types import CODES, ExportResult, Finding, Location
from onnxlens.server.check.fingerprints import SARIF_KEY, fingerprint_base, numbered
from onnxlens.server.check.gate import GATE_CODES, GateVerdict
from onnxlens.server.check.graphs import GateGraph
from onnxlens.server.check.shards import Shard
from onnxlens.server.check.source_lines import read_line
from onnxlens.server.config import Config
from onnxlens.server.rules import rules
from onnxlens.server.shared_findings import grouped, merged, problem_key

INFORMATION_URI = "https://pypi.org/project/onnxlens/"
SARIF_SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"

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

    config: Config
    results: list[ExportResult] = field(default_factory=list)
    seconds: float = 0.0
    selection: list[str] = field(default_factory=list)  # --target names; empty: every target
    # What a baseline needs (`--save-baseline`, `--baseline`): each exported target's graph, read
    # from its .onnx (server/check/graphs.py); None: not collected, and the JSON has no `graph`/`lines`.
    graphs: dict[str, GateGraph | None] | None = None
    gate: GateVerdict | None = None  # the comparison with `--baseline`
    shard: Shard | None = None  # `--shard K/N`: which part of the selection this run exported
    memory_mb: dict[str, float] = field(default_factory=dict)  # target -> its export's peak memory

    @property
    def invalid_targets(self) -> list[str]:
        """Selected targets left out because of config errors."""
        valid = {spec.name for spec in self.config.targets}
        return [name for name in self.config.target_lines
                if name not in valid and (not self.selection or name in self.selection)]

    @property
    def findings(self) -> list[tuple[str | None, Finding]]:
        """(target name or None for config findings, finding), config findings first."""
        pairs: list[tuple[str | None, Finding]] = [(None, f) for f in self.config.findings]
        for result in self.results:
            pairs.extend((result.target, f) for f in self.target_findings(result))
        return pairs

    def target_findings(self, result: ExportResult) -> list[Finding]:
        """The export's findings, then the gate's regressions of the target."""
        regressions = self.gate.findings.get(result.target, []) if self.gate is not None else []
        return [*result.findings, *regressions]

    @property
    def shown(self) -> list[tuple[list[str | None], Finding]]:
        """The findings as the text output shows them: a problem several targets share once,
        naming them (server/shared_findings.py); config findings first."""
        keyed = ((problem_key(finding) if finding.location is not None else (target, index), (target, finding))
                 for index, (target, finding) in enumerate(self.findings))
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


def located(finding: Finding, target: str | None, config: Config) -> Location:
    """The finding's location with every field filled in (see the module docstring)."""
    location = finding.location
    if location is None or not location.file:
        location = config.place_in_config(target, finding)
    end_line = location.end_line or location.line
    end_column = location.end_column
    if end_column is None:
        # No columns known: the whole line (up to its end), as editors underline it.
        text = finding.source_line if finding.source_line is not None and end_line == location.line else None
        text = text if text is not None else read_line(location.file, end_line)
        end_column = max(len(text.rstrip()) + 1 if text else 0, location.column + 1)
    return Location(location.file, location.line, location.column, end_line, end_column)


_ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def message_of(finding: Finding) -> str:
    """The message without terminal colour codes (torch's errors carry some)."""
    return _ANSI_ESCAPE.sub("", finding.message)


@dataclass(frozen=True)
class Placed:
    """A finding of the run with its place filled in and its fingerprint (server/check/fingerprints.py)."""

    target: str | None
    finding: Finding
    location: Location
    fingerprint: str


def shown_placed(run: CheckRun) -> list[tuple[list[str | None], Placed]]:
    """placed_findings as SARIF shows them: a problem several targets share once, naming them
    (server/shared_findings.py), with the first target's fingerprint."""
    keyed = ((problem_key(p.finding) if p.finding.location is not None else (p.target, index), p)
             for index, p in enumerate(placed_findings(run)))
    return [([p.target for p in group],
             dataclasses.replace(group[0], finding=merged([str(p.target) for p in group], [p.finding for p in group])))
            for group in grouped(keyed)]


def placed_findings(run: CheckRun) -> list[Placed]:
    """run.findings, placed and fingerprinted: what every format shows."""
    root = run.config.root
    pairs = run.findings
    locations = [located(finding, target, run.config) for target, finding in pairs]
    bases = []
    for (target, finding), location in zip(pairs, locations):
        own_line = finding.location is not None and bool(finding.location.file) and finding.source_line is not None
        text = finding.source_line if own_line else read_line(location.file, location.line)
        bases.append(fingerprint_base(target=target, code=finding.code, path=display_path(location.file, root),
                                      line_text=text, message=message_of(finding), root=str(root)))
    return [Placed(target, finding, location, fingerprint)
            for (target, finding), location, fingerprint in zip(pairs, locations, numbered(bases))]


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
    root = run.config.root
    out: list[str] = []
    for targets, finding in run.shown:
        target = targets[0]
        location = located(finding, target, run.config)
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

def _diagnostic(placed: Placed, run: CheckRun) -> dict[str, Any]:
    root = run.config.root
    finding, location = placed.finding, placed.location
    data = {
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
        "fingerprint": placed.fingerprint,  # extension: the finding's identity across commits
    }
    if run.gate is not None:  # extension: with --baseline
        data["baseline_state"] = baseline_state(placed, run.gate)
    return data


def baseline_state(placed: Placed, gate: GateVerdict) -> str:
    """`new` or `unchanged` against the baseline; a regression the gate found is new."""
    return "new" if placed.finding.code in GATE_CODES else gate.states.get(placed.fingerprint, "new")


def _rounded(seconds: float) -> float:
    return round(seconds, 3)


def _lines(result: ExportResult, root: Path) -> list[dict[str, Any]]:
    """What each source line became (LineInfo), with its text: the gate matches lines by text."""
    return [{"file": display_path(info.file, root), "line": info.line,
             "text": (read_line(info.file, info.line) or "").strip(), "ops": info.ops, "modules": info.modules}
            for info in result.lines]


def _cost(result: ExportResult, root: Path) -> dict[str, Any]:
    """The profiled run by line (InferenceCost), paths as the rest of the JSON gives them."""
    data = result.cost.to_dict()
    data["profile"] = _optional_path(result.cost.profile, root)
    data["lines"] = [{**line, "file": display_path(line["file"], root)} for line in data["lines"]]
    return data


def _target_data(result: ExportResult, run: CheckRun, diagnostics: list[dict[str, Any]]) -> dict[str, Any]:
    root = run.config.root
    data: dict[str, Any] = {
        "name": result.target,
        "status": result.status,
        "onnx": _optional_path(result.onnx, root),
        "onnx_data": _optional_path(result.onnx_data, root),  # extension: the weights' file it names
        "graph_onnx": _optional_path(result.graph_onnx, root),  # extension: weights-free models
        "report": _optional_path(result.report, root),
        "seconds": _rounded(result.seconds),
        "stages": {stage: _rounded(s) for stage, s in result.stages.items()},
        "verification": result.verification.to_dict() if result.verification is not None else None,
        "diagnostics": diagnostics,
        "cached": result.cached,  # extension
        "node_count": result.node_count,  # extension
    }
    if result.cost is not None:  # extension: what each line costs at inference (the target's `profile`)
        data["cost"] = _cost(result, root)
    if result.target in run.memory_mb:  # extension: the export process's peak memory (not for cached results)
        data["memory_mb"] = round(run.memory_mb[result.target], 1)
    if run.graphs is not None:  # extensions of a baseline: the graph and what each line became
        graph = run.graphs.get(result.target)
        data["graph"] = graph.to_dict() if graph is not None else None
        data["lines"] = _lines(result, root)
    return data


def to_json_data(run: CheckRun) -> dict[str, Any]:
    root = run.config.root
    by_target: dict[str | None, list[dict[str, Any]]] = {}
    for placed in placed_findings(run):
        by_target.setdefault(placed.target, []).append(_diagnostic(placed, run))
    data: dict[str, Any] = {
        "version": 1,
        "targets": [_target_data(result, run, by_target.get(result.target, [])) for result in run.results],
        # Extensions: the config file and its own problems (not tied to an exported target).
        "config": display_path(run.config.config_file, root),
        "config_diagnostics": by_target.get(None, []),
    }
    if run.shard is not None:  # extension: `onnxlens merge` joins the shards in this order
        data["shard"] = run.shard.to_dict()
    if run.gate is not None:  # extension: the regression gate
        data["gate"] = gate_data(run.gate, data)
    return data


def gate_data(gate: GateVerdict, data: dict[str, Any]) -> dict[str, Any]:
    """The JSON's `gate`: the verdict and its counts (the regressions are diagnostics of their targets)."""
    diagnostics = [d for t in data["targets"] for d in t["diagnostics"]] + data["config_diagnostics"]
    new = len(gate.new_findings(diagnostics))
    return {
        "baseline": gate.baseline,
        "passed": gate.regressions == 0 and new == 0,
        "regressions": gate.regressions,
        "new_findings": new,
        "config_new_findings": len(gate.new_findings(data["config_diagnostics"])),  # of new_findings
        "measures": gate.measures,
        "fixed": [{key: d[key] for key in ("target", "file", "line", "severity", "code", "message", "fingerprint")}
                  for d in gate.fixed],
        "new_targets": gate.new_targets,
        "removed_targets": gate.removed_targets,
        "notes": gate.notes,
        "thresholds": gate.thresholds.to_dict(),
    }


def render_json(run: CheckRun) -> str:
    return json.dumps(to_json_data(run), indent=2) + "\n"


# --- SARIF 2.1.0 ---------------------------------------------------------------------------

def _artifact(path: str, root: Path) -> dict[str, Any]:
    shown = display_path(path, root)
    if Path(shown).is_absolute():
        return {"uri": Path(shown).as_uri()}
    return {"uri": quote(shown), "uriBaseId": "%SRCROOT%"}


def _sarif_result(placed: Placed, targets: list[str | None], run: CheckRun, rule_index: int) -> dict[str, Any]:
    finding, location, root = placed.finding, placed.location, run.config.root
    result: dict[str, Any] = {
        "ruleId": finding.code,
        "ruleIndex": rule_index,
        "level": SARIF_LEVELS.get(finding.severity, "note"),
        "message": {"text": message_of(finding)},
        "locations": [{
            "physicalLocation": {
                "artifactLocation": _artifact(location.file, root),
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
                    "artifactLocation": _artifact(related.file, root),
                    "region": {"startLine": related.line, "startColumn": related.column},
                },
                "message": {"text": related.message},
            }
            for index, related in enumerate(finding.related, start=1)
        ],
        "partialFingerprints": {SARIF_KEY: placed.fingerprint},
        "properties": {"stage": finding.stage, **({"target": placed.target} if placed.target else {}),
                       **({"targets": targets} if len(targets) > 1 else {})},
    }
    if run.gate is not None:
        result["baselineState"] = baseline_state(placed, run.gate)
    if finding.source_line:
        result["locations"][0]["physicalLocation"]["region"]["snippet"] = {"text": finding.source_line}
    return result


def sarif_rules() -> list[dict[str, Any]]:
    """One rule per diagnostic code, its help from docs/diagnostics.md (server/rules.py)."""
    documented = rules()
    codes = {**CODES, **GATE_CODES}
    out = []
    for code in [*codes, *(c for c in documented if c not in codes)]:
        rule = documented.get(code)
        severity = codes.get(code) or (rule.severity if rule else "error")
        entry: dict[str, Any] = {
            "id": code,
            "name": "".join(part.capitalize() for part in code.split("-")),
            "shortDescription": {"text": rule.summary if rule else code},
            "helpUri": CODE_HELP.get(code, INFORMATION_URI),
            "defaultConfiguration": {"level": SARIF_LEVELS.get(severity, "note")},
        }
        if rule is not None:
            entry["fullDescription"] = {"text": rule.description}
            entry["help"] = {"text": rule.description, "markdown": rule.markdown}
        out.append(entry)
    return out


def to_sarif_data(run: CheckRun) -> dict[str, Any]:
    rule_list = sarif_rules()
    index = {rule["id"]: number for number, rule in enumerate(rule_list)}
    results = [_sarif_result(placed, targets, run, index.get(placed.finding.code, -1))
               for targets, placed in shown_placed(run)]
    for result in results:
        if result["ruleIndex"] < 0:
            del result["ruleIndex"]
    sarif_run: dict[str, Any] = {
        "tool": {"driver": {
            "name": "onnxlens",
            "version": version(),
            "informationUri": INFORMATION_URI,
            "rules": rule_list,
        }},
        "originalUriBaseIds": {"%SRCROOT%": {"uri": run.config.root.resolve().as_uri() + "/"}},
        "invocations": [{"executionSuccessful": True}],
        "results": results,
    }
    if run.shard is not None:  # `onnxlens merge` joins the shards in this order
        sarif_run["properties"] = {"shard": run.shard.to_dict()}
    return {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [sarif_run]}


def render_sarif(run: CheckRun) -> str:
    return json.dumps(to_sarif_data(run), indent=2) + "\n"


RENDERERS: dict[str, Callable[[CheckRun], str]] = {
    "text": render_text,
    "json": render_json,
    "sarif": render_sarif,
}
