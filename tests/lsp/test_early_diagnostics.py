"""Diagnostics ahead of the export's result (docs/lsp.md "Diagnostics"): a deep model whose
blocks call a helper with an op ONNX lacks gets a labelled diagnostic on the helper's line
while the export still runs; the result's publish replaces it with the final one; a cancelled
export's early diagnostics are withdrawn, whether a newer save or the client cancelled it.

One server (VS Code's capabilities) on a workspace of its own: one target, a model of 32
identical blocks; every save writes new content (no cache hits).
"""

from __future__ import annotations

import itertools

import pytest
import pytest_asyncio
from lsprotocol import types as lsp

from tests.support.lsp import Client, early
from tests.support.workspace import line_of, write

# slow: the language server and the export worker as processes
pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.slow]

CONFIG = '''
[tool.onnxlens]
verify = false

[[tool.onnxlens.target]]
name = "deep"
model = "deep.py:build"
inputs = "deep.py:inputs"
'''

MODEL = '''import torch
from torch import nn


def spread(h):
    return {spread}


def peak(h):
    return {peak}


class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.ff = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))

    def forward(self, x):
        h = self.ff(self.norm(x))
        return x + h * {helper}(h)


class Deep(nn.Module):
    def __init__(self, depth=32, dim=64):
        super().__init__()
        self.layers = nn.ModuleList(Block(dim) for _ in range(depth))

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


def build():
    return Deep().eval()


def inputs():
    return (torch.randn(2, 8, 64),)
'''

EIG = "torch.linalg.eig(h[:, :4, :4])[0].real.sum(-1)[:, None, None]"
SVD = "torch.linalg.svdvals(h[:, :4, :4]).sum(-1)[:, None, None]"
FINE = "h[:, :4, :4].sum((-1, -2))[:, None, None]"
TRACING = "(found while tracing; the export is still running)"
_saves = itertools.count()


def model(spread: str = FINE, peak: str = FINE, helper: str = "spread") -> str:
    """The model's text, new each time (a comment counts the saves): never a cache hit."""
    return MODEL.format(spread=spread, peak=peak, helper=helper) + f"# save {next(_saves)}\n"


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def client(tmp_path_factory):
    root = tmp_path_factory.mktemp("early")
    write(root / "pyproject.toml", CONFIG)
    write(root / "deep.py", model(spread=EIG))
    client = await Client.launch(root, editor="visual-studio-code", settings={"debounceMs": 100})
    await client.exports_finished("deep", 1)
    yield client
    await client.close()


def publishes(client: Client, path, since: int = 0) -> list[tuple[int, list[lsp.Diagnostic]]]:
    """(index in client.events, onnxlens diagnostics) of each publish for `path`, from `since`."""
    return [(index, [d for d in event.params.diagnostics if d.source == "onnxlens"])
            for index, event in enumerate(client.events) if index >= since
            and event.method == lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS and event.params.uri == path.as_uri()]


def on_line(diagnostics: list[lsp.Diagnostic], line: int) -> list[lsp.Diagnostic]:
    return [d for d in diagnostics if d.range.start.line == line - 1 and d.code == "unsupported-op"]


def progress_message(value) -> str | None:
    return value.get("message") if isinstance(value, dict) else getattr(value, "message", None)


async def test_an_early_diagnostic_on_the_helper_line_is_replaced_by_the_final_one(client: Client):
    deep = client.root / "deep.py"
    helper = line_of(deep, "torch.linalg.eig(")
    seen = publishes(client, deep)
    # The start-up export of the target: first the labelled diagnostic, sent while it captured.
    shown = [(index, on_line(diagnostics, helper)) for index, diagnostics in seen if on_line(diagnostics, helper)]
    assert shown and early(shown[0][1][0]), client.describe()
    first = shown[0][1][0]
    assert first.message.endswith(TRACING) and "aten.linalg_eig.default" in first.message
    assert first.data["target"] == "deep" and first.severity == lsp.DiagnosticSeverity.Error
    decompose = next(index for index, event in enumerate(client.events) if event.method == lsp.PROGRESS
                     and progress_message(event.params.value) == "decompose")
    assert shown[0][0] < decompose, "shown while capture still ran"

    # The result's publish replaces it: the same line, the same range, no label.
    [final] = client.diagnostics_of(deep)
    assert not early(final) and final.data == {"config": first.data["config"], "target": "deep"}
    assert final.range == first.range and not final.message.endswith(TRACING)
    assert final.message.startswith(first.message[:-len(TRACING) - 1].split(" [module:")[0])
    last = (await client.stats())["last"]["deep"]
    assert last["first_findings_seconds"] < last["service_seconds"]


async def _job_running_with_early_diagnostic(client: Client, line: int) -> lsp.Diagnostic:
    deep = client.root / "deep.py"
    return await client.wait_for(lambda: next((d for d in on_line(client.diagnostics_of(deep), line) if early(d)),
                                              None), f"an early diagnostic on deep.py:{line}", 60)


async def test_a_cancelled_exports_early_diagnostics_are_withdrawn(client: Client):
    deep = client.root / "deep.py"
    client.save(deep, model())  # fixed: the last result is clean
    await client.wait_for(lambda: client.cleared(deep), "deep.py cleared", 60)
    before = await client.wait_idle()

    known = set(client.progress_reports)
    client.save(deep, model(spread=SVD))
    await _job_running_with_early_diagnostic(client, line_of(deep, "torch.linalg.svdvals("))
    token = next(token for token, reports in client.progress_reports.items() if token not in known
                 and reports and getattr(reports[0], "message", None) == "deep")
    client.window_work_done_progress_cancel(lsp.WorkDoneProgressCancelParams(token=token))
    await client.wait_progress_end(token, 30)
    assert client.progress_reports[token][-1].message == "deep: cancelled"

    # Back to what the last result said (nothing), and it stays so: no late event of the
    # killed job shows again.
    await client.wait_for(lambda: client.cleared(deep), "the early diagnostic withdrawn", 30)
    after = await client.wait_idle(quiet=1.5)
    assert client.cleared(deep)
    counts, was = after["per_target"]["deep"], before["per_target"]["deep"]
    assert (counts["cancelled"], counts["finished"]) == (was["cancelled"] + 1, was["finished"])


async def test_a_newer_save_withdraws_the_cancelled_exports_early_diagnostics(client: Client):
    deep = client.root / "deep.py"
    before = await client.wait_idle()
    client.save(deep, model(spread=EIG))
    spread_line = line_of(deep, "torch.linalg.eig(")
    await _job_running_with_early_diagnostic(client, spread_line)
    mark = len(client.events)

    # The problem moves to another helper: the running export is cancelled, its diagnostic goes.
    client.save(deep, model(spread=EIG, peak=SVD, helper="peak"))
    peak_line = line_of(deep, "torch.linalg.svdvals(")
    data = await client.exports_finished("deep", before["per_target"]["deep"]["finished"] + 1)
    assert data["per_target"]["deep"]["cancelled"] == before["per_target"]["deep"]["cancelled"] + 1
    await client.wait_idle()

    later = publishes(client, deep, since=mark)
    withdrawn = next(i for i, (_, diagnostics) in enumerate(later) if not on_line(diagnostics, spread_line))
    assert not any(on_line(diagnostics, spread_line) for _, diagnostics in later[withdrawn:]), (
        "the cancelled export's diagnostic came back")
    assert any(any(early(d) for d in on_line(diagnostics, peak_line)) for _, diagnostics in later[withdrawn:])
    [final] = client.diagnostics_of(deep)
    assert final.range.start.line == peak_line - 1 and not early(final) and "_linalg_svd" in final.message


async def test_a_fixed_models_errors_go_when_translation_ends_before_the_export_finishes(client: Client):
    """Translation settles the export's errors (FindingsEvent.settled): the fixed model's old
    error is cleared then, while onnx.checker and the save still run; the result follows."""
    deep = client.root / "deep.py"
    client.save(deep, model(spread=SVD))
    await client.wait_diagnostic(deep, "unsupported-op", line_of(deep, "torch.linalg.svdvals("))
    before = await client.wait_idle()
    mark = len(client.events)

    client.save(deep, model())  # fixed
    await client.exports_finished("deep", before["per_target"]["deep"]["finished"] + 1)
    cleared = next(index for index, diagnostics in publishes(client, deep, since=mark) if not diagnostics)
    stages = [(index, progress_message(event.params.value)) for index, event in enumerate(client.events)
              if index >= mark and event.method == lsp.PROGRESS]
    check = next(index for index, stage in stages if stage == "check")
    save = next(index for index, stage in stages if stage == "save")
    assert next(index for index, stage in stages if stage == "translate") < cleared < check < save, stages
    assert client.cleared(deep)
