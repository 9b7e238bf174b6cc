"""Code lens on each target's model definition: status, time, nodes, verification; click to
re-export, a second lens opens the report."""

from __future__ import annotations

from lsprotocol import types as lsp

from .handlers import Feature, handles
from .project import TargetState
from .uris import path_of


class CodeLens(Feature):
    @handles(lsp.TEXT_DOCUMENT_CODE_LENS, lsp.CodeLensOptions(resolve_provider=False))
    def code_lens(self, params: lsp.CodeLensParams) -> list[lsp.CodeLens]:
        path = path_of(params.text_document.uri)
        lenses = []
        for project in self.session.projects.values():
            for name, state in project.targets.items():
                definition = state.model_definition()
                if definition is None or definition.file != path:
                    continue
                position = lsp.Position(line=definition.line - 1, character=0)
                where = lsp.Range(start=position, end=position)
                busy = self.session.scheduler.is_busy(project, name)
                lenses.append(lsp.CodeLens(range=where, command=lsp.Command(
                    title=status_title(name, state, busy), command="onnxlens.export", arguments=[name])))
                if state.result is not None and state.result.report:
                    lenses.append(lsp.CodeLens(range=where, command=lsp.Command(
                        title="Open export report", command="onnxlens.openReport",
                        arguments=[state.result.report])))
        return lenses


def status_title(name: str, state: TargetState, busy: bool) -> str:
    result = state.result
    if result is None:
        return f"onnxlens: {name} {'exporting…' if busy else 'not exported yet'}"
    if result.status == "ok":
        parts = [f"onnxlens: {name} ✓ {result.seconds:.2f} s"]
        if result.node_count is not None:
            parts.append(f"{result.node_count} nodes")
        if result.graph_onnx:
            parts.append("graph only, no weights")
        if result.verification:
            parts.append("verified" if result.verification.passed else "verification mismatch")
        if result.cached:
            parts.append("cached")
        title = " · ".join(parts)
    else:
        problems = sum(1 for f in result.findings if f.severity != "info")  # a note is no problem
        title = f"onnxlens: {name} ✗ {problems} problem{'s' if problems != 1 else ''}{result.elsewhere()}"
    return title + (" · re-exporting…" if busy else "")

