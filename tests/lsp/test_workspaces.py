"""Workspaces: several root folders with a config each, a client announcing nothing optional,
folders added and removed, and a reopened workspace served from the result cache."""

from __future__ import annotations

import asyncio
import re

import psutil
import pytest
import pytest_lsp
from lsprotocol import types as lsp
from pytest_lsp import LanguageClient

from lsp_support import (SERVER, copy_examples, exports_finished, make_client, open_file, save_file, server_config,
                         stats, wait_until)

ONLY_MLP = re.compile(r"\n# Exports cleanly, with a dynamic batch.*", re.S)


def _single_target(workspace, name: str) -> None:
    """Cut the config down to the mlp target (named `name`): these tests are about roots, not models."""
    config = workspace / "pyproject.toml"
    text = ONLY_MLP.sub("\n", config.read_text()).replace('name = "mlp"', f'name = "{name}"')
    config.write_text(text)


@pytest_lsp.fixture(config=server_config())
async def client(lsp_client: LanguageClient, tmp_path):
    first = copy_examples(tmp_path / "a")
    second = copy_examples(tmp_path / "b")
    _single_target(first, "mlp")
    _single_target(second, "tiny")
    lsp_client.roots = (first, second)
    lsp_client.statuses = []
    lsp_client.feature("onnxlens/exportStatus")(lambda client, params: client.statuses.append(params))
    # A client that announces no optional capability: no progress, no showDocument, no lens refresh.
    await lsp_client.initialize_session(lsp.InitializeParams(
        capabilities=lsp.ClientCapabilities(),
        workspace_folders=[lsp.WorkspaceFolder(uri=first.as_uri(), name="a"),
                           lsp.WorkspaceFolder(uri=second.as_uri(), name="b")],
        initialization_options={"onnxlens": {"debounceMs": 100}}))
    yield
    await lsp_client.shutdown_session()


@pytest.mark.asyncio
async def test_one_config_per_root_folder_and_a_minimal_client(client: LanguageClient):
    first, second = client.roots
    await exports_finished(client, "mlp", 1)
    data = await exports_finished(client, "tiny", 1)
    assert sorted(p["config"] for p in data["projects"]) == sorted(
        str((root / "pyproject.toml").resolve()) for root in (first, second))

    # A save in the second root re-exports its target only.
    mlp_b = second / "models/mlp.py"
    save_file(client, mlp_b, mlp_b.read_text() + "\n# edited in b\n")
    data = await exports_finished(client, "tiny", 2)
    assert data["per_target"]["mlp"]["started"] == 1

    # No progress was created for a client that did not announce it, nor an export status sent
    # (it did not ask); the outcome went to the log.
    assert client.progress_reports == {}
    assert client.statuses == []
    assert any(m.message.startswith("tiny: exported in") for m in client.log_messages)

    # Without window/showDocument, openReport answers with the path and says it in a message.
    reply = await client.workspace_execute_command_async(lsp.ExecuteCommandParams(
        command="onnxlens.openReport", arguments=["tiny"]))
    assert client.shown_documents == []
    assert any("tiny.md" in m.message for m in client.messages)
    assert reply is not None

    # Removing a folder forgets its project and clears its diagnostics; adding it back exports it.
    client.workspace_did_change_workspace_folders(lsp.DidChangeWorkspaceFoldersParams(
        event=lsp.WorkspaceFoldersChangeEvent(added=[], removed=[lsp.WorkspaceFolder(uri=second.as_uri(), name="b")])))

    async def project_count() -> int:
        return len((await stats(client))["projects"])

    async def wait_projects(count: int) -> None:
        while await project_count() != count:
            await asyncio.sleep(0.05)
    await asyncio.wait_for(wait_projects(1), 10)
    client.workspace_did_change_workspace_folders(lsp.DidChangeWorkspaceFoldersParams(
        event=lsp.WorkspaceFoldersChangeEvent(added=[lsp.WorkspaceFolder(uri=second.as_uri(), name="b")], removed=[])))
    await asyncio.wait_for(wait_projects(2), 10)


@pytest.mark.asyncio
async def test_reopened_workspace_shows_cached_results_without_exporting(tmp_path):
    workspace = copy_examples(tmp_path)
    spectral = workspace / "models/spectral.py"

    async def session():
        client = make_client()
        await client.start_io(*SERVER)
        await client.initialize_session(lsp.InitializeParams(
            capabilities=lsp.ClientCapabilities(),
            workspace_folders=[lsp.WorkspaceFolder(uri=workspace.as_uri(), name="examples")]))
        return client

    first = await session()
    try:
        for target in ("mlp", "encoder", "spectral"):
            data = await exports_finished(first, target, 1)
        worker_pid = data["worker_pid"]
        assert worker_pid and psutil.pid_exists(worker_pid)
    finally:
        await first.shutdown_session()
        await first.stop()
    # shutdown stopped the export worker with the server: nothing left behind.
    await wait_until(lambda: not psutil.pid_exists(worker_pid) or
                     psutil.Process(worker_pid).status() == psutil.STATUS_ZOMBIE, 10, "worker gone")

    second = await session()
    try:
        open_file(second, spectral)
        data = None
        for target in ("mlp", "encoder", "spectral"):
            data = await exports_finished(second, target, 1, timeout=60)
        assert data["started"] == 0 and data["cached"] == 3, data
        await wait_until(lambda: second.diagnostics.get(spectral.as_uri()), 10, "cached diagnostics")
        assert [d.code for d in second.diagnostics[spectral.as_uri()]] == ["unsupported-op"]
    finally:
        await second.shutdown_session()
        await second.stop()
