"""The regression gate: `onnxlens check --baseline FILE` against a result saved from the main branch.

Both sides are JSON results (docs/cli.md): the baseline as `--save-baseline` wrote it, the current
run as server/check/formats.py renders it with the details a comparison needs (`graph` and `lines` per
target). The gate compares them target by target, only for the targets this run exported (a
shard, a `--target` selection), and says:

* each finding of this run as `new` or `unchanged` (by fingerprint, server/check/fingerprints.py), and
  the baseline's findings that are gone (`fixed`);
* regressions, each a finding of its own code (GATE_CODES, docs/diagnostics.md), on the line
  responsible where one is known, else on the model's definition:
  - `stopped-exporting`: the target exported in the baseline and fails now (on its first error);
  - `new-op`: an ONNX operator type the baseline's graph did not have (on each line that makes it);
  - `node-count`: the ONNX node count changed by more than `node-count-percent` (on the line whose
    node count changed most, lines matched by their text, so lines that only moved count as the
    same line);
  - `initializer-size`: the initializers' total size changed by more than
    `initializer-size-percent` (on a line that uses the module whose initializers changed most);
  - `static-axis`: an input or output axis with a name (dynamic) in the baseline has a fixed size
    now (on the line torch.export reported fixing it, else the dynamic-shapes factory);
  - `verification-error`: onnxruntime's largest difference from torch grew by more than
    `verification-error-factor` times and by more than the verification's `atol` (the target's,
    else its outputs' dtype's; the noise floor is left out).

The gate passes when there is no regression and no new error or warning finding: the findings the
baseline already had do not fail it. Gate findings in a baseline (saved by a run that compared
with an older one) are left out of the comparison.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from onnxlens.exporter import references
from onnxlens.exporter.types import Finding, Location, Related
from onnxlens.server.check.source_lines import read_line
from onnxlens.server.config import Config

GATE_CODES = {
    "stopped-exporting": "error",
    "new-op": "error",
    "node-count": "error",
    "initializer-size": "error",
    "static-axis": "error",
    "verification-error": "error",
}
FAILING_SEVERITIES = ("error", "warning")  # a new finding of these fails the gate
RELATED_KEPT = 5  # further lines named as related locations of one regression


class BaselineError(Exception):
    """The baseline file cannot be used: a message for the user."""


@dataclass(frozen=True)
class Thresholds:
    """[tool.onnxlens.gate] (docs/configuration.md); a change up to the threshold passes."""

    node_count_percent: float = 10.0
    initializer_size_percent: float = 10.0
    verification_error_factor: float = 10.0

    @classmethod
    def from_config(cls, gate: dict[str, float]) -> Thresholds:
        names = {"node-count-percent": "node_count_percent", "initializer-size-percent": "initializer_size_percent",
                 "verification-error-factor": "verification_error_factor"}
        return cls(**{names[key]: float(value) for key, value in gate.items() if key in names})

    def to_dict(self) -> dict[str, float]:
        return {"node-count-percent": self.node_count_percent,
                "initializer-size-percent": self.initializer_size_percent,
                "verification-error-factor": self.verification_error_factor}


@dataclass
class GateVerdict:
    baseline: str  # the baseline file, as given
    thresholds: Thresholds
    findings: dict[str, list[Finding]] = field(default_factory=dict)  # target -> its regressions
    states: dict[str, str] = field(default_factory=dict)  # fingerprint -> "new" | "unchanged"
    fixed: list[dict[str, Any]] = field(default_factory=list)  # the baseline's diagnostics now gone (+ "target")
    new_targets: list[str] = field(default_factory=list)  # exported now, absent from the baseline
    removed_targets: list[str] = field(default_factory=list)  # in the baseline, no longer configured
    notes: list[str] = field(default_factory=list)  # comparisons that could not be made, and why
    # target -> measure -> [baseline, now]: status, node_count, initializer_bytes, max_abs_diff
    measures: dict[str, dict[str, list[Any]]] = field(default_factory=dict)

    @property
    def regressions(self) -> int:
        return sum(len(found) for found in self.findings.values())

    def new_findings(self, diagnostics: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The diagnostics (JSON) that are new and fail the gate."""
        return [d for d in diagnostics if d["code"] not in GATE_CODES and d["severity"] in FAILING_SEVERITIES
                and self.states.get(d["fingerprint"]) == "new"]


def load_baseline(path: Path) -> dict[str, Any]:
    """A JSON result saved by `--save-baseline` (or `--format json`, or `onnxlens merge`)."""
    import json

    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BaselineError(f"baseline {path}: no such file") from None
    except (OSError, UnicodeDecodeError, ValueError) as error:
        raise BaselineError(f"baseline {path} is not a JSON result of onnxlens: {error}") from None
    if not isinstance(data, dict) or data.get("version") != 1 or not isinstance(data.get("targets"), list):
        raise BaselineError(f"baseline {path} is not a JSON result of onnxlens (version 1, with `targets`)")
    diagnostics = [d for t in data["targets"] for d in t.get("diagnostics", [])] + data.get("config_diagnostics", [])
    if any("fingerprint" not in d for d in diagnostics):
        raise BaselineError(f"baseline {path} has findings without fingerprints: save it again with this "
                            "onnxlens (`onnxlens check --save-baseline FILE`)")
    return data


def compare(baseline: dict[str, Any], current: dict[str, Any], config: Config, thresholds: Thresholds,
            baseline_name: str) -> GateVerdict:
    """The verdict on `current` (this run's JSON result with details) against `baseline`."""
    verdict = GateVerdict(baseline=baseline_name, thresholds=thresholds)
    before_targets = {t["name"]: t for t in baseline["targets"]}
    _classify(verdict, baseline.get("config_diagnostics", []), current["config_diagnostics"], None)
    for target in current["targets"]:
        name = target["name"]
        before = before_targets.get(name)
        if before is None:
            verdict.new_targets.append(name)
            _classify(verdict, [], target["diagnostics"], name)
            continue
        _classify(verdict, before["diagnostics"], target["diagnostics"], name)
        verdict.measures[name] = {measure: [_measure(before, measure), _measure(target, measure)]
                                  for measure in MEASURES}
        spec = next((s for s in config.targets if s.name == name), None)
        fallback = references.model_definition(spec) if spec is not None else None
        regressions = _Comparison(before, target, config.root, thresholds, fallback, spec, verdict.notes).run()
        if regressions:
            verdict.findings[name] = regressions
    verdict.removed_targets = [name for name in before_targets if name not in config.target_lines]
    return verdict


MEASURES = ("status", "node_count", "initializer_bytes", "max_abs_diff")


def _measure(target: dict[str, Any], measure: str) -> Any:
    if measure == "status":
        return target["status"]
    if measure == "max_abs_diff":
        return (target.get("verification") or {}).get("max_abs_diff")
    return (target.get("graph") or {}).get(measure)


def _classify(verdict: GateVerdict, before: list[dict[str, Any]], now: list[dict[str, Any]],
              target: str | None) -> None:
    known = {d["fingerprint"] for d in before if d["code"] not in GATE_CODES}
    found = {d["fingerprint"] for d in now}
    for diagnostic in now:
        verdict.states[diagnostic["fingerprint"]] = "unchanged" if diagnostic["fingerprint"] in known else "new"
    verdict.fixed.extend({**d, "target": target} for d in before
                         if d["code"] not in GATE_CODES and d["fingerprint"] not in found)


def _percent(before: float, now: float) -> float:
    return (now - before) / before * 100 if before else (0.0 if now == before else float("inf"))


def _signed_percent(value: float) -> str:
    return "new" if value == float("inf") else f"{value:+.1f} %"


def size_text(size: float) -> str:
    """Bytes as people read them (binary units)."""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(size) < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GiB"


class _Comparison:
    """One target's regressions (see the module docstring)."""

    def __init__(self, before: dict[str, Any], now: dict[str, Any], root: Path, thresholds: Thresholds,
                 fallback: Location | None, spec: Any, notes: list[str]) -> None:
        self.before, self.now, self.root = before, now, root
        self.thresholds = thresholds
        self.fallback = fallback  # the model's definition
        self.spec = spec
        self.notes = notes
        self.name = now["name"]
        self.found: list[Finding] = []

    def run(self) -> list[Finding]:
        if self.before["status"] == "ok" and self.now["status"] != "ok":
            self.stopped_exporting()
        if self.before["status"] == "ok" and self.now["status"] == "ok":
            graph_before, graph_now = self.before.get("graph"), self.now.get("graph")
            if graph_before is None or graph_now is None:
                side = "the baseline" if graph_before is None else "this run"
                self.notes.append(f"{self.name}: {side} has no graph data (saved without --save-baseline, or the "
                                  ".onnx could not be read): ops, node count, initializers and axes not compared")
            else:
                self.new_ops(graph_before, graph_now)
                self.node_count(graph_before, graph_now)
                self.initializer_size(graph_before, graph_now)
                self.static_axes(graph_before, graph_now)
            self.verification_error()
        return self.found

    # -- places ------------------------------------------------------------------------------

    def _path(self, entry: dict[str, Any]) -> str:
        file = entry["file"]
        return file if Path(file).is_absolute() else str(self.root / file)

    def _location(self, entry: dict[str, Any]) -> Location:
        column = entry.get("column")
        if column is None:  # a line of `lines`: from its first character
            text = read_line(self._path(entry), entry["line"]) or ""
            column = len(text) - len(text.lstrip()) + 1
        return Location(self._path(entry), entry["line"], column, entry.get("end_line"), entry.get("end_column"))

    def _related(self, entry: dict[str, Any], message: str) -> Related:
        return Related(self._path(entry), entry["line"], message)

    def add(self, code: str, message: str, where: dict[str, Any] | None, related: list[Related] | None = None,
            ) -> None:
        location = self._location(where) if where is not None else self.fallback
        text = read_line(location.file, location.line) if location is not None else None
        self.found.append(Finding(code=code, severity=GATE_CODES[code], stage="gate", message=message,
                                  location=location, related=related or [], source_line=text))

    def _lines_by_text(self, lines: list[dict[str, Any]]) -> dict[tuple[str, str], list[dict[str, Any]]]:
        grouped: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
        for line in lines:
            grouped[(line["file"], line["text"])].append(line)
        return grouped

    # -- the checks ----------------------------------------------------------------------------

    def stopped_exporting(self) -> None:
        errors = [d for d in self.now["diagnostics"] if d["severity"] == "error" and d["code"] not in GATE_CODES]
        first = errors[0] if errors else None
        reason = f": {first['message'].splitlines()[0]}" if first else ""
        self.add("stopped-exporting", f"`{self.name}` exported in the baseline and fails now{reason}", first,
                 [self._related(d, f"also failing: [{d['code']}] {d['message'].splitlines()[0]}")
                  for d in errors[1:1 + RELATED_KEPT]])

    def new_ops(self, before: dict[str, Any], now: dict[str, Any]) -> None:
        added = sorted(set(now["ops"]) - set(before["ops"]))
        if not added:
            return
        placed: set[str] = set()
        for line in self.now.get("lines", []):
            here = [op for op in added if op in line["ops"]]
            if here:
                placed.update(here)
                counts = ", ".join(f"{op} ×{line['ops'][op]}" for op in here)
                self.add("new-op", f"new ONNX operator{'s' if len(here) > 1 else ''} in `{self.name}`: {counts} "
                         f"on this line; the baseline's graph has no {', '.join(here)}", line)
        unplaced = [op for op in added if op not in placed]
        if unplaced:
            counts = ", ".join(f"{op} ×{now['ops'][op]}" for op in unplaced)
            self.add("new-op", f"new ONNX operator{'s' if len(unplaced) > 1 else ''} in `{self.name}`: {counts} "
                     "(no line of the workspace made them); the baseline's graph has none", None)

    def node_count(self, before: dict[str, Any], now: dict[str, Any]) -> None:
        change = _percent(before["node_count"], now["node_count"])
        if abs(change) <= self.thresholds.node_count_percent:
            return
        lines_before = self._lines_by_text(self.before.get("lines", []))
        lines_now = self._lines_by_text(self.now.get("lines", []))
        deltas: list[tuple[int, dict[str, Any], str]] = []
        for key in {*lines_before, *lines_now}:
            ops_before = _summed(lines_before.get(key, []))
            ops_now = _summed(lines_now.get(key, []))
            delta = sum(ops_now.values()) - sum(ops_before.values())
            if delta and key in lines_now:
                detail = ", ".join(f"{op} {ops_now.get(op, 0) - ops_before.get(op, 0):+d}"
                                   for op in sorted({*ops_before, *ops_now}) if ops_now.get(op, 0) != ops_before.get(op, 0))
                deltas.append((delta, lines_now[key][0], detail))
        grows = now["node_count"] > before["node_count"]
        deltas = sorted((d for d in deltas if (d[0] > 0) == grows),
                        key=lambda d: (-abs(d[0]), d[1]["file"], d[1]["line"]))
        total = (f"ONNX node count of `{self.name}`: {before['node_count']} → {now['node_count']} "
                 f"({_signed_percent(change)}, threshold {self.thresholds.node_count_percent:g} %)")
        if not deltas:
            self.add("node-count", f"{total}; no line of the workspace made the difference", None)
            return
        delta, line, detail = deltas[0]
        self.add("node-count", f"{total}: {delta:+d} on this line ({detail})", line,
                 [self._related(other, f"{d:+d} nodes here ({what})") for d, other, what in deltas[1:1 + RELATED_KEPT]])

    def initializer_size(self, before: dict[str, Any], now: dict[str, Any]) -> None:
        change = _percent(before["initializer_bytes"], now["initializer_bytes"])
        if abs(change) <= self.thresholds.initializer_size_percent:
            return
        modules = {*before["initializers"], *now["initializers"]}
        changed = sorted(((now["initializers"].get(m, 0) - before["initializers"].get(m, 0), m) for m in modules),
                         key=lambda item: (-abs(item[0]), item[1]))
        changed = [(delta, module) for delta, module in changed if delta]
        described = "; ".join(f"`{module}` {'+' if delta > 0 else '-'}{size_text(abs(delta))}"
                              + (" (new)" if module not in before["initializers"] else
                                 " (removed)" if module not in now["initializers"] else "")
                              for delta, module in changed[:RELATED_KEPT])
        total = (f"initializers of `{self.name}`: {size_text(before['initializer_bytes'])} → "
                 f"{size_text(now['initializer_bytes'])} ({_signed_percent(change)}, threshold "
                 f"{self.thresholds.initializer_size_percent:g} %): {described}")
        for _, module in changed:  # the module that changed most and has a line using it
            using = [line for line in self.now.get("lines", [])
                     if any(m == module or m.startswith(module + ".") for m in line.get("modules", []))]
            if using:
                self.add("initializer-size", f"{total}; this line uses `{module}`", using[0],
                         [self._related(line, f"uses `{module}` too") for line in using[1:1 + RELATED_KEPT]])
                return
        self.add("initializer-size", f"{total}; no line of the workspace uses the modules that changed", None)

    def static_axes(self, before: dict[str, Any], now: dict[str, Any]) -> None:
        """Inputs and outputs matched by position (the exporter names outputs after their nodes,
        which a change elsewhere renames)."""
        for kind in ("inputs", "outputs"):
            for was_value, value in zip(before[kind], now[kind]):
                if len(was_value["dims"]) != len(value["dims"]):
                    continue
                for axis, (was, size) in enumerate(zip(was_value["dims"], value["dims"])):
                    if isinstance(was, str) and isinstance(size, int):
                        self._static_axis(kind[:-1], value["name"], axis, was, size)

    def _static_axis(self, kind: str, name: str, axis: int, was: str, size: int) -> None:
        message = (f"{kind} `{name}` axis {axis} of `{self.name}` was dynamic (`{was}`) in the baseline and is "
                   f"fixed to {size} now: the ONNX model only accepts that size")
        # torch.export's own warning says which line fixed a dimension declared dynamic.
        fixed_here = [d for d in self.now["diagnostics"] if d["code"] == "torch-export" and d["severity"] == "warning"]
        fixed_here.sort(key=lambda d: f"`{name}`" not in d["message"])
        if fixed_here:
            self.add("static-axis", f"{message} (fixed on this line)", fixed_here[0])
            return
        factory = references.definition_location(self.root, self.spec.dynamic_shapes) if self.spec else None
        if factory is not None:
            self.add("static-axis", f"{message} (no line fixing it was reported: see the dynamic shapes declared here)",
                     {"file": factory.file, "line": factory.line, "column": factory.column})
        else:
            self.add("static-axis", message, None)

    def verification_error(self) -> None:
        before, now = self.before.get("verification"), self.now.get("verification")
        if not before or not now or "max_abs_diff" not in before or "max_abs_diff" not in now:
            return
        was, diff = float(before["max_abs_diff"]), float(now["max_abs_diff"])
        atol = _atol(now)
        factor = self.thresholds.verification_error_factor
        if atol is None or diff <= was * factor or diff - was <= atol:
            return
        growth = f"×{diff / was:.3g}" if was else "from 0"
        message = (f"onnxruntime's largest difference from torch in `{self.name}` grew from {was:.3g} to {diff:.3g} "
                   f"({growth}, threshold ×{factor:g} and more than atol {atol:g})")
        mismatch = next((d for d in self.now["diagnostics"] if d["code"] == "mismatch"), None)
        self.add("verification-error", message + (" (first differing value on this line)" if mismatch else ""), mismatch)


def _atol(verification: dict[str, Any]) -> float | None:
    """The verification's absolute tolerance: the target's `atol`, else the smallest of its
    outputs' (each its dtype's: exporter/verify/tolerance.py), without the noise floor; None
    when nothing was compared."""
    if verification.get("atol") is not None:
        return float(verification["atol"])
    compared = [float(o["atol"]) for o in verification.get("outputs") or [] if o.get("atol") is not None]
    return min(compared, default=None)


def _summed(lines: list[dict[str, Any]]) -> dict[str, int]:
    ops: dict[str, int] = defaultdict(int)
    for line in lines:
        for op, count in line["ops"].items():
            ops[op] += count
    return ops
