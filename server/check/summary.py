"""The markdown summary of a check for a pull-request comment (`--summary FILE` of `onnxlens
check` and `onnxlens merge`), written from the JSON result alone (docs/cli.md), so a merged
result of shards gives the same summary as the unsharded run.

It starts with a marker line (`<!-- onnxlens-summary -->`) by which a CI step finds its earlier
comment to update, then the verdict: the gate's when a baseline was compared (regressions, new
findings, fixed findings, and per target the measures that changed), else the check's counts and
its error findings. Lists are cut at LISTED items (a comment has a size limit).
"""

from __future__ import annotations

from typing import Any

from onnxlens.server.check.gate import GATE_CODES, size_text

MARKER = "<!-- onnxlens-summary -->"
LISTED = 50


def _first_line(text: str) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line.replace("|", "\\|")


def _item(diagnostic: dict[str, Any], target: str | None) -> str:
    where = f"`{diagnostic['file']}:{diagnostic['line']}`"
    owner = f" ({target})" if target else ""
    return f"- {where} **{diagnostic['code']}** {diagnostic['severity']}{owner}: {_first_line(diagnostic['message'])}"


def _listed(items: list[str]) -> list[str]:
    if len(items) <= LISTED:
        return items
    return [*items[:LISTED], f"- … and {len(items) - LISTED} more (the full list is in the check's output)"]


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def _pairs(data: dict[str, Any]) -> list[tuple[str | None, dict[str, Any]]]:
    pairs: list[tuple[str | None, dict[str, Any]]] = [(None, d) for d in data["config_diagnostics"]]
    pairs.extend((t["name"], d) for t in data["targets"] for d in t["diagnostics"])
    return pairs


def _measure(name: str, values: list[Any]) -> str:
    before, now = values
    if before == now or before is None and now is None:
        return "" if name != "status" else str(now)
    if name == "initializer_bytes":
        shown = [size_text(v) if v is not None else "–" for v in (before, now)]
    elif name == "max_abs_diff":
        shown = [f"{v:.3g}" if v is not None else "–" for v in (before, now)]
    else:
        shown = [str(v) if v is not None else "–" for v in (before, now)]
    return f"{shown[0]} → {shown[1]}"


def render_summary(data: dict[str, Any]) -> str:
    gate = data.get("gate")
    return "\n".join([MARKER, *(_gate_summary(data, gate) if gate else _check_summary(data))]) + "\n"


def _check_summary(data: dict[str, Any]) -> list[str]:
    targets = data["targets"]
    failed = [t["name"] for t in targets if t["status"] != "ok"]
    pairs = _pairs(data)
    errors = [(target, d) for target, d in pairs if d["severity"] == "error"]
    warnings = sum(1 for _, d in pairs if d["severity"] == "warning")
    verdict = "passed" if not errors and not failed else "failed"
    lines = [f"### onnxlens check {verdict}: {_plural(len(targets), 'target')}, {len(failed)} failed "
             f"({_plural(len(errors), 'error')}, {_plural(warnings, 'warning')})", ""]
    if errors:
        lines += ["**Errors**", "", *_listed([_item(d, target) for target, d in errors]), ""]
    return lines


def _gate_summary(data: dict[str, Any], gate: dict[str, Any]) -> list[str]:
    pairs = _pairs(data)
    regressions = [(t, d) for t, d in pairs if d["code"] in GATE_CODES]
    new = [(t, d) for t, d in pairs if d.get("baseline_state") == "new" and d["code"] not in GATE_CODES
           and d["severity"] in ("error", "warning")]
    verdict = "passed" if gate["passed"] else "failed"
    lines = [f"### onnxlens regression gate {verdict}: {_plural(gate['regressions'], 'regression')}, "
             f"{_plural(gate['new_findings'], 'new finding')}, {len(gate['fixed'])} fixed "
             f"in {_plural(len(data['targets']), 'target')}", "",
             f"Compared with `{gate['baseline']}`; thresholds: node count ±{gate['thresholds']['node-count-percent']:g} %, "
             f"initializers ±{gate['thresholds']['initializer-size-percent']:g} %, verification error "
             f"×{gate['thresholds']['verification-error-factor']:g}.", ""]
    if regressions:
        lines += ["**Regressions**", "", *_listed([_item(d, t) for t, d in regressions]), ""]
    if new:
        lines += ["**New findings**", "", *_listed([_item(d, t) for t, d in new]), ""]
    if gate["fixed"]:
        lines += ["**Fixed since the baseline**", "", *_listed([_item(d, d["target"]) for d in gate["fixed"]]), ""]
    # Targets whose export, graph size or weights changed (verification differences move a little
    # on every run: they are shown only beside those).
    regressed = {t for t, _ in regressions}
    changed = {name: m for name, m in gate["measures"].items()
               if name in regressed or any(m[key][0] != m[key][1] for key in ("status", "node_count", "initializer_bytes"))}
    if changed:
        lines += ["| target | status | ONNX nodes | initializers | max abs diff |", "|---|---|---|---|---|"]
        lines += _listed([f"| {name} | {_measure('status', m['status'])} | {_measure('node_count', m['node_count'])} | "
                          f"{_measure('initializer_bytes', m['initializer_bytes'])} | "
                          f"{_measure('max_abs_diff', m['max_abs_diff'])} |" for name, m in changed.items()])
        lines.append("")
    extra = []
    if gate["new_targets"]:
        extra.append(f"New targets (not in the baseline): {', '.join(gate['new_targets'])}.")
    if gate["removed_targets"]:
        extra.append(f"Targets of the baseline no longer configured: {', '.join(gate['removed_targets'])}.")
    extra.extend(gate["notes"])
    if extra:
        lines += ["<details><summary>Notes</summary>", "", *(f"- {note}" for note in extra), "", "</details>", ""]
    return lines
