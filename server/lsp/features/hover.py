"""Hover on a source line that produced graph nodes: the ONNX ops it became, shapes, modules
(the line of the last export's text it is, through the edits since: exported_text.py)."""

from __future__ import annotations

from lsprotocol import types as lsp

from onnxlens.exporter.types import LineInfo
from onnxlens.server.lsp.diagnostics import line_range
from onnxlens.server.lsp.exporting.project import norm
from onnxlens.server.lsp.handlers import Feature, handles
from onnxlens.server.lsp.uris import path_of


class Hover(Feature):
    @handles(lsp.TEXT_DOCUMENT_HOVER)
    def hover(self, params: lsp.HoverParams) -> lsp.Hover | None:
        session = self.session
        path, line = path_of(params.text_document.uri), params.position.line + 1
        sections = []
        for project in session.projects.values():
            for name, state in project.targets.items():
                # The buffer's line, as the export saw it: none if edited since (exported_text.py).
                exported = session.exported_text.then((project.key, name), path, line)
                if state.result is None or exported is None:
                    continue
                infos = [i for i in state.result.lines if i.line == exported and norm(i.file) == path]
                if infos:
                    sections.append(render(name, merge(infos), stale=state.running))
        if not sections:
            return None
        return lsp.Hover(
            contents=lsp.MarkupContent(kind=lsp.MarkupKind.Markdown, value="\n\n---\n\n".join(sections)),
            range=line_range(line, 1, None, None, session.lines(path, line), session.client.features.encoding),
        )


def merge(infos: list[LineInfo]) -> LineInfo:
    """One line can appear several times (one LineInfo per module of a ModuleList): add them up."""
    merged = LineInfo(file=infos[0].file, line=infos[0].line)
    for info in infos:
        for op, count in info.ops.items():
            merged.ops[op] = merged.ops.get(op, 0) + count
        merged.outputs += [o for o in info.outputs if o not in merged.outputs]
        merged.modules += [m for m in info.modules if m not in merged.modules]
    return merged


def render(target: str, info: LineInfo, *, stale: bool) -> str:
    nodes = sum(info.ops.values())
    lines = [f"**onnxlens · {target}**: this line became {nodes} ONNX node{'s' if nodes != 1 else ''}"
             + (" (re-exporting…)" if stale else ""), ""]
    if info.ops:
        lines += ["| ONNX op | count |", "|---|---:|"]
        lines += [f"| `{op}` | {count} |" for op, count in sorted(info.ops.items(), key=lambda kv: (-kv[1], kv[0]))]
        lines.append("")
    if info.outputs:
        shown = info.outputs[:8]
        more = f" … (+{len(info.outputs) - 8})" if len(info.outputs) > 8 else ""
        lines.append("**outputs:** " + ", ".join(f"`{o}`" for o in shown) + more)
    if info.modules:
        shown = info.modules[:8]
        more = f" … (+{len(info.modules) - 8})" if len(info.modules) > 8 else ""
        lines.append("")
        lines.append("**modules:** " + ", ".join(f"`{m}`" for m in shown) + more)
    return "\n".join(lines).strip()
