"""The quick fix "Write an ONNX translation for X", through the language server with
VS Code's recorded capabilities, each step followed by the re-export that proves it:

the model calls `torch.hypot`, which the exporter cannot translate -> the fix creates the
target's translations module and adds `custom-translations` to pyproject.toml, then opens the
stub -> the unfinished stub fails on its `raise` line -> a wrong body is a `mismatch` in the
translation -> the right body exports and verifies -> a second op (`torch.polygamma`) extends the
same module and table.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from lsprotocol import types as lsp

from tests.support.edits import apply_workspace_edit
from tests.support.lsp import Client, uri_path
from tests.support.workspace import line_of, write

pytestmark = pytest.mark.slow  # the language server and the export worker as processes

PYPROJECT = '''[project]
name = "geometry"
version = "0"

[tool.onnxlens]
verify = true

[[tool.onnxlens.target]]
name = "geo"
model = "models/geo.py:Geo"
inputs = "models/geo.py:example_inputs"
'''

MODEL = '''import torch
from torch import nn


class Geo(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.proj(x)
        return torch.hypot(h, x)


def example_inputs():
    torch.manual_seed(0)
    return (torch.randn(3, 4),)
'''

RAISE = 'raise NotImplementedError("write the ONNX translation of {op}")'
HYPOT = "return op.Sqrt(op.Add(op.Mul(self, self), op.Mul(other, other)))"


async def _fix(client: Client, path: Path, diagnostic: lsp.Diagnostic, title: str) -> lsp.CodeAction:
    actions = await client.text_document_code_action_async(lsp.CodeActionParams(
        text_document=lsp.TextDocumentIdentifier(uri=path.as_uri()), range=diagnostic.range,
        context=lsp.CodeActionContext(diagnostics=[diagnostic])))
    titles = [a.title for a in actions or []]
    assert title in titles, titles
    return next(a for a in actions if a.title == title)


async def _apply(client: Client, action: lsp.CodeAction) -> list[Path]:
    """As VS Code applies a code action: its edit (files saved), then its command."""
    changed = apply_workspace_edit(action.edit)
    for path in changed:
        client.save(path)
    shown = len(client.shown_documents)
    await client.workspace_execute_command_async(lsp.ExecuteCommandParams(
        command=action.command.command, arguments=action.command.arguments))
    await client.wait_for(lambda: len(client.shown_documents) > shown, "the translation shown", 10)
    return changed


def _replace(client: Client, path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, (old, text)
    client.save(path, text.replace(old, new))


@pytest.mark.asyncio
async def test_write_translation_quick_fix_then_fill_it_in(tmp_path):
    write(tmp_path / "pyproject.toml", PYPROJECT)
    model = tmp_path / "models" / "geo.py"
    write(model, MODEL)
    client = await Client.launch(tmp_path, editor="visual-studio-code", settings={"debounceMs": 100})
    try:
        await _scenario(client, tmp_path.resolve(), model.resolve())
    finally:
        await client.close()


async def _scenario(client: Client, root: Path, model: Path) -> None:
    module = root / "models" / "onnx_translations.py"
    config = root / "pyproject.toml"
    hypot_line = line_of(model, "torch.hypot(h, x)")
    client.open(model)
    unsupported = await client.wait_diagnostic(model, "unsupported-op", hypot_line)

    # The fix: a new module beside the model, the key under the target's header, the stub shown.
    action = await _fix(client, model, unsupported, "Write an ONNX translation for prims.hypot")
    assert action.kind == lsp.CodeActionKind.QuickFix
    finished = (await client.stats())["per_target"]["geo"]["finished"]
    changed = await _apply(client, action)
    assert set(changed) == {module, config}
    target = tomllib.loads(config.read_text())["tool"]["onnxlens"]["target"][0]
    assert target["custom-translations"] == "models/onnx_translations.py:translations"
    shown = client.shown_documents[-1]
    assert uri_path(shown.uri) == module
    assert shown.selection.start.line + 1 == line_of(module, RAISE.format(op="prims.hypot.default"))
    assert "def prims_hypot(self, other):" in module.read_text()

    # Re-exported with the stub: it fails on the user's line, the stub's raise one click away.
    await client.exports_finished("geo", finished + 1)
    failed = await client.wait_diagnostic(model, "translation", hypot_line)
    assert (module, line_of(module, "raise NotImplementedError")) in {
        (uri_path(r.location.uri), r.location.range.start.line + 1) for r in failed.related_information or []}

    # A wrong body: verification puts the mismatch in the translation.
    _replace(client, module, RAISE.format(op="prims.hypot.default"), "return op.Add(self, other)")
    mismatch = await client.wait_diagnostic(module, "mismatch", line_of(module, "def prims_hypot("))
    assert "your ONNX translation of prims.hypot.default" in mismatch.message
    assert (model, hypot_line) in {(uri_path(r.location.uri), r.location.range.start.line + 1)
                                   for r in mismatch.related_information or []}

    # The right body: exported and verified, nothing left to show.
    finished = (await client.stats())["per_target"]["geo"]["finished"]
    _replace(client, module, "return op.Add(self, other)", HYPOT)
    await client.exports_finished("geo", finished + 1)
    await client.wait_for(lambda: client.cleared(model) and client.cleared(module), "diagnostics cleared", 30)
    assert (root / ".onnxlens" / "geo.onnx").is_file()

    # A second op: the same module and table grow; the config is left as it is.
    config_before = config.read_text()
    _replace(client, model, "return torch.hypot(h, x)", "return torch.hypot(h, x) + torch.polygamma(1, x.abs() + 1)")
    polygamma = await client.wait_diagnostic(model, "unsupported-op", hypot_line)
    assert "polygamma" in polygamma.message
    action = await _fix(client, model, polygamma, "Write an ONNX translation for aten.polygamma")
    assert await _apply(client, action) == [module]
    assert config.read_text() == config_before
    text = module.read_text()
    assert "def aten_polygamma(n: int, self):" in text and HYPOT in text
    table = text[text.index("translations = {"):]
    assert "torch.ops.prims.hypot.default: prims_hypot," in table
    assert "torch.ops.aten.polygamma.default: aten_polygamma," in table
    assert client.shown_documents[-1].selection.start.line + 1 == line_of(
        module, RAISE.format(op="aten.polygamma.default"))
    await client.wait_diagnostic(model, "translation", hypot_line)  # the new stub, unfinished
