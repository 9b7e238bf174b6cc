"""Code lenses: on each target's model definition, status, time, nodes, verification (click to
re-export; a second lens opens the report); on each line whose nodes changed in the last export,
what changed since the export before it (click: the report's "Change since the last export");
on each line whose share of inference reaches the `costLensThreshold` setting, when the last
export was profiled, what it costs (click: the report's "Cost per line"). Lines are placed
through the edits since the export (exported_text.py): an edited line has none."""

from __future__ import annotations

from lsprotocol import types as lsp

from onnxlens.server.lsp.exporting.project import TargetState, norm
from onnxlens.server.lsp.features.command_ids import EXPORT, OPEN_REPORT
from onnxlens.server.lsp.handlers import Feature, handles
from onnxlens.server.lsp.uris import path_of


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
                    title=status_title(name, state, busy), command=EXPORT, arguments=[name])))
                if state.result is not None and state.result.report:
                    lenses.append(lsp.CodeLens(range=where, command=lsp.Command(
                        title="Open export report", command=OPEN_REPORT,
                        arguments=[state.result.report])))
            for name, state in project.targets.items():
                lenses += self._change_lenses(project.key, name, state, path)
                lenses += self._cost_lenses(project.key, name, state, path)
        return lenses

    def _cost_lenses(self, config: str, name: str, state: TargetState, path: str) -> list[lsp.CodeLens]:
        """`18 % of inference (2.41 ms), 3 MatMul` on each line of `path` whose share of the
        profiled run reaches the threshold."""
        cost = state.result.cost if state.result is not None else None
        if cost is None:
            return []
        threshold = self.session.settings.cost_lens_threshold / 100
        lenses = (self._report_lens((config, name), path, line_cost.line, f"onnxlens: {name} {line_cost.describe()}",
                                    state.result.report or name)
                  for line_cost in cost.lines if line_cost.share >= threshold and norm(line_cost.file) == path)
        return [lens for lens in lenses if lens is not None]

    def _change_lenses(self, config: str, name: str, state: TargetState, path: str) -> list[lsp.CodeLens]:
        """`+1 node (LayerNormalization) since the last export` on each line of `path` whose
        nodes the last export changed."""
        if state.change is None or state.result is None:
            return []
        lenses = (self._report_lens((config, name), path, change.line,
                                    f"onnxlens: {name} {change.describe()} since the last export",
                                    state.result.report or name)
                  for change in state.change.lines if not change.gone and norm(change.file) == path)
        return [lens for lens in lenses if lens is not None]

    def _report_lens(self, owner: tuple[str, str], path: str, line: int, title: str, report: str) -> lsp.CodeLens | None:
        """A lens that opens the report, on `line` of the text the export saw where it is in the
        buffer now; None when it was edited since."""
        now = self.session.exported_text.now(owner, path, line)
        if now is None:
            return None
        position = lsp.Position(line=now - 1, character=0)
        return lsp.CodeLens(range=lsp.Range(start=position, end=position), command=lsp.Command(
            title=title, command=OPEN_REPORT, arguments=[report]))


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

