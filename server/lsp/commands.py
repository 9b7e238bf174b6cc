"""workspace/executeCommand: onnxlens.export, exportAll, openReport, showExportedProgram, restartWorker.

Arguments come from anywhere (a lens, a code action, a user's keybinding): each is validated and
a bad one is an error response, never a crash, and never opens a file outside the output dir.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcInvalidParams

from .lifecycle import start_service
from .project import Project, norm
from .uris import uri_of

if TYPE_CHECKING:
    from .server import OnnxlensServer

EXPORT = "onnxlens.export"
EXPORT_ALL = "onnxlens.exportAll"
OPEN_REPORT = "onnxlens.openReport"
SHOW_EXPORTED_PROGRAM = "onnxlens.showExportedProgram"
RESTART_WORKER = "onnxlens.restartWorker"


# pygls inspects command handlers' type hints at call time to convert arguments; the server's
# type is only importable for type checkers (import cycle), so `ls` stays unannotated here.


def register(server: OnnxlensServer) -> None:
    server.command(EXPORT)(export)
    server.command(EXPORT_ALL)(export_all)
    server.command(OPEN_REPORT)(open_report)
    server.command(SHOW_EXPORTED_PROGRAM)(show_exported_program)
    server.command(RESTART_WORKER)(restart_worker)


def _invalid(message: str) -> JsonRpcInvalidParams:
    return JsonRpcInvalidParams(message=message)


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


def _targets(ls: OnnxlensServer, command: str, name: str) -> list[tuple[Project, str]]:
    found = ls.find_targets(name)
    if not found:
        known = sorted({n for p in ls.projects.values() for n in p.targets})
        raise _invalid(f"{command}: unknown target {name!r} (targets: {', '.join(known) or 'none'})")
    return found


def export(ls, *args: Any) -> dict[str, Any]:
    name = _one_string(EXPORT, args, "a target name", optional=True)
    if name is None:
        return export_all(ls)
    found = _targets(ls, EXPORT, name)
    for project, target in found:
        ls.scheduler.request(project, target, "command", delay_s=0, force=True)
    return {"scheduled": [target for _, target in found]}


def export_all(ls, *args: Any) -> dict[str, Any]:
    scheduled = []
    for project in ls.projects.values():
        for target in project.targets:
            ls.scheduler.request(project, target, "command", delay_s=0, force=True)
            scheduled.append(target)
    return {"scheduled": scheduled}


async def _show(ls: OnnxlensServer, path: str) -> dict[str, Any]:
    """Ask the client to open a file; a client without window/showDocument gets the path in a message."""
    uri = uri_of(path)
    window = ls.client_capabilities.window
    if window and window.show_document and window.show_document.support:
        result = await ls.window_show_document_async(lsp.ShowDocumentParams(uri=uri, take_focus=True))
        return {"uri": uri, "shown": bool(result and result.success)}
    ls.window_show_message(lsp.ShowMessageParams(type=lsp.MessageType.Info, message=f"onnxlens: {path}"))
    return {"uri": uri, "shown": False}


def _inside_output_dir(ls: OnnxlensServer, path: str) -> bool:
    for project in ls.projects.values():
        output = str(project.output_dir)
        if path.startswith(output + "/"):
            return True
    return False


async def open_report(ls, *args: Any) -> dict[str, Any]:
    value = _one_string(OPEN_REPORT, args, "a report path or a target name")
    found = ls.find_targets(value)
    if found:
        project, target = found[0]
        result = project.targets[target].result
        if result is None or not result.report:
            raise _invalid(f"{OPEN_REPORT}: {target} has no report yet")
        path = norm(result.report)
    else:
        path = norm(value)
        if not _inside_output_dir(ls, path):
            raise _invalid(f"{OPEN_REPORT}: {value!r} is not a target nor a file in an onnxlens output directory")
    if not Path(path).is_file():
        raise _invalid(f"{OPEN_REPORT}: the report {path} does not exist")
    return await _show(ls, path)


async def show_exported_program(ls, *args: Any) -> dict[str, Any]:
    name = _one_string(SHOW_EXPORTED_PROGRAM, args, "a target name")
    project, target = _targets(ls, SHOW_EXPORTED_PROGRAM, name)[0]
    result = project.targets[target].result
    program = result.exported_program if result else None
    if not program or not Path(program).is_file():
        raise _invalid(f"{SHOW_EXPORTED_PROGRAM}: {target} has no exported program (its capture failed or it "
                       "was not exported yet)")
    return await _show(ls, norm(program))


async def restart_worker(ls, *args: Any) -> dict[str, Any]:
    """Stop every job and the worker, start a fresh one (with the current `jobs` setting)."""
    await ls.scheduler.cancel_all()
    if ls.service is not None:
        await ls.service.shutdown()
        ls.service = None  # a new one picks up the current `jobs` setting
    ls.log(logging.INFO, "onnxlens: restarting the export worker")
    await start_service(ls)
    return {"restarted": True}
