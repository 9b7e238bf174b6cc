"""Workspaces: several root folders with a config each, a client announcing nothing optional,
folders added and removed, and a reopened workspace served from the result cache."""

from __future__ import annotations

import re

import psutil
import pytest
import pytest_asyncio
from lsprotocol import types as lsp

from tests.support.lsp import Client, poll_until
from tests.support.workspace import copy_examples

pytestmark = pytest.mark.slow  # the language server and the export worker as processes

ONLY_MLP = re.compile(r"\n# Exports cleanly, with a dynamic batch.*", re.S)


def _single_target(workspace, name: str) -> None:
    """Cut the config down to the mlp target (named `name`): these tests are about roots, not models."""
    config = workspace / "pyproject.toml"
    text = ONLY_MLP.sub("\n", config.read_text()).replace('name = "mlp"', f'name = "{name}"')
    config.write_text(text)


@pytest_asyncio.fixture
async def client(tmp_path):
    first = copy_examples(tmp_path / "a")
    second = copy_examples(tmp_path / "b")
    _single_target(first, "mlp")
    _single_target(second, "tiny")
    # A client that announces no optional capability: no progress, no showDocument, no lens refresh.
    client = await Client.launch(first, second, editor=None, settings={"debounceMs": 100})
    yield client
    await client.close()


@pytest.mark.asyncio
async def test_one_config_per_root_folder_and_a_minimal_client(client: Client):
    first, second = client.folders
    await client.exports_finished("mlp", 1)
    data = await client.exports_finished("tiny", 1)
    assert sorted(p["config"] for p in data["projects"]) == sorted(
        str((root / "pyproject.toml").resolve()) for root in (first, second))

    # A save in the second root re-exports its target only.
    mlp_b = second / "models/mlp.py"
    client.save(mlp_b, mlp_b.read_text() + "\n# edited in b\n")
    data = await client.exports_finished("tiny", 2)
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
    await client.wait_stats(lambda data: len(data["projects"]) == 1, "one project", 10)
    client.workspace_did_change_workspace_folders(lsp.DidChangeWorkspaceFoldersParams(
        event=lsp.WorkspaceFoldersChangeEvent(added=[lsp.WorkspaceFolder(uri=second.as_uri(), name="b")], removed=[])))
    await client.wait_stats(lambda data: len(data["projects"]) == 2, "two projects", 10)


@pytest.mark.asyncio
async def test_reopened_workspace_shows_cached_results_without_exporting(tmp_path):
    workspace = copy_examples(tmp_path)
    spectral = workspace / "models/spectral.py"

    first = await Client.launch(workspace, editor=None)
    try:
        for target in ("mlp", "encoder", "spectral"):
            data = await first.exports_finished(target, 1)
        worker_pid = data["worker_pid"]
        assert worker_pid and psutil.pid_exists(worker_pid)
    finally:
        await first.close()
    # shutdown stopped the export worker with the server: nothing left behind.
    poll_until(lambda: not psutil.pid_exists(worker_pid) or
               psutil.Process(worker_pid).status() == psutil.STATUS_ZOMBIE, "worker gone", 10)

    second = await Client.launch(workspace, editor=None)
    try:
        second.open(spectral)
        data = None
        for target in ("mlp", "encoder", "spectral"):
            data = await second.exports_finished(target, 1, timeout=60)
        assert data["started"] == 0 and data["cached"] == 3, data
        await second.wait_for(lambda: second.diagnostics.get(spectral.as_uri()), "cached diagnostics", 10)
        assert [d.code for d in second.diagnostics[spectral.as_uri()]] == ["unsupported-op"]
    finally:
        await second.close()
