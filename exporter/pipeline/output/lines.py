"""What each source line became in the export, and the graph in brief: for hover, code lens,
inlay hints and the comparison with the next export.

The exporter writes every ONNX node's origin into its `metadata_props` (the FX node's stack trace
and module scopes) and keeps them through optimization, so the final model alone says which line
produced which nodes. A line is the innermost line of the user's code in a node's trace (the one
rule of exporter/locations, as for findings). What the line's code handed on, with the sizes'
declared names, comes from the captured program (line_values.py); the graph's summary from the
model (graph_summary.py).
"""

from __future__ import annotations

import ast
import linecache
import os

import onnx_ir as ir

import onnxlens.exporter.pipeline.output.graph_summary as graph_summary
import onnxlens.exporter.pipeline.tracing.line_values as line_values
from onnxlens.exporter.locations import Workspace, from_stack_trace, primary_frame, source_line
from onnxlens.exporter.pipeline.output.graph_summary import describe_value, value_bytes
from onnxlens.exporter.pipeline.job import Job
from onnxlens.exporter.types import LineInfo

STACK_TRACE = "pkg.torch.onnx.stack_trace"
NAME_SCOPES = "pkg.torch.onnx.name_scopes"

Key = tuple[str, int]  # (real path, 1-based line)


def record(job: Job, full_traces: dict[str, str] | None = None) -> None:
    """The result's line data and graph summary, from the finished ONNX model and the program it
    was translated from (`full_traces`: FX node name -> stack trace with helper frames).

    What each line produced and the summary are extras: a failure of ours there is logged and
    leaves them out, it never fails the export."""
    model = job.onnx_program.model
    origins = job.node_lines = NodeLines(job.workspace, full_traces)
    infos = line_infos(model, origins)
    if job.decomposed is not None:
        try:
            infos = line_values.add_values(infos, job.decomposed, model, job.workspace)
        except Exception as error:  # noqa: BLE001 - see the docstring
            job.log(f"what each line produced is not known: {type(error).__name__}: {error}")
    for file in {info.file for info in infos}:
        linecache.checkcache(file)  # a text read before this export may be stale (in-process runs)
    for info in infos:
        info.code = (source_line(info.file, info.line) or "").strip()
    job.result.lines = infos
    try:
        job.result.graph = graph_summary.summarize(job, model, origins.line)
    except Exception as error:  # noqa: BLE001 - see the docstring
        job.log(f"the graph's summary could not be made: {type(error).__name__}: {error}")


class NodeLines:
    """The user's line of each ONNX node. The nodes one FX node became share its metadata: each
    text is parsed once (a 7B Llama has 5,000 ONNX nodes from 1,600 FX nodes)."""

    def __init__(self, workspace: Workspace, full_traces: dict[str, str] | None = None) -> None:
        self._workspace = workspace
        self._full_traces = full_traces or {}
        self._scopes: dict[str | None, list[str]] = {}
        self._lines: dict[str | None, Key | None] = {}

    def scopes(self, node: ir.Node) -> list[str]:
        text = node.metadata_props.get(NAME_SCOPES)
        scopes = self._scopes.get(text)
        if scopes is None:
            scopes = self._scopes[text] = _scopes(text)
        return scopes

    def line(self, node: ir.Node) -> Key | None:
        scopes = self.scopes(node)
        trace = (self._full_traces.get(scopes[-1]) if scopes else None) or node.metadata_props.get(STACK_TRACE)
        if trace not in self._lines:
            frame = primary_frame(from_stack_trace(trace), self._workspace)
            self._lines[trace] = (os.path.realpath(frame.file), frame.line) if frame is not None else None
        return self._lines[trace]


def line_infos(model: ir.Model, origins: NodeLines) -> list[LineInfo]:
    by_line: dict[Key, LineInfo] = {}
    weighed: set[tuple[Key, int]] = set()  # (line, initializer) pairs counted already
    for node in ir.traversal.RecursiveGraphIterator(model.graph):
        key = origins.line(node)
        if key is None:
            continue
        info = by_line.get(key)
        if info is None:
            info = by_line[key] = LineInfo(file=key[0], line=key[1])
        info.ops[node.op_type] = info.ops.get(node.op_type, 0) + 1
        module = _module_path(origins.scopes(node))
        if module and module not in info.modules:
            info.modules.append(module)
        for value in node.inputs:
            if value is not None and value.is_initializer() and (key, id(value)) not in weighed:
                weighed.add((key, id(value)))
                info.weight_bytes += value_bytes(value)
        for value in node.outputs:
            text = describe_value(value)
            if text and text not in info.outputs and len(info.outputs) < 16:
                info.outputs.append(text)
    return sorted(by_line.values(), key=lambda info: (info.file, info.line))


def _scopes(text: str | None) -> list[str]:
    """name_scopes is repr([module path..., FX node name])."""
    if not text:
        return []
    try:
        values = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return []
    return [str(v) for v in values] if isinstance(values, list) else []


def _module_path(scopes: list[str]) -> str | None:
    """The innermost module's path: the scope before the node name."""
    paths = [v for v in scopes[:-1] if v]
    return paths[-1] if paths else None
