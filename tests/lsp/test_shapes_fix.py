"""The quick fix "Declare dynamic shapes", through the language server with VS Code's
recorded capabilities, each followed by the re-export that proves it:

* a transformers BERT (random init, a small config; code nobody here wrote) exported without
  dynamic shapes: the fix, asked for on the model factory's line, writes a `dynamic_shapes`
  factory after the example inputs (input_ids and attention_mask: batch and seq) and the key in
  pyproject.toml; the re-export's ONNX model has `batch` and `seq` axes;
* a target whose factory leaves an input out (torch.export refuses the dict): the fix adds it to
  the factory's dict, and the re-export has the axes on both inputs;
* a model whose code fixes its batch (`x.reshape(2, -1)` into a Linear of 12 features): after
  the fix, the export says so on that line.
"""

from __future__ import annotations

import tomllib

import onnx
import pytest
from lsprotocol import types as lsp

from tests.support.edits import apply_workspace_edit
from tests.support.lsp import Client
from tests.support.workspace import line_of, write

pytestmark = pytest.mark.slow  # the language server and the export worker as processes

PYPROJECT = '''[project]
name = "nlp"
version = "0"

[tool.onnxlens]
verify = true

[[tool.onnxlens.target]]
name = "{name}"
model = "models/{name}.py:build"
inputs = "models/{name}.py:example_inputs"
'''

BERT = '''import torch
from transformers import BertConfig, BertModel


def build():
    torch.manual_seed(0)
    config = BertConfig(vocab_size=500, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=64)
    return BertModel(config).eval()


def example_inputs():
    torch.manual_seed(0)
    input_ids = torch.randint(0, 500, (2, 16))
    return (input_ids,), {"attention_mask": torch.ones(2, 16, dtype=torch.long)}


def unrelated():
    return None
'''

FIXED_BATCH = '''import torch
from torch import nn


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(12, 4)

    def forward(self, x):
        return self.proj(x.reshape(2, -1))


def build():
    return Net().eval()


def example_inputs():
    return (torch.randn(2, 3, 4),)
'''


async def _declare(client: Client, path, line: int, title: str) -> list:
    """The fix on `line` of `path` (no diagnostic there: the action is on the definition)."""
    position = lsp.Position(line=line - 1, character=0)
    actions = await client.text_document_code_action_async(lsp.CodeActionParams(
        text_document=lsp.TextDocumentIdentifier(uri=path.as_uri()), range=lsp.Range(start=position, end=position),
        context=lsp.CodeActionContext(diagnostics=[])))
    titles = [a.title for a in actions or []]
    action = next((a for a in actions or [] if a.title == title), None)
    assert action is not None, titles
    changed = apply_workspace_edit(action.edit)
    for path in changed:
        client.save(path)
    return changed


async def _launch(tmp_path, name: str, model_text: str):
    write(tmp_path / "pyproject.toml", PYPROJECT.format(name=name))
    write(tmp_path / "models" / f"{name}.py", model_text)
    client = await Client.launch(tmp_path, editor="visual-studio-code", settings={"debounceMs": 100})
    root = tmp_path.resolve()
    return client, root, root / "models" / f"{name}.py", root / "pyproject.toml"


@pytest.mark.asyncio
async def test_declare_dynamic_shapes_for_a_transformers_bert(tmp_path):
    client, root, model, config = await _launch(tmp_path, "bert", BERT)
    try:
        client.open(model)
        await client.exports_finished("bert", 1)
        onnx_file = root / ".onnxlens" / "bert.onnx"
        static = [[d.dim_value for d in i.type.tensor_type.shape.dim] for i in onnx.load(onnx_file, load_external_data=False).graph.input]
        assert static == [[2, 16], [2, 16]]

        # Not offered on a line that is no target's definition.
        nothing = await client.text_document_code_action_async(lsp.CodeActionParams(
            text_document=lsp.TextDocumentIdentifier(uri=model.as_uri()),
            range=lsp.Range(start=lsp.Position(line=line_of(model, "def unrelated") - 1, character=0),
                            end=lsp.Position(line=line_of(model, "def unrelated") - 1, character=0)),
            context=lsp.CodeActionContext(diagnostics=[])))
        assert not [a for a in nothing or [] if a.title.startswith("Declare dynamic shapes")]

        finished = (await client.stats())["per_target"]["bert"]["finished"]
        changed = await _declare(client, model, line_of(model, "def build"), "Declare dynamic shapes for bert (batch, seq)")
        assert set(changed) == {model, config}
        assert tomllib.loads(config.read_text())["tool"]["onnxlens"]["target"][0]["dynamic-shapes"] == \
            "models/bert.py:dynamic_shapes"
        text = model.read_text()
        # After the example inputs, before what followed them.
        assert text.index("def example_inputs") < text.index("def dynamic_shapes") < text.index("def unrelated")
        assert '"input_ids": {0: "batch", 1: "seq"}' in text and '"attention_mask": {0: "batch", 1: "seq"}' in text

        await client.exports_finished("bert", finished + 1)
        await client.wait_for(lambda: onnx_file.stat().st_mtime_ns and _axes(onnx_file) == [["batch", "seq"]] * 2,
                              "the ONNX model's inputs with batch and seq axes", 60)
        assert client.cleared(model) or not client.published(model)

        # Declared now: no second offer.
        again = await client.text_document_code_action_async(lsp.CodeActionParams(
            text_document=lsp.TextDocumentIdentifier(uri=config.as_uri()),
            range=lsp.Range(start=lsp.Position(line=line_of(config, "[[tool.onnxlens.target]]") - 1, character=0),
                            end=lsp.Position(line=line_of(config, "[[tool.onnxlens.target]]") - 1, character=0)),
            context=lsp.CodeActionContext(diagnostics=[])))
        assert not [a for a in again or [] if a.title.startswith("Declare dynamic shapes")]
    finally:
        await client.close()


@pytest.mark.asyncio
async def test_the_next_export_checks_the_declared_shapes(tmp_path):
    client, root, model, config = await _launch(tmp_path, "fixed", FIXED_BATCH)
    try:
        client.open(model)
        await client.exports_finished("fixed", 1)
        # Offered in the config too, on the target's header.
        await _declare(client, config, line_of(config, "[[tool.onnxlens.target]]"), "Declare dynamic shapes for fixed (batch)")
        # torch.export refuses a batch declared dynamic that the code fixes: on the line that fixes it.
        problem = await client.wait_diagnostic(model, "torch-export", line_of(model, "self.proj(x.reshape(2, -1))"))
        assert problem.message.startswith("`x` dim 0 (`batch`) is declared dynamic, but this line fixes it to 2")
    finally:
        await client.close()


def _axes(path) -> list[list[str]]:
    return [[d.dim_param for d in i.type.tensor_type.shape.dim] for i in onnx.load(path, load_external_data=False).graph.input]


EXTEND_MODEL = BERT.replace('''def unrelated():''', '''def dynamic_shapes():
    return {
        "input_ids": {0: "batch", 1: "seq"},
    }


def unrelated():''')


@pytest.mark.asyncio
async def test_a_declared_factory_gets_the_inputs_it_misses(tmp_path):
    write(tmp_path / "pyproject.toml", PYPROJECT.format(name="bert") + 'dynamic-shapes = "models/bert.py:dynamic_shapes"\n')
    write(tmp_path / "models" / "bert.py", EXTEND_MODEL)
    client = await Client.launch(tmp_path, editor="visual-studio-code", settings={"debounceMs": 100})
    root = tmp_path.resolve()
    model, onnx_file = root / "models" / "bert.py", root / ".onnxlens" / "bert.onnx"
    try:
        client.open(model)
        # The mask was left out of the spec: torch.export refuses a dict without every input, and
        # the error is shown on the spec's `return`, where the fix is offered too.
        spec_return = line_of(model, "def dynamic_shapes") + 1
        refused = await client.wait_diagnostic(model, "setup", spec_return)
        assert "the spec has no entry for `attention_mask`" in refused.message
        assert "top-level keys must be the arg names" in refused.message
        assert not onnx_file.exists()
        finished = (await client.stats())["per_target"]["bert"]["finished"]
        changed = await _declare(client, model, spec_return, "Declare dynamic shapes for bert: add attention_mask")
        assert changed == [model]
        text = model.read_text()
        assert text[text.index("def dynamic_shapes"):text.index("def unrelated")].splitlines()[1:4] == [
            "    return {", '        "input_ids": {0: "batch", 1: "seq"},', '        "attention_mask": {0: "batch", 1: "seq"},']
        await client.exports_finished("bert", finished + 1)
        await client.wait_for(lambda: onnx_file.exists() and _axes(onnx_file) == [["batch", "seq"]] * 2,
                              "both inputs with batch and seq axes", 60)
        # Everything declared: no action any more.
        position = lsp.Position(line=line_of(model, "def dynamic_shapes") - 1, character=0)
        actions = await client.text_document_code_action_async(lsp.CodeActionParams(
            text_document=lsp.TextDocumentIdentifier(uri=model.as_uri()), range=lsp.Range(start=position, end=position),
            context=lsp.CodeActionContext(diagnostics=[])))
        assert not [a for a in actions or [] if a.title.startswith("Declare dynamic shapes")]
    finally:
        await client.close()
