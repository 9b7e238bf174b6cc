"""The torch-side sections of the export report, built with torch.onnx's own report helpers.

Each function returns markdown or None when its inputs are missing (an export that failed
early has no program). Nothing here re-exports or profiles: the report must cost far less than
the export (upstream's report=True ran over an hour on a large model, pytorch#150891).
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from onnxlens.exporter.torch_internals.active import internals

# Long dumps are cut: a report is for reading, the full program is in its own dump file.
MAX_PROGRAM_LINES = 1500
MAX_TRACEBACK_LINES = 200

_ANSI_ESCAPE = re.compile(r"\x1B[@-_][0-?]*[ -/]*[@-~]")  # as torch's _reporting strips them


def exported_program_section(program: Any, *, decomposed: bool, dump_path: str | None) -> str | None:
    if program is None:
        return None
    text = internals.format_exported_program(program)  # fenced, colours stripped
    lines = text.splitlines()
    if len(lines) > MAX_PROGRAM_LINES:
        cut = len(lines) - MAX_PROGRAM_LINES
        where = f" (the full program: `{dump_path}`)" if dump_path else ""
        lines = lines[:MAX_PROGRAM_LINES] + [f"# … {cut} more lines{where}", "```"]
    which = ("after decomposition: the program the ONNX graph was translated from"
             if decomposed else "as captured by torch.export, before decomposition")
    return f"The exported program {which}.\n\n" + "\n".join(lines) + "\n"


def analysis_section(program: Any, registry: Any) -> str | None:
    """torch's `_analysis.analyze`: parameters, inputs/outputs, op counts, ops with no ONNX
    translation in the registry."""
    if program is None:
        return None
    text = internals.analysis(program, registry)
    text = text.replace("PyTorch ONNX Conversion Analysis\n", "", 1)
    # analyze() writes level-2 headings; the report nests them under its own "## Analysis".
    return re.sub(r"^## ", "### ", text, flags=re.MULTILINE).strip() + "\n"


def decomposition_section(captured: Any, decomposed: Any) -> str | None:
    if captured is None or decomposed is None:
        return None
    return internals.decomposition_comparison(captured, decomposed)


def onnx_model_section(onnx_program: Any) -> str | None:
    """A short summary of the ONNX graph (the full text of a large model is unreadable)."""
    model = getattr(onnx_program, "model", None)
    if model is None:
        return None
    graph = model.graph
    ops = Counter(f"{n.domain}::{n.op_type}" if n.domain else n.op_type for n in graph)
    opsets = ", ".join(f"`{d or 'ai.onnx'}` {v}" for d, v in sorted(model.opset_imports.items()))
    lines = [
        f"{len(graph)} nodes, {len(graph.initializers)} initializers; opsets: {opsets}.",
        "",
        "Inputs:",
        *[f"- `{v.name}`: `{_value_type(v)}`" for v in graph.inputs],
        "",
        "Outputs:",
        *[f"- `{v.name}`: `{_value_type(v)}`" for v in graph.outputs],
        "",
        "Operators:",
        "",
        "| op | count |",
        "|---|---|",
        *[f"| `{op}` | {count} |" for op, count in ops.most_common()],
    ]
    return "\n".join(lines) + "\n"


def _value_type(value: Any) -> str:
    dtype = value.dtype.name if value.dtype is not None else "?"
    shape = "[" + ", ".join(str(d) for d in value.shape) + "]" if value.shape is not None else "[?]"
    return f"{dtype}{shape}"


def traceback_section(error: BaseException | None) -> str | None:
    if error is None:
        return None
    import traceback

    text = "".join(traceback.format_exception(type(error), error, error.__traceback__))
    lines = text.splitlines()
    if len(lines) > MAX_TRACEBACK_LINES:
        lines = lines[:40] + [f"… {len(lines) - 80} lines cut …"] + lines[-40:]
    body = _ANSI_ESCAPE.sub("", "\n".join(lines))
    return f"```pytb\n{body}\n```\n"
