"""Code actions on onnxlens diagnostics: open the report, re-export, show the exported program,
the finding's own fixes as quick fixes with a WorkspaceEdit, and the fix-its the registry lists
(server/fixits/registry.py): on a finding, one per proposal it carries ("Write an ONNX
translation for aten.X", "Decompose aten.X with torch's decomposition"); on a target's
definitions, the ones its last result proposes ("Declare dynamic shapes for <target>").

Without a diagnostic: "Add <Name> as an ONNX export target" (kind refactor.rewrite) on the header
line of an nn.Module class or a model factory that no target exports yet
(server/fixits/buffer_targets.py finds them and plans the edits).

Every fix-it is a `Fix` (server/fixits/fix.py) and becomes a code action in one place
(`_fix_action`); this module decides where each is offered, the fix-its what they change."""

from __future__ import annotations

import logging
from pathlib import Path

from lsprotocol import types as lsp

from onnxlens.exporter import references
from onnxlens.exporter.types import SuggestedEdit
from onnxlens.exporter.types import Location
from onnxlens.server.fixits import registry
from onnxlens.server.fixits.buffer_targets import new_target_fixes, selects_definition
from onnxlens.server.fixits.candidates import MAX_FILE_BYTES
from onnxlens.server.fixits.fix import ConfiguredTarget, Fix
from onnxlens.server.fixits.new_targets import config_file_for
from onnxlens.server.lsp.diagnostics import Entry, line_range
from onnxlens.server.lsp.exporting.project import Project, TargetState, norm
from onnxlens.server.lsp.features.command_ids import EXPORT, OPEN_REPORT, OPEN_TRANSLATION, SHOW_EXPORTED_PROGRAM
from onnxlens.server.lsp.features.workspace_edits import workspace_edit
from onnxlens.server.lsp.handlers import Feature, handles
from onnxlens.server.lsp.uris import path_of, uri_of

KIND = lsp.CodeActionKind.QuickFix
TARGET_KIND = lsp.CodeActionKind.RefactorRewrite  # a new target: no problem is fixed


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
            actions += [finding_edit_action(edit, entry.diagnostic) for edit in entry.finding.fixes]
            actions += self._finding_fix_actions(entry)
        actions += self._target_fix_actions(path_of(params.text_document.uri), params.range)
        seen: set[tuple[str, str]] = set()
        several = len({entry.owner for entry in entries}) > 1  # a problem targets share: say whose action
        for entry in entries:
            if entry.owner in seen:
                continue
            seen.add(entry.owner)
            actions += self._target_actions(entry, [e.diagnostic for e in entries if e.owner == entry.owner], several)
        return actions + targets or None

    def _target_actions(self, entry: Entry, diagnostics: list[lsp.Diagnostic], named: bool) -> list[lsp.CodeAction]:
        target = entry.owner[1]
        found = self._configured(entry.owner)
        if found is None:  # a config finding: nothing to export or open
            return []
        state = found[1]

        def action(title: str, command: str, argument: str) -> lsp.CodeAction:
            return lsp.CodeAction(title=title, kind=KIND, diagnostics=diagnostics,
                                  command=lsp.Command(title=title, command=command, arguments=[argument]))

        actions = []
        if state.result and state.result.report:
            actions.append(action(f"Open export report{f' of {target}' if named else ''}", OPEN_REPORT,
                                  state.result.report))
        actions.append(action(f"Re-export {target}", EXPORT, target))
        if state.result and state.result.exported_program:
            actions.append(action(f"Show exported program{f' of {target}' if named else ''}", SHOW_EXPORTED_PROGRAM, target))
        return actions


    def _configured(self, owner: tuple[str, str]) -> tuple[ConfiguredTarget, TargetState] | None:
        """The configured target a finding's owner names, and its state; None for a config
        finding or a target the config no longer has."""
        project = self.session.projects.get(owner[0])
        state = project.targets.get(owner[1]) if project else None
        if state is None:
            return None
        return _configured_target(project, owner[1], state), state

    def _finding_fix_actions(self, entry: Entry) -> list[lsp.CodeAction]:
        """The fix-its of a finding (registry.ON_FINDINGS): one per proposal it carries."""
        found = self._configured(entry.owner) if _has_proposals(entry) else None
        if found is None:
            return []
        fixes = registry.fixes_on_finding(found[0], entry.finding,
                                          client_creates_files=self.session.client.features.create_files)
        return [_fix_action(fix, KIND, [entry.diagnostic]) for fix in fixes]

    def _target_fix_actions(self, file: str, selected: lsp.Range) -> list[lsp.CodeAction]:
        """The fix-its a target's last result proposes (registry.ON_TARGETS: "Declare dynamic
        shapes for <target>"), on its definitions: the model's, the example inputs' function, the
        dynamic-shapes factory, the target's header in the config and the line where the export
        said the inputs or the dynamic shapes do not fit the model (a `setup` finding of the
        capture: a spec missing an input, on its `return`)."""
        actions = []
        for project in self.session.projects.values():
            for name, state in project.targets.items():
                if state.result is None or not any(kind.proposal(state.result) is not None for kind in registry.ON_TARGETS):
                    continue
                target = _configured_target(project, name, state)
                places = [(str(project.config_file), target.header_line), _line_of(state.result.model_location),
                          *(_line_of(references.definition_location(state.spec.root, reference))
                            for reference in (state.spec.inputs, state.spec.dynamic_shapes) if reference),
                          *(_line_of(finding.location) for finding in state.result.findings
                            if finding.code == "setup" and finding.stage == "capture")]
                if not any(where == file and line is not None and selected.start.line <= line - 1 <= selected.end.line
                           for where, line in places):
                    continue
                actions += [_fix_action(fix, KIND) for fix in registry.fixes_on_target(target, state.result)]
        return actions

    async def _new_target_actions(self, file: str, params: lsp.CodeActionParams) -> list[lsp.CodeAction]:
        """"Add <Name> as an ONNX export target" on the `class`/`def` line of a candidate that is
        no target's model yet, in a workspace inside the client's folders. Creating the config
        file needs a client that creates files from a WorkspaceEdit.

        The buffer is parsed in the helper process (server/offload.py), never on the event loop
        nor a thread of it: a big buffer's parse holds the GIL for seconds. Most requests need
        no parse: the selection holds no top-level `class`/`def` line, or the buffer is past the
        size of a model of the user's (server/fixits/buffer_targets.py)."""
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
            fixes, notes = await self.session.offload.call(new_target_fixes, Path(file), text, root, first, last)
        except Exception as error:  # noqa: BLE001 - no action is all a failure costs
            self.session.log(logging.WARNING, f"onnxlens: could not read {Path(file).name} for new targets: {error}")
            return []
        for note in notes:
            self.session.log(logging.INFO, note)
        return [_fix_action(fix, TARGET_KIND) for fix in fixes]

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


def _configured_target(project: Project, name: str, state: TargetState) -> ConfiguredTarget:
    return ConfiguredTarget(state.spec, project.config_file, project.config.target_lines.get(name))


def _has_proposals(entry: Entry) -> bool:
    return any(kind.proposals(entry.finding) for kind in registry.ON_FINDINGS)


def _fix_action(fix: Fix, kind: lsp.CodeActionKind, diagnostics: list[lsp.Diagnostic] | None = None) -> lsp.CodeAction:
    """A fix-it as a code action: its edit, then, when the fix shows a place once applied (the
    translation module on the stub's body), the command that opens it there."""
    show = None if fix.show is None else lsp.Command(title=fix.show.title, command=OPEN_TRANSLATION,
                                                     arguments=[fix.show.file, fix.show.line])
    return lsp.CodeAction(title=fix.title, kind=kind, diagnostics=diagnostics, edit=workspace_edit(fix.insertions),
                          command=show)


def finding_edit_action(edit: SuggestedEdit, diagnostic: lsp.Diagnostic) -> lsp.CodeAction:
    """A text edit the exporter suggested (e.g. insert `torch._check(...)`) as a quick fix."""
    text_edit = lsp.TextEdit(range=line_range(edit.line, edit.column, edit.end_line, edit.end_column, None),
                             new_text=edit.new_text)
    return lsp.CodeAction(title=edit.title, kind=KIND, diagnostics=[diagnostic], is_preferred=True,
                          edit=lsp.WorkspaceEdit(changes={uri_of(edit.file): [text_edit]}))
