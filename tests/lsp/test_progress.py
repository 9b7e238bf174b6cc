"""What an editor is told while an export runs and when it ends: the work-done progress (every
editor that announces it) and the `onnxlens/exportStatus` notification (clients that opt in, as
the VS Code extension does). One server on a copy of examples/ cut down to mlp and spectral."""

from __future__ import annotations

from typing import Any

import attrs
import pytest
import pytest_lsp
from lsprotocol import types as lsp
from pytest_lsp import LanguageClient, client_capabilities

from lsp_data import plain
from lsp_support import copy_examples, exports_finished, save_file, server_config, stats, wait_until

pytestmark = pytest.mark.asyncio(loop_scope="module")


def _without_encoder(workspace) -> None:
    config = workspace / "pyproject.toml"
    text = config.read_text()
    start, end = text.index("# Exports cleanly, with a dynamic batch"), text.index("# Fails in several places")
    config.write_text(text[:start] + text[end:])


@pytest_lsp.fixture(config=server_config(), scope="module")
async def client(lsp_client: LanguageClient, tmp_path_factory):
    lsp_client.workspace_path = copy_examples(tmp_path_factory.mktemp("progress"))
    _without_encoder(lsp_client.workspace_path)
    lsp_client.statuses = []

    @lsp_client.feature("onnxlens/exportStatus")
    def export_status(client: LanguageClient, params: Any) -> None:
        client.statuses.append(plain(params))

    workspace = lsp_client.workspace_path
    # VS Code's capabilities, plus the opt-in the onnxlens extension sends.
    capabilities = attrs.evolve(client_capabilities("visual-studio-code"),
                                experimental={"onnxlens": {"exportStatus": True}})
    await lsp_client.initialize_session(lsp.InitializeParams(
        capabilities=capabilities, root_uri=workspace.as_uri(),
        workspace_folders=[lsp.WorkspaceFolder(uri=workspace.as_uri(), name=workspace.name)]))
    for target in ("mlp", "spectral"):
        await exports_finished(lsp_client, target, 1)
    yield
    await lsp_client.shutdown_session()


def _exports_of(client: LanguageClient, target: str) -> list[list]:
    """The progress reports of each of `target`'s exports (begin, reports, end), in order."""
    return [reports for reports in client.progress_reports.values()
            if reports and isinstance(reports[0], lsp.WorkDoneProgressBegin) and reports[0].message == target]


def _ended(reports: list) -> bool:
    return isinstance(reports[-1], lsp.WorkDoneProgressEnd)


async def test_a_save_answered_from_the_cache_reports_cached(client: LanguageClient):
    mlp = client.workspace_path / "models/mlp.py"
    await wait_until(lambda: all(_ended(r) for r in _exports_of(client, "mlp")), 60, "mlp's export to end")
    before = len(_exports_of(client, "mlp"))
    finished = (await stats(client))["per_target"]["mlp"]["finished"]

    # The file written again with the content of the last export (an editor's save after an
    # undo): a new modification time, so the server looks, and the cache answers.
    save_file(client, mlp, mlp.read_text())
    await exports_finished(client, "mlp", finished + 1)
    await wait_until(lambda: len(_exports_of(client, "mlp")) > before and _ended(_exports_of(client, "mlp")[-1]),
                     30, "the progress of the cached export to end")

    progress = _exports_of(client, "mlp")[-1]
    assert [r.message for r in progress if isinstance(r, lsp.WorkDoneProgressReport)] == ["cached"]
    assert progress[-1].message.startswith("mlp: exported in") and progress[-1].message.endswith("(cached)")
    assert (await stats(client))["last"]["mlp"]["cached"] is True


def _statuses(client: LanguageClient, target: str) -> list[dict]:
    return [status for status in client.statuses if status["target"] == target]


async def test_export_status_follows_an_export_from_its_start_to_its_outcome(client: LanguageClient):
    await wait_until(lambda: all(_ended(r) for r in _exports_of(client, "mlp")), 60, "mlp's export to end")
    finished = (await stats(client))["per_target"]["mlp"]["finished"]
    seen = len(_statuses(client, "mlp"))

    await client.workspace_execute_command_async(lsp.ExecuteCommandParams(command="onnxlens.export", arguments=["mlp"]))
    await exports_finished(client, "mlp", finished + 1)
    await wait_until(lambda: _statuses(client, "mlp")[-1]["state"] != "exporting", 10, "mlp's last status")

    statuses = _statuses(client, "mlp")[seen:]
    assert statuses[0] == {"target": "mlp", "state": "exporting", "stage": None, "seconds": None, "node_count": None,
                           "problems": 0, "warnings": 0, "cached": False, "verified": None, "summary": ""}
    stages = [s["stage"] for s in statuses[1:-1]]
    assert all(s["state"] == "exporting" for s in statuses[1:-1])
    assert stages[:2] == ["load", "capture"] and "verify" in stages
    end = statuses[-1]
    assert (end["state"], end["problems"], end["cached"], end["verified"]) == ("ok", 0, False, True)
    assert end["node_count"] > 0 and end["seconds"] > 0
    # The same words as the progress's end, which editors without the notification show.
    assert end["summary"] == _exports_of(client, "mlp")[-1][-1].message


async def test_a_failed_export_ends_with_its_problem_count(client: LanguageClient):
    failed = await wait_until(lambda: [s for s in _statuses(client, "spectral") if s["state"] == "failed"], 60,
                              "spectral's failure")
    assert (failed[-1]["problems"], failed[-1]["summary"]) == (2, "spectral: 2 problems")


async def test_a_cached_answer_says_so_in_its_status(client: LanguageClient):
    await wait_until(lambda: all(_ended(r) for r in _exports_of(client, "mlp")), 60, "mlp's export to end")
    mlp = client.workspace_path / "models/mlp.py"
    seen = len(_statuses(client, "mlp"))
    save_file(client, mlp, mlp.read_text())
    await wait_until(lambda: any(s["state"] == "ok" for s in _statuses(client, "mlp")[seen:]), 30, "a cached outcome")
    assert [s["cached"] for s in _statuses(client, "mlp")[seen:] if s["state"] == "ok"] == [True]
