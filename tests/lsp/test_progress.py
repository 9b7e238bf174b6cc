"""What an editor is told while an export runs and when it ends: the work-done progress (every
editor that announces it) and the `onnxlens/exportStatus` notification (clients that opt in, as
the VS Code extension does). One server on a copy of examples/ cut down to mlp and spectral."""

from __future__ import annotations

import pytest
import pytest_lsp
from lsprotocol import types as lsp
from pytest_lsp import LanguageClient

from lsp_support import copy_examples, exports_finished, save_file, server_config, start_session, stats, wait_until

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
    await start_session(lsp_client, lsp_client.workspace_path, "visual-studio-code")
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
