"""Helpers for the language server tests: a real `onnxlens` server process on stdio, driven by
pytest-lsp's client (pygls) announcing the capabilities recorded from real editors, on a private
copy of examples/ with real exports."""

from __future__ import annotations

import ast
import asyncio
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types as lsp
from pygls.protocol import default_converter
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities
from pytest_lsp.client import DEFAULT_CLIENT_FEATURES, register_lsp_features

from example_workspace import copy_examples  # noqa: F401 - re-exported for the tests
from lsp_data import plain

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
SERVER = [sys.executable, "-m", "onnxlens.server"]  # what `onnxlens serve` runs

# Real exports of the example models take seconds (the first in a fresh worker more).
EXPORT_WAIT_S = 120.0


def line_of(path: Path, text: str) -> int:
    """0-based line of the first line containing `text` (the tests find lines by content)."""
    for number, line in enumerate(path.read_text().splitlines()):
        if text in line:
            return number
    raise AssertionError(f"{text!r} not in {path}")


async def wait_until(predicate: Callable[[], Any], timeout: float = EXPORT_WAIT_S, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        await asyncio.sleep(0.02)


async def stats(client: LanguageClient) -> dict[str, Any]:
    result = await asyncio.wait_for(client.protocol.send_request_async("onnxlens/stats", {}), 10)
    return plain(result)


async def exports_finished(client: LanguageClient, target: str, at_least: int, timeout: float = EXPORT_WAIT_S) -> dict:
    async def poll():
        while True:
            data = await stats(client)
            if data["per_target"].get(target, {}).get("finished", 0) + \
                    data["per_target"].get(target, {}).get("cached", 0) >= at_least:
                return data
            await asyncio.sleep(0.05)
    return await asyncio.wait_for(poll(), timeout)


async def start_session(client: LanguageClient, workspace: Path, editor: str,
                        options: dict[str, Any] | None = None) -> None:
    await client.initialize_session(lsp.InitializeParams(
        capabilities=client_capabilities(editor),
        root_uri=workspace.as_uri(),
        workspace_folders=[lsp.WorkspaceFolder(uri=workspace.as_uri(), name=workspace.name)],
        initialization_options={"onnxlens": {"debounceMs": 150, **(options or {})}},
    ))


def cleared(client: LanguageClient, path: Path) -> bool:
    """True once an empty diagnostics list was published for the file (it had some, or was checked)."""
    published = client.diagnostics.get(path.as_uri())
    return published is not None and len(published) == 0


def open_file(client: LanguageClient, path: Path) -> None:
    client.text_document_did_open(lsp.DidOpenTextDocumentParams(text_document=lsp.TextDocumentItem(
        uri=path.as_uri(), language_id="python", version=1, text=path.read_text())))


def save_file(client: LanguageClient, path: Path, text: str | None = None) -> None:
    """Write the file (as the editor does on save) and send didSave."""
    if text is not None:
        path.write_text(text)
    client.text_document_did_save(lsp.DidSaveTextDocumentParams(text_document=lsp.TextDocumentIdentifier(
        uri=path.as_uri())))


def make_client() -> LanguageClient:
    """pytest-lsp's client, also recording the order of diagnostics and progress notifications
    (diagnostics must arrive before the export's progress ends) and code lens refreshes."""
    client = LanguageClient(converter_factory=default_converter)
    client.events = []  # (method, params) in arrival order
    client.lens_refreshes = 0
    features = dict(DEFAULT_CLIENT_FEATURES)
    for method in (lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS, lsp.PROGRESS):
        features[method] = _recording(method, DEFAULT_CLIENT_FEATURES[method])

    def lens_refresh(client: LanguageClient, params: None) -> None:
        client.lens_refreshes += 1

    features[lsp.WORKSPACE_CODE_LENS_REFRESH] = lens_refresh
    register_lsp_features(client, features)
    return client


def _recording(method: str, default: Callable) -> Callable:
    def handler(client: LanguageClient, params: Any):
        client.events.append((method, params))
        return default(client, params)
    return handler


def server_config() -> ClientServerConfig:
    return ClientServerConfig(server_command=SERVER, client_factory=make_client)


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


EDITORS = ["visual-studio-code", "neovim"]

