"""Code actions on onnxlens diagnostics: open the report, re-export, show the exported program,
the finding's own fixes as quick fixes with a WorkspaceEdit, and on an `unsupported-op` one
"Write an ONNX translation for aten.X" per op (server/translation_fix.py decides the edits) and,
where torch can decompose the op into ops with translations, "Decompose aten.X with torch's
decomposition" (server/decomposition_fix.py).

Without a diagnostic: "Declare dynamic shapes for <target>" on a target's definitions, and
"Add <Name> as an ONNX export target" (kind refactor.rewrite) on the header line of an nn.Module
class or a model factory that no target exports yet (server/target_candidates.py finds them,
server/target_fix.py decides the edits)."""

from __future__ import annotations

import logging
from pathlib import Path

from lsprotocol import types as lsp

from onnxlens.exporter import references
from onnxlens.exporter.types import Fix, Location
from onnxlens.server.decomposition_fix import decomposition_fix
from onnxlens.server.shapes_fix import shapes_fix
from onnxlens.server.buffer_targets import selects_definition, target_fixes
from onnxlens.server.target_candidates import MAX_FILE_BYTES
from onnxlens.server.target_fix import config_file_for
from onnxlens.server.translation_fix import TranslationFix, translation_fix

from .diagnostics import Entry, line_range
from .handlers import Feature, handles
from .project import norm
from .uris import path_of, uri_of
from .workspace_edits import workspace_edit

KIND = lsp.CodeActionKind.QuickFix
TARGET_KIND = lsp.CodeActionKind.RefactorRewrite  # a new target: no problem is fixed
OPEN_TRANSLATION = "onnxlens.openTranslation"  # commands.py answers it (features do not import each other)


def _overlaps(a: lsp.Range, b: lsp.Range) -> bool:
    return a.start.line <= b.end.line and b.start.line <= a.end.line


def _wanted(kind: lsp.CodeActionKind, only: list[lsp.CodeActionKind] | None) -> bool:
    """LSP's rule for `context.only`: a kind is asked for when it is one of them or below one
    (`refactor` asks for `refactor.rewrite`; the empty kind asks for all)."""
    asked = [str(getattr(o, "value", o)) for o in only or []]  # lsprotocol leaves kinds it does not know as str
    return not asked or any(not o or kind.value == o or kind.value.startswith(o + ".") for o in asked)


class CodeActions(Feature):
    @handles(lsp.TEXT_DOCUMENT_CODE_ACTION, lsp.CodeActionOptions(code_action_kinds=[KIND, TARGET_KIND]))
    async def code_action(self, params: lsp.CodeActionParams) -> list[lsp.CodeAction] | None:
        only = params.context.only
        targets = await self._new_target_actions(path_of(params.text_document.uri), params) \
            if _wanted(TARGET_KIND, only) else []
        if not _wanted(KIND, only):
            return targets or None
        entries = [e for e in self.session.diagnostics.entries(path_of(params.text_document.uri))
                   if _overlaps(e.diagnostic.range, params.range)]
        actions: list[lsp.CodeAction] = []
        for entry in entries:
            actions += [fix_action(fix, entry.diagnostic) for fix in entry.finding.fixes]
            actions += self._translation_actions(entry)
            actions += self._decomposition_actions(entry)
        actions += self._shapes_actions(path_of(params.text_document.uri), params.range)
        seen: set[tuple[str, str]] = set()
        several = len({entry.owner for entry in entries}) > 1  # a problem targets share: say whose action
        for entry in entries:
            if entry.owner in seen:
                continue
            seen.add(entry.owner)
            actions += self._target_actions(entry, [e.diagnostic for e in entries if e.owner == entry.owner], several)
        return actions + targets or None

    def _target_actions(self, entry: Entry, diagnostics: list[lsp.Diagnostic], named: bool) -> list[lsp.CodeAction]:
        config, target = entry.owner
        project = self.session.projects.get(config)
        state = project.targets.get(target) if project else None
        if state is None:  # a config finding: nothing to export or open
            return []

        def action(title: str, command: str, argument: str) -> lsp.CodeAction:
            return lsp.CodeAction(title=title, kind=KIND, diagnostics=diagnostics,
                                  command=lsp.Command(title=title, command=command, arguments=[argument]))

        actions = []
        if state.result and state.result.report:
            actions.append(action(f"Open export report{f' of {target}' if named else ''}", "onnxlens.openReport",
                                  state.result.report))
        actions.append(action(f"Re-export {target}", "onnxlens.export", target))
        if state.result and state.result.exported_program:
            actions.append(action(f"Show exported program{f' of {target}' if named else ''}", "onnxlens.showExportedProgram", target))
        return actions


    def _translation_actions(self, entry: Entry) -> list[lsp.CodeAction]:
        """"Write an ONNX translation for aten.X": needs a client that creates files from a
        WorkspaceEdit (the module may be new)."""
        stubs = entry.finding.translation_stubs
        project = self.session.projects.get(entry.owner[0]) if stubs else None
        state = project.targets.get(entry.owner[1]) if project else None
        if state is None or not self.session.client.features.create_files:
            return []
        actions = []
        for stub in stubs:
            fix = translation_fix(state.spec, project.config_file, project.workspace.target_lines.get(entry.owner[1]), stub)
            if fix is not None:
                actions.append(translation_action(fix, entry.diagnostic))
        return actions


    def _decomposition_actions(self, entry: Entry) -> list[lsp.CodeAction]:
        """"Decompose aten.X with torch's decomposition": the op into the target's
        extra-decompositions (server/decomposition_fix.py decides the edit)."""
        offers = entry.finding.decomposition_offers
        project = self.session.projects.get(entry.owner[0]) if offers else None
        state = project.targets.get(entry.owner[1]) if project else None
        if state is None:
            return []
        fixes = [decomposition_fix(state.spec, project.config_file, project.workspace.target_lines.get(entry.owner[1]), offer)
                 for offer in offers]
        return [lsp.CodeAction(title=fix.title, kind=KIND, diagnostics=[entry.diagnostic],
                               edit=workspace_edit(fix.insertions))
                for fix in fixes if fix is not None]


    def _shapes_actions(self, file: str, selected: lsp.Range) -> list[lsp.CodeAction]:
        """"Declare dynamic shapes for <target>" where its export proposed a factory: on the
        model's definition, the example inputs' function, the dynamic-shapes factory, the
        target's header in the config and the line where the export said the inputs or the
        dynamic shapes do not fit the model (a `setup` finding of the capture: a spec missing an
        input, on its `return`); a new factory, or the inputs a declared one misses
        (server/shapes_fix.py decides the edits)."""
        actions = []
        for project in self.session.projects.values():
            for name, state in project.targets.items():
                proposal = state.result.shapes_proposal if state.result else None
                if proposal is None:
                    continue
                header = project.workspace.target_lines.get(name)
                places = [(str(project.config_file), header), _line_of(state.result.model_location),
                          *(_line_of(references.definition_location(state.spec.root, reference))
                            for reference in (state.spec.inputs, state.spec.dynamic_shapes) if reference),
                          *(_line_of(finding.location) for finding in state.result.findings
                            if finding.code == "setup" and finding.stage == "capture")]
                if not any(where == file and line is not None and selected.start.line <= line - 1 <= selected.end.line
                           for where, line in places):
                    continue
                fix = shapes_fix(state.spec, project.config_file, header, proposal)
                if fix is not None:
                    actions.append(lsp.CodeAction(title=fix.title, kind=KIND, edit=workspace_edit(fix.insertions)))
        return actions


    async def _new_target_actions(self, file: str, params: lsp.CodeActionParams) -> list[lsp.CodeAction]:
        """"Add <Name> as an ONNX export target" on the `class`/`def` line of a candidate that is
        no target's model yet, in a workspace inside the client's folders. Creating the config
        file needs a client that creates files from a WorkspaceEdit.

        The buffer is parsed in the helper process (server/offload.py), never on the event loop
        nor a thread of it: a big buffer's parse holds the GIL for seconds. Most requests need
        no parse: the selection holds no top-level `class`/`def` line, or the buffer is past the
        size of a model of the user's (server/buffer_targets.py)."""
        root = self._workspace_root(file) if file.endswith(".py") else None
        if root is None:
            return []
        text = self.session.client.document_text(params.text_document.uri)
        first, last = params.range.start.line + 1, params.range.end.line + 1
        if text is not None and (len(text) > MAX_FILE_BYTES or not selects_definition(text, first, last)):
            return []
        if not config_file_for(root).exists() and not self.session.client.features.create_files:
            return []
        try:
            fixes, notes = await self.session.offload.call(target_fixes, Path(file), text, root, first, last)
        except Exception as error:  # noqa: BLE001 - no action is all a failure costs
            self.session.log(logging.WARNING, f"onnxlens: could not read {Path(file).name} for new targets: {error}")
            return []
        for note in notes:
            self.session.log(logging.INFO, note)
        return [lsp.CodeAction(title=fix.title, kind=TARGET_KIND, edit=workspace_edit(fix.insertions)) for fix in fixes]

    def _workspace_root(self, file: str) -> Path | None:
        """The root new targets of `file` go to: its project's (the innermost) or its workspace
        folder's; None outside the client's workspace folders."""
        inside = self.session.workspace_folders_containing(file)
        if not inside:
            return None
        containing = [p.root for p in self.session.projects_containing(file)]
        projects = [r for r in containing if any(r.is_relative_to(f) for f in inside)]
        if containing and not projects:
            return None  # a config above the folder governs it: a new one here would shadow it
        return max(projects or inside, key=lambda r: len(str(r)))


def _line_of(location: Location | None) -> tuple[str | None, int | None]:
    return (norm(location.file), location.line) if location is not None else (None, None)


def translation_action(fix: TranslationFix, diagnostic: lsp.Diagnostic) -> lsp.CodeAction:
    """The edit, then the command that opens the module on the stub's body."""
    return lsp.CodeAction(title=fix.title, kind=KIND, diagnostics=[diagnostic], edit=workspace_edit(fix.insertions),
                          command=lsp.Command(title="Open the translation", command=OPEN_TRANSLATION,
                                              arguments=[fix.module, fix.focus_line]))


def fix_action(fix: Fix, diagnostic: lsp.Diagnostic) -> lsp.CodeAction:
    """A fix the exporter suggested (e.g. insert `torch._check(...)`) as a quick fix with its edit."""
    edit = lsp.TextEdit(range=line_range(fix.line, fix.column, fix.end_line, fix.end_column, None),
                        new_text=fix.new_text)
    return lsp.CodeAction(title=fix.title, kind=KIND, diagnostics=[diagnostic], is_preferred=True,
                          edit=lsp.WorkspaceEdit(changes={uri_of(fix.file): [edit]}))

