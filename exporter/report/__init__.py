"""The markdown export report, written for every export, success or failure.

One stable path per target (spec.report), replaced atomically (exporter/atomic.py: readable like
the .onnx), so an editor tab showing it never sees half a file. Our findings come first (code,
severity, file:line, message, the source lines around it, the call chain), then the
verification (on a mismatch, whether the op is wrong or its inputs drifted: verdict_section.py)
and, when the run was profiled, the cost per line (cost_section.py), then torch's own report sections (exported program, analysis, decomposition
comparison; torch_sections.py) built with torch.onnx's report helpers. Each section copes with
missing inputs: an import failure has no program; a section that fails to build says so.
"""

from __future__ import annotations

import datetime
import linecache
import os
import re
from dataclasses import dataclass
from typing import Any, Callable

from onnxlens.exporter import atomic
from onnxlens.exporter.report.change_section import change_section
from onnxlens.exporter.report.cost_section import cost_section
from onnxlens.exporter.report.verdict_section import verdict_section
from onnxlens.exporter.types import STAGES, ExportedGraph, ExportResult, Finding, TargetSpec, VerificationSummary

EXCERPT_CONTEXT = 2  # source lines shown before and after a finding's line


@dataclass
class ReportInputs:
    """What the pipeline got as far as producing; every field is optional."""

    exported_program: Any = None  # torch.export.ExportedProgram as captured
    decomposed_program: Any = None  # after run_decompositions
    onnx_program: Any = None  # torch.onnx.ONNXProgram
    registry: Any = None  # the ONNX registry used
    error: BaseException | None = None  # the exception that stopped the pipeline, if any
    model: Any = None  # the nn.Module
    previous: ExportedGraph | None = None  # the target's previous export's graph, to say what changed


def write_report(spec: TargetSpec, result: ExportResult, inputs: ReportInputs | None = None) -> str:
    """Write the report to spec.report (atomically) and return its path.

    Our findings first (each with file:line, code and source excerpt), then the torch report
    sections (exported program, analysis, decomposition comparison, verification).
    """
    return atomic.write_text(spec.report, render_report(spec, result, inputs or ReportInputs()))


def render_report(spec: TargetSpec, result: ExportResult, inputs: ReportInputs) -> str:
    from onnxlens.exporter.report import torch_sections

    decomposed = inputs.decomposed_program
    if decomposed is None and inputs.onnx_program is not None:
        decomposed = getattr(inputs.onnx_program, "exported_program", None)
    program = decomposed if decomposed is not None else inputs.exported_program

    parts = [_header(spec, result)]
    parts.append(_section("Stages", lambda: _stages(result)))
    parts.append(_section(f"Findings ({len(result.findings)})", lambda: _findings(spec, result)))
    parts.append(_section("Change since the last export", lambda: change_section(
        inputs.previous, result, lambda path: _display_path(path, spec.root)),
        missing="Nothing to compare: this export built no ONNX graph." if result.graph is None else
        "Nothing to compare with: no earlier export of this target was given (the editor gives its last one; "
        "`onnxlens check` compares nothing)."))
    not_run = ("Skipped: the model's weights have no data (see the weights-free finding)." if _weights_free(result)
               else "Not run (verification is off, or the export stopped before it).")
    parts.append(_section("Verification", lambda: _verification(result.verification), missing=not_run))
    parts.append(_section("First mismatch: this op or drift", lambda: verdict_section(result.verification), missing=None))
    parts.append(_section("Cost per line", lambda: cost_section(result.cost, lambda path: _display_path(path, spec.root)),
                          missing=None if not spec.profile else
                          "Not measured: the verification did not run, or onnxruntime's profile could not be read."))
    parts.append(_section("Error", lambda: torch_sections.traceback_section(inputs.error),
                          missing=None))
    parts.append(_section("Exported program", lambda: torch_sections.exported_program_section(
        program, decomposed=decomposed is not None, dump_path=result.exported_program),
        missing="Not available: the export stopped before torch.export captured a program."))
    parts.append(_section("Analysis", lambda: torch_sections.analysis_section(program, inputs.registry),
                          missing="Not available: no exported program."))
    parts.append(_section("Decomposition comparison", lambda: torch_sections.decomposition_section(
        inputs.exported_program, decomposed),
        missing="Not available: needs both the captured and the decomposed program."))
    parts.append(_section("ONNX model", lambda: torch_sections.onnx_model_section(inputs.onnx_program),
                          missing="Not available: no ONNX model was built."))
    return "\n".join(p for p in parts if p)


def _section(title: str, build: Callable[[], str | None], missing: str | None = "None.") -> str | None:
    """`## title` and the body; a body that fails to build says so instead of failing the report."""
    try:
        body = build()
    except Exception as error:  # noqa: BLE001 - one broken section must not lose the others
        body = f"_This section could not be built: {type(error).__name__}: {error}_\n"
    if body is None:
        if missing is None:
            return None
        body = f"{missing}\n"
    return f"## {title}\n\n{body}"


_EXPORT_ID = re.compile(r"^- Export id: `([0-9a-f]+)`$", re.MULTILINE)


def export_id_line(export_id: str) -> str:
    """The header line naming the export a report describes (ExportResult.export_id)."""
    return f"- Export id: `{export_id}`"


def export_id_of(head: str) -> str | None:
    """The export a report describes, from its first lines (None: no such line)."""
    match = _EXPORT_ID.search(head)
    return match.group(1) if match else None


# --- our sections ---------------------------------------------------------------------------


def _header(spec: TargetSpec, result: ExportResult) -> str:
    errors = sum(1 for f in result.findings if f.severity == "error")
    warnings = sum(1 for f in result.findings if f.severity == "warning")
    counts = f"{errors} error{'s' * (errors != 1)}, {warnings} warning{'s' * (warnings != 1)}"
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    lines = [
        f"# onnxlens export report: `{spec.name}` — {result.status}",
        "",
        f"- Status: **{result.status}** ({counts})",
        export_id_line(result.export_id),
        f"- Written: {now}",
        _total_time(result),
        f"- Model: `{spec.model}`, inputs: `{spec.inputs}`"
        + (f", dynamic shapes: `{spec.dynamic_shapes}`" if spec.dynamic_shapes else ""),
        f"- ONNX file: `{_display_path(result.onnx, spec.root)}`" if result.onnx
        else "- ONNX file: none written by this export",
    ]
    if result.onnx_data:
        lines.append(f"- Its weights: `{_display_path(result.onnx_data, spec.root)}`")
    if result.graph_onnx:
        lines.append(f"- Graph-only ONNX file (no weights): `{_display_path(result.graph_onnx, spec.root)}`")
    if result.exported_program:
        lines.append(f"- Exported program dump: `{_display_path(result.exported_program, spec.root)}`")
    if result.node_count is not None:
        lines.append(f"- ONNX nodes: {result.node_count}")
    return "\n".join(lines) + "\n"


def _weights_free(result: ExportResult) -> bool:
    """The model's weights had no data: the pipeline skipped optimization and verification."""
    return any(f.code == "weights-free" for f in result.findings)


def _total_time(result: ExportResult) -> str:
    if result.seconds:
        return f"- Total time: {result.seconds:.2f} s" + (" (cached result)" if result.cached else "")
    # The pipeline writes the report before it stamps the job's total: sum what ran.
    return f"- Time: {sum(result.stages.values()):.2f} s in the stages that ran"


def _stages(result: ExportResult) -> str:
    failed = {f.stage for f in result.findings if f.severity == "error"}
    warned = {f.stage for f in result.findings if f.severity == "warning"}
    skipped = {"verify"} if _weights_free(result) else set()
    rows = ["| stage | status | seconds |", "|---|---|---|"]
    stopped = False
    for stage in STAGES:
        seconds = result.stages.get(stage)
        if stage in failed:
            status, stopped = "failed", True
        elif stopped or seconds is None:
            status = "not run"
        elif stage in skipped:
            status = "skipped (no weights)"
        elif stage in warned:
            status = "warning"
        else:
            status = "ok"
        rows.append(f"| {stage} | {status} | {'' if seconds is None else f'{seconds:.3f}'} |")
    for stage, seconds in result.stages.items():  # stages the pipeline adds beyond the contract
        if stage not in STAGES:
            rows.append(f"| {stage} | | {seconds:.3f} |")
    return "\n".join(rows) + "\n"


def _findings(spec: TargetSpec, result: ExportResult) -> str:
    if not result.findings:
        return "None: no problems found.\n"
    order = {"error": 0, "warning": 1}  # then notes (info)
    findings = sorted(result.findings, key=lambda f: order.get(f.severity, 2))
    return "\n".join(_finding(i, f, spec.root) for i, f in enumerate(findings, 1))


def _finding(index: int, finding: Finding, root: str) -> str:
    loc = finding.location
    where = (f"{_display_path(loc.file, root)}:{loc.line}:{loc.column}" if loc
             else f"(the config's {finding.reference} value)" if finding.reference else "(no source location)")
    lines = [f"### {index}. {finding.severity}[{finding.code}] `{where}`", "",
             _quote(finding.message), ""]
    if finding.docs_url:
        lines += [f"Docs: {finding.docs_url}", ""]
    if loc:
        excerpt = _excerpt(loc.file, loc.line, loc.column, loc.end_line, loc.end_column,
                           fallback=finding.source_line)
        if excerpt:
            lines += [excerpt, ""]
    if finding.related:
        lines.append("Related:")
        lines += [f"- `{_display_path(r.file, root)}:{r.line}` {r.message}" for r in finding.related]
        lines.append("")
    for fix in finding.fixes:
        lines.append(f"Suggested fix: {fix.title} (`{_display_path(fix.file, root)}:{fix.line}`)")
    return "\n".join(lines)


def _quote(message: str) -> str:
    return "\n".join(f"> {line}" if line else ">" for line in message.splitlines() or [""])


def _excerpt(file: str, line: int, column: int, end_line: int | None, end_column: int | None,
             fallback: str | None) -> str | None:
    """A few numbered lines around `line`, the line marked `>` and the columns underlined."""
    linecache.checkcache(file)  # a long-lived process must not show an edited file's old text
    source = linecache.getlines(file)
    if not source or line > len(source):
        if not fallback:
            return None
        last = line
        numbered = [(line, fallback)]
    else:
        first, last = max(1, line - EXCERPT_CONTEXT), min(len(source), line + EXCERPT_CONTEXT)
        numbered = [(n, source[n - 1].rstrip("\n")) for n in range(first, last + 1)]
    width = len(str(last))
    out = []
    for number, text in numbered:
        marker = ">" if number == line else " "
        out.append(f"{marker} {number:>{width}} | {text.expandtabs(4)}")
        if number == line and column and (end_line in (None, line)) and end_column and end_column > column:
            out.append(f"  {' ' * width} | {' ' * (column - 1)}{'^' * (end_column - column)}")
    body = "\n".join(out)
    fence = "````" if "```" in body else "```"
    return f"{fence}python\n{body}\n{fence}"


def _verification(summary: VerificationSummary | None) -> str | None:
    if summary is None:
        return None
    lines = [
        f"- Result: **{'passed' if summary.passed else 'FAILED'}** "
        f"(onnxruntime vs torch on the example inputs; {_tolerance(summary)})",
        f"- Max abs diff: {_number(summary.max_abs_diff)}, max rel diff: {_number(summary.max_rel_diff)}",
    ]
    if summary.error is not None:
        lines.append(f"- Error: {summary.error}")
    if summary.note is not None:
        lines.append(f"- Note: {summary.note}")
    if summary.localisation_error is not None:
        lines.append(f"- The first diverging value could not be searched: {summary.localisation_error}")
    first = summary.first_mismatch
    if first is not None:
        module = f" in module `{first.module}`" if first.module else ""
        onnx_op = f" -> ONNX `{first.onnx_op}`" if first.onnx_op else ""
        compared = summary.intermediates_compared if summary.intermediates_compared is not None else "?"
        lines.append(
            f"- First value past tolerance: FX node `{first.node}` (`{first.target}`)"
            f"{onnx_op}{module}: max abs diff {_number(first.max_abs_diff)}, "
            f"max rel diff {_number(first.max_rel_diff)} ({compared} intermediate values compared)")
    if summary.other_sizes is not None:
        outcome = "passed" if summary.other_sizes_passed else "FAILED (a size of the example is fixed in the graph)"
        seconds = f", {summary.other_sizes_seconds:.3f} s" if summary.other_sizes_seconds is not None else ""
        lines.append(f"- Other sizes for the dynamic dimensions ({summary.other_sizes}): **{outcome}**{seconds}")
    if summary.other_sizes_refused is not None:
        lines.append(f"- Larger sizes torch itself refuses (the model takes fewer sizes than its dynamic "
                     f"dimensions declare): {summary.other_sizes_refused}")
    if summary.seconds is not None:
        localisation = summary.localisation_seconds
        lines.append(f"- Time: {summary.seconds:.3f} s" + (
            f" (of which {localisation:.3f} s finding the first diverging value with one "
            f"onnxruntime session)" if localisation is not None else ""))
    if summary.outputs:
        lines += ["", "| output | dtype | shape | max abs diff | max rel diff | rtol | atol (noise floor) | result |",
                  "|---|---|---|---|---|---|---|---|"]
        for o in summary.outputs:
            result = ("ok" if o.passed else "differs") if o.compared else "not compared"
            if o.note:
                result += f" ({o.note})"
            floor = _number(max(o.atol, o.noise) if o.noise and o.atol is not None else o.atol) + (
                f" ({_number(o.noise)})" if o.noise else "")
            lines.append(f"| `{o.name}` | {o.dtype} | {o.shape} | "
                         f"{_number(o.max_abs_diff)} | {_number(o.max_rel_diff)} | {_number(o.rtol)} | {floor} | {result} |")
    return "\n".join(lines) + "\n"


def _tolerance(summary: VerificationSummary) -> str:
    """`rtol=0.001, atol=1e-05` as set for the target, or `tolerances by dtype`."""
    if summary.rtol is None and summary.atol is None:
        return "tolerances by dtype, with a noise floor at each output's magnitude"
    return (f"rtol={summary.rtol if summary.rtol is not None else 'by dtype'}, "
            f"atol={summary.atol if summary.atol is not None else 'by dtype'}, with a noise floor")


def _number(value: Any) -> str:
    return f"{value:.3g}" if isinstance(value, (int, float)) else "n/a"


def _display_path(path: str | None, root: str) -> str:
    if not path:
        return ""
    try:
        rel = os.path.relpath(path, root)
    except ValueError:  # another drive on Windows
        return path
    return path if rel.startswith("..") else rel
