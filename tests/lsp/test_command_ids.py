"""The commands the server implements are declared once (server/lsp/features/command_ids.py); the VS Code
extension, which cannot import Python, spells them in TypeScript and its package.json. These
tests read those files as they are shipped and hold them to the declaration: the commands the
extension sends are ones the server answers, and the extension's own commands keep other names
(the language client registers every command the server announces under the same name, and VS
Code refuses a command registered twice)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from onnxlens.server.lsp.app import create_language_server
from onnxlens.server.lsp.features import command_ids

REPO = Path(__file__).resolve().parents[2]
EXTENSION = REPO / "vscode-extension"


def _typescript_object(name: str) -> dict[str, str]:
    """`export const NAME = { key: "value", ... } as const;` of src/common/constants.ts."""
    source = (EXTENSION / "src" / "common" / "constants.ts").read_text(encoding="utf-8")
    body = re.search(rf"export const {name} = \{{(.*?)\}} as const;", source, re.S)
    assert body, f"constants.ts has no `{name}` object"
    return dict(re.findall(r'(\w+):\s*"([^"]+)"', body.group(1)))


def test_the_declaration_is_what_the_server_registers():
    assert set(create_language_server().protocol.fm.commands) == set(command_ids.ALL)
    assert len(set(command_ids.ALL)) == len(command_ids.ALL)


def test_the_commands_the_extension_sends_are_declared():
    sent = _typescript_object("ServerCommands")
    assert sent, "no server command found in constants.ts"
    assert set(sent.values()) <= set(command_ids.ALL), sorted(set(sent.values()) - set(command_ids.ALL))


def test_the_extensions_own_commands_never_take_a_server_commands_name():
    manifest = json.loads((EXTENSION / "package.json").read_text(encoding="utf-8"))
    contributed = {entry["command"] for entry in manifest["contributes"]["commands"]}
    own = set(_typescript_object("Commands").values())
    assert own and contributed == own
    assert not own & set(command_ids.ALL), sorted(own & set(command_ids.ALL))


def test_the_contract_lists_every_declared_command():
    lsp_md = (REPO / "docs" / "lsp.md").read_text(encoding="utf-8")
    section = lsp_md[lsp_md.index("## Commands"):]
    section = section[:section.index("\n## ", 1)]
    assert set(re.findall(r"^\| `(onnxlens\.\w+)` \|", section, re.M)) == set(command_ids.ALL)


def test_the_reader_sees_a_command_the_declaration_lacks():
    # The check above is not vacuous: a command the server does not answer is told apart.
    assert "onnxlens.noSuchCommand" not in command_ids.ALL
    assert {"onnxlens.exportAll", "onnxlens.openReport"} <= set(_typescript_object("ServerCommands").values())
