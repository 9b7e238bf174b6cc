"""What an editor is told while an export runs and when it ends: the work-done progress (every
editor that announces it) and the `onnxlens/exportStatus` notification (clients that opt in, as
the VS Code extension does). One server on a copy of examples/ cut down to mlp and spectral."""

from __future__ import annotations

import pytest
import pytest_asyncio
from lsprotocol import types as lsp

from tests.support.lsp import Client
from tests.support.workspace import copy_examples

# slow: the language server and the export worker as processes
pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.slow]

# The opt-in the onnxlens VS Code extension sends with VS Code's capabilities.
EXPORT_STATUS_OPT_IN = {"onnxlens": {"exportStatus": True}}


def _without_encoder(workspace) -> None:
    config = workspace / "pyproject.toml"
    text = config.read_text()
    start, end = text.index("# Exports cleanly, with a dynamic batch"), text.index("# Fails in several places")
    config.write_text(text[:start] + text[end:])


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def client(tmp_path_factory):
    workspace = copy_examples(tmp_path_factory.mktemp("progress"))
    _without_encoder(workspace)
    client = await Client.launch(workspace, editor="visual-studio-code", experimental=EXPORT_STATUS_OPT_IN)
    for target in ("mlp", "spectral"):
        await client.exports_finished(target, 1)
    yield client
    await client.close()


def _exports_of(client: Client, target: str) -> list[list]:
    """The progress reports of each of `target`'s exports (begin, reports, end), in order."""
    return [reports for reports in client.progress_reports.values()
            if reports and isinstance(reports[0], lsp.WorkDoneProgressBegin) and reports[0].message == target]


def _ended(reports: list) -> bool:
    return isinstance(reports[-1], lsp.WorkDoneProgressEnd)


async def _mlp_idle(client: Client) -> None:
    await client.wait_for(lambda: all(_ended(r) for r in _exports_of(client, "mlp")), "mlp's export to end", 60)


async def test_a_save_answered_from_the_cache_reports_cached(client: Client):
    mlp = client.root / "models/mlp.py"
    await _mlp_idle(client)
    before = len(_exports_of(client, "mlp"))
    finished = (await client.stats())["per_target"]["mlp"]["finished"]

    # The file written again with the content of the last export (an editor's save after an
    # undo): a new modification time, so the server looks, and the cache answers.
    client.save(mlp, mlp.read_text())
    await client.exports_finished("mlp", finished + 1)
    await client.wait_for(lambda: len(_exports_of(client, "mlp")) > before and _ended(_exports_of(client, "mlp")[-1]),
                          "the progress of the cached export to end", 30)

    progress = _exports_of(client, "mlp")[-1]
    assert [r.message for r in progress if isinstance(r, lsp.WorkDoneProgressReport)] == ["cached"]
    assert progress[-1].message.startswith("mlp: exported in") and progress[-1].message.endswith("(cached)")
    assert (await client.stats())["last"]["mlp"]["cached"] is True


def _statuses(client: Client, target: str) -> list[dict]:
    return [status for status in client.statuses if status["target"] == target]


async def test_export_status_follows_an_export_from_its_start_to_its_outcome(client: Client):
    await _mlp_idle(client)
    finished = (await client.stats())["per_target"]["mlp"]["finished"]
    seen = len(_statuses(client, "mlp"))

    await client.workspace_execute_command_async(lsp.ExecuteCommandParams(command="onnxlens.export", arguments=["mlp"]))
    await client.exports_finished("mlp", finished + 1)
    await client.wait_for(lambda: _statuses(client, "mlp")[-1]["state"] != "exporting"
                          and not _statuses(client, "mlp")[-1]["verifying"], "mlp's last status", 10)

    statuses = _statuses(client, "mlp")[seen:]
    assert statuses[0] == {"target": "mlp", "state": "exporting", "stage": None, "seconds": None, "node_count": None,
                           "problems": 0, "warnings": 0, "cached": False, "verified": None, "verifying": False,
                           "summary": "", "change": None}
    *exporting, saved, end = statuses
    stages = [s["stage"] for s in exporting[1:]]
    assert all(s["state"] == "exporting" for s in exporting)
    # Verification comes after the result: the saved export is shown (verifying), then its outcome.
    assert stages[:2] == ["load", "capture"] and stages[-1] == "save" and "verify" not in stages
    assert (saved["state"], saved["verifying"], saved["verified"], saved["problems"]) == ("ok", True, None, 0)
    assert saved["summary"].startswith("mlp: exported in") and saved["summary"].endswith("; verifying")
    assert saved["change"] == end["change"]  # the same export's change, shown twice
    assert (end["state"], end["problems"], end["cached"], end["verified"], end["verifying"]) == ("ok", 0, False, True, False)
    assert end["node_count"] > 0 and end["seconds"] > 0
    # The same words as the progress's end, which editors without the notification show.
    assert end["summary"] == _exports_of(client, "mlp")[-1][-1].message


async def test_a_failed_export_ends_with_its_problem_count(client: Client):
    failed = await client.wait_for(lambda: [s for s in _statuses(client, "spectral") if s["state"] == "failed"],
                                   "spectral's failure", 60)
    assert (failed[-1]["problems"], failed[-1]["summary"]) == (2, "spectral: 2 problems")


async def test_a_cached_answer_says_so_in_its_status(client: Client):
    await _mlp_idle(client)
    mlp = client.root / "models/mlp.py"
    seen = len(_statuses(client, "mlp"))
    client.save(mlp, mlp.read_text())
    await client.wait_for(lambda: any(s["state"] == "ok" for s in _statuses(client, "mlp")[seen:]), "a cached outcome", 30)
    assert [s["cached"] for s in _statuses(client, "mlp")[seen:] if s["state"] == "ok"] == [True]


async def test_a_client_that_did_not_opt_in_gets_no_status(tmp_path):
    workspace = copy_examples(tmp_path)
    _without_encoder(workspace)
    client = await Client.launch(workspace, editor="visual-studio-code")
    try:
        await client.exports_finished("mlp", 1)
        assert client.statuses == [] and _exports_of(client, "mlp")
    finally:
        await client.close()
