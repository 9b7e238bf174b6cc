"""The code action "Add <Name> as an ONNX export target", through the language
server with VS Code's recorded capabilities: the client applies the edit and saves the files as
VS Code does, and the export that follows proves the new target works:

* a pyproject.toml without [tool.onnxlens] and an MLP class: the action adds the table, the
  target and example inputs; the model exports (its .onnx written, no diagnostics);
* a workspace without any pyproject.toml: the file is created; the model exports;
* a class whose constructor needs arguments: the generated factory raises NotImplementedError,
  and the export puts that on the factory's `raise` line; a model taking a config beside a
  config class with defaults is built from it, and its token ids are integers in the
  embedding's range: it exports;
* not offered on a class that is some target's model already, nor on a class that is no module.
"""

from __future__ import annotations

import tomllib

import pytest
from lsprotocol import types as lsp

from tests.support.edits import apply_workspace_edit
from tests.support.lsp import Client
from tests.support.workspace import line_of, write

pytestmark = pytest.mark.slow  # the language server and the export worker as processes

MLP = '''from torch import nn


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Linear(32, 3))

    def forward(self, x):
        return self.net(x)


class Settings:
    def forward(self, x):
        return x
'''

NEEDS_WIDTH = '''import torch
from torch import nn


class Wide(nn.Module):
    def __init__(self, width: int, depth: int = 2):
        super().__init__()
        self.proj = nn.Linear(width, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(x)
'''

# A language model laid out as nanoGPT's model.py is: a config dataclass with defaults, the model
# taking it untyped, token ids named `idx` going into an nn.Embedding of the config's size.
LANGUAGE_MODEL = '''from dataclasses import dataclass

import torch
from torch import nn


@dataclass
class TinyGPTConfig:
    vocab_size: int = 97
    n_embd: int = 16


class Block(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.fc = nn.Linear(config.n_embd, config.n_embd)

    def forward(self, x):
        return torch.relu(self.fc(x))


class TinyGPT(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.transformer = nn.ModuleDict(dict(wte=nn.Embedding(config.vocab_size, config.n_embd)))
        self.block = Block(config)
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size)

    def forward(self, idx, targets=None):
        return self.lm_head(self.block(self.transformer.wte(idx)))
'''

PROJECT = '''[project]
name = "models"
version = "0"
'''


async def _actions(client: Client, path, line: int) -> list[lsp.CodeAction]:
    """Code actions on `line` (1-based) of `path` as VS Code asks for its lightbulb: no `only`,
    no diagnostics, triggered automatically."""
    position = lsp.Position(line=line - 1, character=0)
    actions = await client.text_document_code_action_async(lsp.CodeActionParams(
        text_document=lsp.TextDocumentIdentifier(uri=path.as_uri()), range=lsp.Range(start=position, end=position),
        context=lsp.CodeActionContext(diagnostics=[], trigger_kind=lsp.CodeActionTriggerKind.Automatic)))
    return list(actions or [])


async def _add_target(client: Client, path, line: int, title: str):
    actions = await _actions(client, path, line)
    action = next((a for a in actions if a.title == title), None)
    assert action is not None, [a.title for a in actions]
    assert action.kind == lsp.CodeActionKind.RefactorRewrite
    changed = apply_workspace_edit(action.edit)
    for changed_path in changed:
        client.save(changed_path)
    return changed


async def _launch(tmp_path, files: dict[str, str]):
    for name, text in files.items():
        write(tmp_path / name, text)
    client = await Client.launch(tmp_path, editor="visual-studio-code", settings={"debounceMs": 100})
    return client, tmp_path.resolve()


@pytest.mark.asyncio
async def test_a_pyproject_without_onnxlens_gets_the_table_and_the_target_exports(tmp_path):
    client, root = await _launch(tmp_path, {"pyproject.toml": PROJECT, "models/mlp.py": MLP})
    model, config = root / "models" / "mlp.py", root / "pyproject.toml"
    try:
        client.open(model)
        # Asked for by kind: under "refactor" (VS Code's Refactor… menu), not among quick fixes.
        for only, offered in (([lsp.CodeActionKind.Refactor], True), ([lsp.CodeActionKind.QuickFix], False)):
            position = lsp.Position(line=line_of(model, "class MLP") - 1, character=0)
            actions = await client.text_document_code_action_async(lsp.CodeActionParams(
                text_document=lsp.TextDocumentIdentifier(uri=model.as_uri()),
                range=lsp.Range(start=position, end=position), context=lsp.CodeActionContext(diagnostics=[], only=only)))
            assert any(a.title == "Add MLP as an ONNX export target" for a in actions or []) is offered, (only, actions)
        changed = await _add_target(client, model, line_of(model, "class MLP"), "Add MLP as an ONNX export target")
        assert set(changed) == {model, config}
        assert config.read_text().startswith(PROJECT)  # the user's bytes first, as they were
        data = tomllib.loads(config.read_text())
        assert data["tool"]["onnxlens"]["target"] == [{"name": "mlp", "model": "models/mlp.py:MLP",
                                                      "inputs": "models/mlp.py:example_inputs_mlp"}]
        assert "torch.randn(2, 20)" in model.read_text()  # the first Linear's in_features
        await client.exports_finished("mlp", 1)
        await client.wait_for(lambda: (root / ".onnxlens" / "mlp.onnx").is_file(), "mlp.onnx written")
        stats = await client.wait_idle()
        assert stats["per_target"]["mlp"].get("failed", 0) == 0, stats
        assert not client.diagnostics_of(model) and not client.diagnostics_of(config), client.describe()

        # A target now: offered no more.
        assert not [a for a in await _actions(client, model, line_of(model, "class MLP"))
                    if a.title.startswith("Add MLP")]
    finally:
        await client.close()


@pytest.mark.asyncio
async def test_a_workspace_without_pyproject_gets_one_and_the_target_exports(tmp_path):
    client, root = await _launch(tmp_path, {"mlp.py": MLP})
    model, config = root / "mlp.py", root / "pyproject.toml"
    try:
        changed = await _add_target(client, model, line_of(model, "class MLP"), "Add MLP as an ONNX export target")
        assert config in changed and config.is_file()
        assert tomllib.loads(config.read_text())["tool"]["onnxlens"]["target"][0]["model"] == "mlp.py:MLP"
        await client.exports_finished("mlp", 1)
        await client.wait_for(lambda: (root / ".onnxlens" / "mlp.onnx").is_file(), "mlp.onnx written")
        assert not client.diagnostics_of(model), client.describe()
    finally:
        await client.close()


@pytest.mark.asyncio
async def test_a_model_built_from_its_config_gets_integer_token_ids_and_exports(tmp_path):
    """The action reads the file alone: the config class named after the model gives the
    factory (its defaults), the nn.Embedding `idx` feeds gives the ids' range (the config's
    vocab_size), not `torch.randn`: a float would not index an embedding."""
    client, root = await _launch(tmp_path, {"pyproject.toml": PROJECT, "gpt.py": LANGUAGE_MODEL})
    model = root / "gpt.py"
    try:
        await _add_target(client, model, line_of(model, "class TinyGPT("), "Add TinyGPT as an ONNX export target")
        text = model.read_text()
        assert "    return TinyGPT(config=TinyGPTConfig()).eval()\n" in text
        assert "    idx = torch.randint(0, 97, (2, 16))" in text
        await client.exports_finished("tinygpt", 1)
        await client.wait_for(lambda: (root / ".onnxlens" / "tinygpt.onnx").is_file(), "tinygpt.onnx written")
        stats = await client.wait_idle()
        assert stats["per_target"]["tinygpt"].get("failed", 0) == 0, stats
        assert not client.diagnostics_of(model), client.describe()
    finally:
        await client.close()


@pytest.mark.asyncio
async def test_constructor_arguments_are_asked_for_on_the_generated_factory(tmp_path):
    client, root = await _launch(tmp_path, {"pyproject.toml": PROJECT, "wide.py": NEEDS_WIDTH})
    model = root / "wide.py"
    try:
        await _add_target(client, model, line_of(model, "class Wide"), "Add Wide as an ONNX export target")
        text = model.read_text()
        assert "def build_wide():" in text and "return Wide(width=...)" in text
        raise_line = line_of(model, "raise NotImplementedError")
        await client.exports_finished("wide", 1)
        diagnostic = await client.wait_for(
            lambda: next((d for d in client.diagnostics_of(model) if "NotImplementedError" in d.message), None),
            "the NotImplementedError finding")
        assert diagnostic.range.start.line == raise_line - 1, client.describe()
        assert "give Wide's constructor arguments" in diagnostic.message
    finally:
        await client.close()


@pytest.mark.asyncio
async def test_not_offered_on_a_target_nor_on_a_class_that_is_no_module(tmp_path):
    configured = PROJECT + '''
[tool.onnxlens]

[[tool.onnxlens.target]]
name = "the-mlp"
model = "models/../models/mlp.py:MLP"
inputs = "models/mlp.py:example_inputs"
'''
    client, root = await _launch(tmp_path, {"pyproject.toml": configured,
                                            "models/mlp.py": MLP + "\n\ndef example_inputs():\n    return ()\n"})
    model = root / "models" / "mlp.py"
    try:
        for needle in ("class MLP", "class Settings", "def forward"):
            offered = [a.title for a in await _actions(client, model, line_of(model, needle))]
            assert not [t for t in offered if t.startswith("Add ")], (needle, offered)
    finally:
        await client.close()
