"""The report's "Change since the last export": this export's graph against the previous one of
the target (exporter/graph_change.py), as the editor shows it (status, lenses, notices).

The previous graph comes with the job: the language server keeps each target's last one and
sends it along. `onnxlens check` sends none, so its reports compare with nothing.
"""

from __future__ import annotations

from typing import Callable

from onnxlens.exporter.graph_change import graph_change
from onnxlens.exporter.types import ExportedGraph, ExportResult


def change_section(previous: ExportedGraph | None, result: ExportResult, display: Callable[[str], str]) -> str | None:
    """The section's body; None when there is nothing to compare (the caller says why).
    `display`: how the report writes a path."""
    current = ExportedGraph.of(result)
    if previous is None or current is None:
        return None
    change = graph_change(previous, current)
    if change.unchanged:
        return "The graph is the same as in the last export: the same nodes, initializers, inputs and outputs.\n"
    before, after = change.initializer_bytes_before, change.initializer_bytes_before + change.initializer_bytes
    lines = [f"**{change.describe()}** (initializers: {before:,} B → {after:,} B)", ""]
    if change.ops_added or change.ops_removed:
        lines += ["| ONNX op | before | after | change |", "|---|---:|---:|---:|"]
        for op in sorted(set(change.ops_added) | set(change.ops_removed)):
            now = current.graph.ops.get(op, 0)
            was = previous.graph.ops.get(op, 0)
            lines.append(f"| `{op}` | {was} | {now} | {now - was:+d} |")
        lines.append("")
    if change.values:
        lines += ["Inputs and outputs:", ""] + [f"- {value}" for value in change.values] + [""]
    if change.lines:
        lines += ["Lines whose nodes changed (matched by their text):", "",
                  "| line | code | change |", "|---|---|---|"]
        for line in change.lines:
            where = f"{display(line.file)}:{line.line}"
            note = " (gone)" if line.gone else " (new)" if line.new else ""
            lines.append(f"| `{where}` | `{line.code}` | {line.describe()}{note} |")
        lines.append("")
    if change.notices:
        lines += ["Worth a look (shown as information diagnostics in the editor):", ""]
        for notice in change.notices:
            where = f"`{display(notice.location.file)}:{notice.location.line}`: " if notice.location else ""
            lines.append(f"- {where}{notice.message}")
        lines.append("")
    return "\n".join(lines)
