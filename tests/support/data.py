"""What pygls hands back, as plain data."""

from __future__ import annotations

import ast
from typing import Any


def plain(value: Any) -> Any:
    """pygls hands an unknown method's result back as nested namedtuple-like objects: make dicts."""
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if hasattr(value, "_asdict"):
        return {k: plain(v) for k, v in value._asdict().items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def action_commands(actions: list[Any] | None) -> dict[str, tuple[str, list[Any]]]:
    """title -> (command, arguments) of a codeAction reply.

    pytest-lsp's converter may read a CodeAction carrying a `command` back as a Command whose
    `.command` is the nested object (editor-clients.md); real editors read the reply fine, so
    both shapes are accepted here.
    """
    found = {}
    for action in actions or []:
        command = action.command
        if isinstance(command, str) and command.startswith("{"):  # the quirk: the nested object's text
            command = ast.literal_eval(command)
        if isinstance(command, dict):
            found[action.title] = (command["command"], list(command.get("arguments") or []))
        elif isinstance(command, str):  # a plain Command
            found[action.title] = (command, list(action.arguments or []))
        else:  # a CodeAction read back as such
            found[action.title] = (command.command, list(command.arguments or []))
    return found
