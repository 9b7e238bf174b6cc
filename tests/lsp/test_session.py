"""One language server session (VS Code's recorded capabilities) on a copy of examples/, driven
through its triggers, commands and settings. The tests share the session (starting a server and
its export worker per test would cost the suite more than it proves), so each test first waits
for the state it needs rather than relying on the previous test.
"""

from __future__ import annotations

import asyncio
import re

import pytest
import pytest_asyncio
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException

from tests.support.lsp import Client
from tests.support.workspace import copy_examples, lsp_line

# slow: the language server and the export worker as processes
pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.slow]

DEBOUNCE_MS = 150
# Longer than the debounce plus a watchdog event's way to the server: a trigger that was going
# to export has started by then.
QUIET_S = 1.5


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def client(tmp_path_factory):
    client = await Client.launch(copy_examples(tmp_path_factory.mktemp("session")), editor="visual-studio-code",
                                 settings={"debounceMs": DEBOUNCE_MS})
    for target in ("mlp", "encoder", "spectral"):
        await client.exports_finished(target, 1)
    yield client
    await client.close()


async def _idle(client: Client) -> dict:
    """Stats once no export is pending or running."""
    return await client.wait_idle(quiet=QUIET_S, timeout=180)


def _started(data: dict, target: str) -> int:
    return data["per_target"].get(target, {}).get("started", 0)


def _touch_encoder(client: Client, why: str) -> None:
    encoder = client.root / "models/encoder.py"
    client.save(encoder, encoder.read_text() + f"\n# {why}\n")


async def test_warm_up_reported_and_workspace_exported_on_open(client: Client):
    begins = [reports[0] for reports in client.progress_reports.values() if reports]
    assert any(isinstance(b, lsp.WorkDoneProgressBegin) and b.title == "onnxlens" and b.message == "warming up"
               for b in begins)
    assert any("warming up" in m.message for m in client.log_messages)
    data = await client.stats()
    assert {"mlp", "encoder", "spectral"} <= set(data["per_target"])
    assert data["service_ready"]
    assert client.lens_refreshes > 0  # VS Code announced refreshSupport: lenses follow the results


async def test_save_of_unrelated_file_exports_nothing(client: Client):
    before = await _idle(client)
    notes = client.root / "notes.py"
    client.save(notes, "# not imported by any target\n")
    after = await _idle(client)  # quiet for QUIET_S: a trigger that was going to export has started
    assert after["started"] == before["started"]
    assert after["triggers"] == before["triggers"]


async def test_save_exports_only_the_targets_importing_the_file(client: Client):
    before = await _idle(client)
    features = client.root / "models/features.py"
    client.save(features, features.read_text() + "\n# touched\n")
    await client.exports_finished("spectral", before["per_target"]["spectral"]["finished"] + 1)
    after = await _idle(client)
    assert _started(after, "spectral") == _started(before, "spectral") + 1
    assert _started(after, "mlp") == _started(before, "mlp")
    assert _started(after, "encoder") == _started(before, "encoder")


async def test_change_on_disk_without_the_editor_reexports(client: Client):
    before = await _idle(client)
    mlp = client.root / "models/mlp.py"
    mlp.write_text(mlp.read_text() + "\n# formatted by another tool\n")  # no didSave: watchdog sees it
    data = await client.exports_finished("mlp", before["per_target"]["mlp"]["finished"] + 1)
    assert "changed on disk" in data["last"]["mlp"]["reason"]
    after = await _idle(client)
    assert _started(after, "mlp") == _started(before, "mlp") + 1  # one export, not one per event


async def test_burst_of_saves_runs_at_most_two_exports_and_ends_with_the_final_content(client: Client):
    before = await _idle(client)
    mlp = client.root / "models/mlp.py"
    original = mlp.read_text()
    final = original.replace("return self.net(x).softmax(dim=-1)",
                             "return torch.special.zeta(self.net(x).abs() + 2.0, 2.0)")
    assert final != original
    try:
        for i in range(19):
            client.save(mlp, original + f"\n# edit {i}\n")
            await asyncio.sleep(0.02)
        client.save(mlp, final)
        after = await _idle(client)
        assert _started(after, "mlp") - _started(before, "mlp") <= 2
        assert after["per_target"]["mlp"]["finished"] > before["per_target"]["mlp"]["finished"]
        zeta_line = lsp_line(mlp, "torch.special.zeta")
        diagnostics = client.diagnostics.get(mlp.as_uri(), [])
        assert [d for d in diagnostics if d.code == "unsupported-op" and d.range.start.line == zeta_line], \
            diagnostics
    finally:
        client.save(mlp, original)
    await client.wait_for(lambda: client.cleared(mlp), "mlp diagnostics cleared", 120)


async def test_requests_are_answered_while_an_export_runs(client: Client):
    await _idle(client)
    mlp = client.root / "models/mlp.py"
    spectral = client.root / "models/spectral.py"
    client.open(spectral)
    _touch_encoder(client, "responsiveness")  # new content: a real job, not a cache hit

    await client.wait_stats(lambda data: "encoder" in data["running"], "the encoder export running", 60)

    requests = {
        "hover": lambda: client.text_document_hover_async(lsp.HoverParams(
            text_document=lsp.TextDocumentIdentifier(uri=mlp.as_uri()),
            position=lsp.Position(line=lsp_line(mlp, "self.net(x)"), character=12))),
        "codeAction": lambda: client.text_document_code_action_async(lsp.CodeActionParams(
            text_document=lsp.TextDocumentIdentifier(uri=spectral.as_uri()),
            range=lsp.Range(start=lsp.Position(line=0, character=0), end=lsp.Position(line=30, character=0)),
            context=lsp.CodeActionContext(diagnostics=[]))),
        "codeLens": lambda: client.text_document_code_lens_async(lsp.CodeLensParams(
            text_document=lsp.TextDocumentIdentifier(uri=spectral.as_uri()))),
    }
    # The event loop is never blocked by an export: each answer arrives while the export is still
    # running (the stats request after it says so, and no export has finished meanwhile). A loop
    # blocked by the export would answer only after it ended.
    finished = (await client.stats())["per_target"].get("encoder", {}).get("finished", 0)
    for name, send in requests.items():
        await asyncio.wait_for(send(), 60)
        stats = await client.stats()
        assert "encoder" in stats["running"], f"{name} was answered only after the export ended"
        assert stats["per_target"].get("encoder", {}).get("finished", 0) == finished, name


async def test_cancel_from_the_client_kills_the_job(client: Client):
    before = await _idle(client)
    known = set(client.progress_reports)
    _touch_encoder(client, "cancel")  # new content: a real job, not a cache hit

    def encoder_token():
        for token, reports in client.progress_reports.items():
            if token not in known and reports and getattr(reports[0], "message", None) == "encoder":
                return token
    token = await client.wait_for(encoder_token, "encoder progress", 60)
    client.window_work_done_progress_cancel(lsp.WorkDoneProgressCancelParams(token=token))
    await client.wait_progress_end(token, 30)
    assert client.progress_reports[token][-1].message == "encoder: cancelled"
    after = await _idle(client)
    assert after["per_target"]["encoder"]["cancelled"] == before["per_target"]["encoder"]["cancelled"] + 1
    assert after["per_target"]["encoder"]["finished"] == before["per_target"]["encoder"]["finished"]


async def test_config_edits_reload_and_invalid_config_is_a_diagnostic(client: Client):
    before = await _idle(client)
    config = client.root / "pyproject.toml"
    original = config.read_text()
    # Changing one target's settings re-exports that target only.
    changed = original.replace('name = "mlp"\n', 'name = "mlp"\nverify = false\n')
    assert changed != original
    client.save(config, changed)
    await client.exports_finished("mlp", before["per_target"]["mlp"]["finished"] + 1)
    after = await _idle(client)
    assert _started(after, "mlp") == _started(before, "mlp") + 1
    assert _started(after, "spectral") == _started(before, "spectral"), after["last"]

    # A broken config: a `config` diagnostic on the broken target's table in the config file; the
    # other targets are untouched; fixing it clears the diagnostic.
    broken = original.replace('inputs = "models/mlp.py:example_inputs"\n', "")
    client.save(config, broken)
    [problem] = await client.wait_for(
        lambda: [d for d in client.diagnostics.get(config.as_uri(), []) if d.code == "config"], "config diagnostic", 30)
    assert problem.range.start.line == lsp_line(config, "[[tool.onnxlens.target]]")  # mlp's table
    assert "inputs" in problem.message
    client.save(config, original)
    await client.wait_for(lambda: client.cleared(config), "config diagnostic cleared", 30)
    final = await _idle(client)
    assert _started(final, "spectral") == _started(before, "spectral")


@pytest.mark.parametrize("command, arguments, says", [
    ("onnxlens.openReport", ["/etc/passwd"], "not a target nor a file in an onnxlens output directory"),
    ("onnxlens.openReport", ["../pyproject.toml"], "not a target nor a file in an onnxlens output directory"),
    ("onnxlens.openReport", [42], "as a string"),
    ("onnxlens.openReport", [], "got none"),
    ("onnxlens.export", ["no-such-target"], "unknown target 'no-such-target'"),
    ("onnxlens.export", ["mlp", "encoder"], "got 2"),
    ("onnxlens.showExportedProgram", [{"nested": ["x"]}], "as a string"),
    ("onnxlens.showExportedProgram", ["no-such-target"], "unknown target"),
])
async def test_bad_command_arguments_are_error_responses(client: Client, command, arguments, says):
    shown = len(client.shown_documents)
    with pytest.raises(JsonRpcException, match=re.escape(says)):
        await asyncio.wait_for(client.workspace_execute_command_async(
            lsp.ExecuteCommandParams(command=command, arguments=arguments)), 10)
    assert len(client.shown_documents) == shown, "nothing opened"
    assert (await client.stats())["service_ready"], "the server is still alive"


async def test_open_report_by_path_inside_the_output_dir(client: Client):
    await _idle(client)
    report = client.root / ".onnxlens" / "reports" / "mlp.md"
    await client.wait_for(report.is_file, "mlp's report (written by the pipeline)", 10)
    await client.workspace_execute_command_async(lsp.ExecuteCommandParams(
        command="onnxlens.openReport", arguments=[str(report)]))
    await client.wait_for(lambda: client.shown_documents and client.shown_documents[-1].uri == report.resolve().as_uri(),
                          "window/showDocument of the report", 10)


async def test_settings_turn_export_on_save_off_and_report_bad_values(client: Client):
    before = await _idle(client)
    client.workspace_did_change_configuration(lsp.DidChangeConfigurationParams(
        settings={"onnxlens": {"exportOnSave": False, "debounceMs": "soon"}}))
    mlp = client.root / "models/mlp.py"
    client.save(mlp, mlp.read_text() + "\n# saved with exportOnSave off\n")
    assert _started(await _idle(client), "mlp") == _started(before, "mlp")
    assert any("debounceMs" in m.message for m in client.log_messages)

    # The pull model: an empty notification, the server asks with workspace/configuration.
    client.set_configuration({"exportOnSave": True}, section="onnxlens")
    logged = len(client.log_messages)
    client.workspace_did_change_configuration(lsp.DidChangeConfigurationParams(settings=None))
    await client.wait_for(lambda: any("exportOnSave=True" in m.message for m in client.log_messages[logged:]),
                          "settings pulled", 10)
    client.save(mlp, mlp.read_text() + "\n# and on again\n")
    await client.exports_finished("mlp", before["per_target"]["mlp"]["finished"] + 1)


async def test_restart_worker_then_export_still_works(client: Client):
    before = await _idle(client)
    reply = await asyncio.wait_for(client.workspace_execute_command_async(lsp.ExecuteCommandParams(
        command="onnxlens.restartWorker", arguments=[])), 120)
    assert reply is not None
    await client.workspace_execute_command_async(lsp.ExecuteCommandParams(command="onnxlens.export", arguments=["mlp"]))
    data = await client.exports_finished("mlp", before["per_target"]["mlp"]["finished"] + 1)
    assert data["last"]["mlp"]["status"] == "ok"
    # The files did not change, but the user asked: a real export, not the cached result.
    assert data["last"]["mlp"]["cached"] is False
