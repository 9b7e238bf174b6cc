"""Inlay hints: after an export, each line of the user's code that produced graph values shows
what it produced, at the end of the line — `[batch, 16, 256] f32`, symbolic sizes by the names
the target declared; a line that ran in several modules once, `×6 in layers.0–5`.

From the last result's line data (LineInfo.produced, ran_in: exporter/pipeline/tracing/line_values.py),
placed through the editor's edits since (exported_text.py): an edited line shows nothing until
the next result, a moved one moves with its text. The `inlayHints` setting turns them off.
"""

from __future__ import annotations

from lsprotocol import types as lsp

from onnxlens.exporter.locations.names import module_list
from onnxlens.exporter.types import LineInfo
from onnxlens.server.lsp.diagnostics import units
from onnxlens.server.lsp.exporting.project import norm
from onnxlens.server.lsp.handlers import Feature, handles
from onnxlens.server.lsp.uris import path_of


class InlayHints(Feature):
    @handles(lsp.TEXT_DOCUMENT_INLAY_HINT, lsp.InlayHintOptions(resolve_provider=False))
    def inlay_hints(self, params: lsp.InlayHintParams) -> list[lsp.InlayHint]:
        session = self.session
        if not session.settings.inlay_hints:
            return []
        path = path_of(params.text_document.uri)
        first, last = params.range.start.line + 1, params.range.end.line + 1
        found: dict[int, list[tuple[str, LineInfo]]] = {}  # line of the buffer -> (target, its line data)
        for project in session.projects.values():
            for name, state in project.targets.items():
                for info in state.result.lines if state.result is not None else []:
                    if not info.produced or norm(info.file) != path:
                        continue
                    line = session.exported_text.now((project.key, name), path, info.line)
                    if line is not None and first <= line <= last:
                        found.setdefault(line, []).append((name, info))
        if not found:
            return []
        text = session.current_lines(path) or []
        encoding = session.client.features.encoding
        hints = []
        for line, entries in sorted(found.items()):
            source = text[line - 1] if line <= len(text) else ""
            end = len(source.rstrip())
            labels = {label(info) for _, info in entries}
            hints.append(lsp.InlayHint(
                position=lsp.Position(line=line - 1, character=units(source, end, encoding)),
                label=labels.pop() if len(labels) == 1 else "; ".join(f"{name}: {label(info)}" for name, info in entries),
                kind=lsp.InlayHintKind.Type, padding_left=True,
                tooltip=lsp.MarkupContent(kind=lsp.MarkupKind.Markdown,
                                          value="\n\n".join(tooltip(name, info) for name, info in entries))))
        return hints


def label(info: LineInfo) -> str:
    """"[batch, 16, 256] f32", "[batch, 16, 256] f32 ×6 in layers.0–5"."""
    text = ", ".join(info.produced)
    modules = [module for module in info.ran_in if module]
    if len(info.ran_in) > 1 and modules:
        text += f" ×{len(info.ran_in)} in {module_list(modules)}"
    return text


def tooltip(target: str, info: LineInfo) -> str:
    nodes = sum(info.ops.values())
    became = f"; it became {nodes} ONNX node{'s' if nodes != 1 else ''}" if nodes else ""
    return (f"**onnxlens · {target}**: what this line hands on to the rest of the model in the last export "
            f"(torch's shapes and dtypes){became}")
