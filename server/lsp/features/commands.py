"""workspace/executeCommand: onnxlens.export, exportAll, openReport, showExportedProgram, restartWorker,
openTranslation.

Arguments come from anywhere (a lens, a code action, a user's keybinding): each is validated and
a bad one is an error response, never a crash. Paths in results come from the worker or the
cache, and the files they name can be replaced by anyone who can write the output directory, so
every file a command opens is checked first (`_output_file`): inside an onnxlens output directory
once symlinks are resolved, not itself a symbolic link (onnxlens writes regular files: a link
there was put by someone else), a regular file; and a target's report must describe the
target's latest export (its export id), not an earlier one left by a failed write.
pygls converts a command's arguments by its handler's type hints: `*args: Any` takes them as the
client sent them, and the checks below say what is wrong.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcInvalidParams

from onnxlens.exporter.report import export_id_of
from onnxlens.exporter.types import ExportResult
from onnxlens.server.lsp.exporting.project import Project, norm
from onnxlens.server.lsp.features.command_ids import (EXPORT, EXPORT_ALL, OPEN_REPORT, OPEN_TRANSLATION, RESTART_WORKER,
                                                      SHOW_EXPORTED_PROGRAM)
from onnxlens.server.lsp.handlers import Feature, command
from onnxlens.server.lsp.uris import uri_of


def _invalid(message: str) -> JsonRpcInvalidParams:
    return JsonRpcInvalidParams(message=message)


def _check_describes(report: str, result: ExportResult) -> None:
    """The report on disk is the one of `result`'s export (its first lines name the export id)."""
    try:
        with open(report, encoding="utf-8", errors="replace") as handle:
            head = handle.read(4096)
    except OSError as error:
        raise _invalid(f"{OPEN_REPORT}: cannot read the report {report}: {error.strerror}") from None
    if export_id_of(head) != result.export_id:
        raise _invalid(f"{OPEN_REPORT}: {report} describes an earlier export of {result.target}, not its latest "
                       "(that export's report is still being written, or could not be written: see the "
                       "onnxlens log); refusing to show it as this export's")


def _one_string(command: str, args: tuple[Any, ...], what: str, *, optional: bool = False) -> str | None:
    """The single string argument of a command (a {"target": ...}-style object is accepted too)."""
    if not args or (len(args) == 1 and args[0] is None):
        if optional:
            return None
        raise _invalid(f"{command}: expected one argument ({what}), got none")
    if len(args) != 1:
        raise _invalid(f"{command}: expected one argument ({what}), got {len(args)}")
    value = args[0]
    if isinstance(value, dict) and len(value) == 1:
        value = next(iter(value.values()))
    if not isinstance(value, str) or not value:
        raise _invalid(f"{command}: expected {what} as a string, got {value!r}")
    return value


class Commands(Feature):
    @command(EXPORT)
    def export(self, *args: Any) -> dict[str, Any]:
        name = _one_string(EXPORT, args, "a target name", optional=True)
        if name is None:
            return self.export_all()
        found = self._targets(EXPORT, name)
        for project, target in found:
            self.session.scheduler.request(project, target, "command", delay_s=0, force=True)
        return {"scheduled": [target for _, target in found]}

    @command(EXPORT_ALL)
    def export_all(self, *args: Any) -> dict[str, Any]:
        scheduled = []
        for project in self.session.projects.values():
            for target in project.targets:
                self.session.scheduler.request(project, target, "command", delay_s=0, force=True)
                scheduled.append(target)
        return {"scheduled": scheduled}

    @command(OPEN_REPORT)
    async def open_report(self, *args: Any) -> dict[str, Any]:
        value = _one_string(OPEN_REPORT, args, "a report path or a target name")
        found = self.session.find_targets(value)
        if found:
            project, target = found[0]
            result = project.targets[target].result
            if result is None or not result.report:
                raise _invalid(f"{OPEN_REPORT}: {target} has no report yet")
            path = result.report
        else:
            path = os.path.abspath(value)
            # The directories resolved, not the file: a report that is a link is refused below, saying so.
            if not self._inside_output_dir(os.path.join(norm(os.path.dirname(path)), os.path.basename(path))):
                raise _invalid(f"{OPEN_REPORT}: {value!r} is not a target nor a file in an onnxlens output directory")
            result = next((state.result for project in self.session.projects.values()
                           for state in project.targets.values()
                           if state.result and state.result.report and norm(state.result.report) == norm(path)), None)
        real = self._output_file(OPEN_REPORT, path, "report")
        if result is not None:
            _check_describes(real, result)
        return await self._show(real)

    @command(SHOW_EXPORTED_PROGRAM)
    async def show_exported_program(self, *args: Any) -> dict[str, Any]:
        name = _one_string(SHOW_EXPORTED_PROGRAM, args, "a target name")
        project, target = self._targets(SHOW_EXPORTED_PROGRAM, name)[0]
        result = project.targets[target].result
        program = result.exported_program if result else None
        if not program or not os.path.lexists(program):
            raise _invalid(f"{SHOW_EXPORTED_PROGRAM}: {target} has no exported program (its capture failed or "
                           "it was not exported yet)")
        return await self._show(self._output_file(SHOW_EXPORTED_PROGRAM, program, "exported program dump"))

    @command(RESTART_WORKER)
    async def restart_worker(self, *args: Any) -> dict[str, Any]:
        """Stop every job and the worker, start a fresh one (with the current `jobs` setting)."""
        await self.session.restart_service()
        return {"restarted": True}

    @command(OPEN_TRANSLATION)
    async def open_translation(self, *args: Any) -> dict[str, Any]:
        """Open a Python file of a configured workspace at a line (the stub the translation quick
        fix wrote): [path, line]."""
        if len(args) != 2 or not isinstance(args[0], str) or not isinstance(args[1], int) or args[1] < 1:
            raise _invalid(f"{OPEN_TRANSLATION}: expected [a file path, a line number], got {list(args)!r}")
        path = norm(args[0])
        if not path.endswith(".py") or not any(path.startswith(str(p.root) + "/") for p in self.session.projects.values()):
            raise _invalid(f"{OPEN_TRANSLATION}: {args[0]!r} is not a Python file of a configured workspace")
        if not Path(path).is_file():
            raise _invalid(f"{OPEN_TRANSLATION}: {path} does not exist")
        line = lsp.Position(line=args[1] - 1, character=0)
        return await self._show(path, lsp.Range(start=line, end=line))

    def _targets(self, command: str, name: str) -> list[tuple[Project, str]]:
        found = self.session.find_targets(name)
        if not found:
            known = sorted({n for p in self.session.projects.values() for n in p.targets})
            raise _invalid(f"{command}: unknown target {name!r} (targets: {', '.join(known) or 'none'})")
        return found

    def _inside_output_dir(self, path: str) -> bool:
        """`path` (symlinks resolved) is under a project's output directory (resolved too)."""
        return any(path.startswith(norm(project.output_dir) + os.sep) for project in self.session.projects.values())

    def _output_file(self, command: str, path: str, what: str) -> str:
        """The file onnxlens wrote at `path`, symlinks resolved, after the checks of the module's
        docstring; an error response naming what is wrong otherwise."""
        path = os.path.abspath(path)
        try:
            info = os.lstat(path)
        except FileNotFoundError:
            raise _invalid(f"{command}: the {what} {path} does not exist") from None
        except OSError as error:
            raise _invalid(f"{command}: cannot read the {what} {path}: {error.strerror}") from None
        if stat.S_ISLNK(info.st_mode):
            raise _invalid(f"{command}: the {what} {path} is a symbolic link (to {os.readlink(path)}), not the file "
                           f"onnxlens wrote: someone replaced it; refusing to open it")
        real = norm(path)
        if not self._inside_output_dir(real):  # a directory on the way is a link out of it
            raise _invalid(f"{command}: the {what} {path} is outside the onnxlens output directory once "
                           f"symbolic links are resolved ({real}): refusing to open it")
        if not stat.S_ISREG(info.st_mode):
            raise _invalid(f"{command}: the {what} {path} is not a regular file: refusing to open it")
        return real

    async def _show(self, path: str, selection: lsp.Range | None = None) -> dict[str, Any]:
        """Ask the client to open a file; a client without window/showDocument gets the path in a message."""
        client = self.session.client
        uri = uri_of(path)
        if client.features.show_document:
            return {"uri": uri, "shown": await client.show_document(uri, selection)}
        client.show_message(lsp.MessageType.Info, f"onnxlens: {path}")
        return {"uri": uri, "shown": False}
