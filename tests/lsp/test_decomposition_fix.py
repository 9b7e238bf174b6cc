"""The quick fix "Decompose aten.X with torch's decomposition", through the language
server with VS Code's recorded capabilities, each step followed by the re-export that proves it:

the model aggregates messages with `Tensor.index_reduce` (no ONNX translation; torch._inductor
decomposes it into ops that have one) -> the fix adds `extra-decompositions` under the target's
header -> the re-export succeeds and verifies -> the user adds a `Tensor.put` call (the same
story) -> the fix appends it to the array -> exported and verified again.
"""

from __future__ import annotations

import tomllib

import pytest
from lsprotocol import types as lsp

from tests.support.edits import apply_workspace_edit
from tests.support.lsp import Client
from tests.support.workspace import line_of, write

PYPROJECT = '''[project]
name = "graphs"
version = "0"

[tool.onnxlens]
verify = true

[[tool.onnxlens.target]]
name = "gnn"
model = "models/gnn.py:Aggregate"
inputs = "models/gnn.py:example_inputs"
'''

MODEL = '''import torch
from torch import nn


class Aggregate(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x, src, dst):
        messages = self.lin(x)[src]
        out = torch.zeros(5, messages.shape[1])
        return out.index_reduce(0, dst, messages, "mean", include_self=False)


def example_inputs():
    torch.manual_seed(0)
    return (torch.randn(5, 8), torch.tensor([0, 1, 2, 3, 4, 0]), torch.tensor([1, 2, 3, 4, 0, 2]))
'''

INDEX_REDUCE = 'return out.index_reduce(0, dst, messages, "mean", include_self=False)'
WITH_PUT = ('reduced = out.index_reduce(0, dst, messages, "mean", include_self=False)\n'
            '        return reduced.put(torch.tensor([0, 7]), messages[0, :2])')


async def _decompose(client: Client, path, diagnostic: lsp.Diagnostic, op: str) -> None:
    actions = await client.text_document_code_action_async(lsp.CodeActionParams(
        text_document=lsp.TextDocumentIdentifier(uri=path.as_uri()), range=diagnostic.range,
        context=lsp.CodeActionContext(diagnostics=[diagnostic])))
    titles = [a.title for a in actions or []]
    action = next((a for a in actions or [] if a.title.startswith(f"Decompose {op} with torch's decomposition")), None)
    assert action is not None, titles
    assert f"Write an ONNX translation for {op}" in titles  # the alternative stays on offer
    assert action.kind == lsp.CodeActionKind.QuickFix and action.command is None
    for changed in apply_workspace_edit(action.edit):
        client.save(changed)


@pytest.mark.slow  # the language server and the export worker as processes
@pytest.mark.asyncio
async def test_decompose_quick_fix_then_extend_it(tmp_path):
    write(tmp_path / "pyproject.toml", PYPROJECT)
    model = tmp_path / "models" / "gnn.py"
    write(model, MODEL)
    root = tmp_path.resolve()
    model, config = model.resolve(), root / "pyproject.toml"
    client = await Client.launch(tmp_path, editor="visual-studio-code", settings={"debounceMs": 100})
    try:
        line = line_of(model, INDEX_REDUCE)
        client.open(model)
        unsupported = await client.wait_diagnostic(model, "unsupported-op", line)
        assert "aten.index_reduce.default" in unsupported.message

        finished = (await client.stats())["per_target"]["gnn"]["finished"]
        await _decompose(client, model, unsupported, "aten.index_reduce")
        target = tomllib.loads(config.read_text())["tool"]["onnxlens"]["target"][0]
        assert target["extra-decompositions"] == ["aten.index_reduce.default"]
        lines = config.read_text().splitlines(keepends=True)
        assert lines[line_of(config, "[[tool.onnxlens.target]]")].startswith("extra-decompositions = ")
        assert "".join(line for line in lines if "extra-decompositions" not in line) == PYPROJECT  # the rest untouched

        # The config's save re-exports: no problem left, the model written and verified.
        await client.exports_finished("gnn", finished + 1)
        await client.wait_for(lambda: client.cleared(model), "the model's diagnostics cleared", 60)
        onnx = root / ".onnxlens" / "gnn.onnx"
        assert onnx.is_file()
        stamp = onnx.stat().st_mtime_ns

        # A second op with the same story: the fix appends it to the array.
        client.save(model, model.read_text().replace(INDEX_REDUCE, WITH_PUT))
        put = await client.wait_diagnostic(model, "unsupported-op", line_of(model, "reduced.put("))
        assert "aten.put.default" in put.message
        finished = (await client.stats())["per_target"]["gnn"]["finished"]
        await _decompose(client, model, put, "aten.put")
        assert tomllib.loads(config.read_text())["tool"]["onnxlens"]["target"][0]["extra-decompositions"] == [
            "aten.index_reduce.default", "aten.put.default"]
        await client.exports_finished("gnn", finished + 1)
        await client.wait_for(lambda: client.cleared(model), "the model's diagnostics cleared", 60)
        assert onnx.stat().st_mtime_ns != stamp
    finally:
        await client.close()


def _spec(root, extra):
    from onnxlens.exporter.types import TargetSpec
    return TargetSpec(name="gnn", root=str(root), model="models/gnn.py:Aggregate", inputs="models/gnn.py:example_inputs",
                      output=str(root / "gnn.onnx"), report=str(root / "gnn.md"), extra_decompositions=extra)


OFFER = {"op": "aten.put.default", "source": "torch/_inductor/decomposition.py:1", "into": ["aten.index_put.default"]}


def test_no_fix_where_the_array_spans_lines_or_already_has_the_op(tmp_path):
    from onnxlens.exporter.types import DecompositionOffer
    from onnxlens.server.fixits import decomposition
    from onnxlens.server.fixits.fix import ConfiguredTarget

    config = tmp_path / "pyproject.toml"
    offer = DecompositionOffer.from_dict(OFFER)
    write(config, PYPROJECT + 'extra-decompositions = [\n    "aten.index_reduce.default",\n]\n')
    header = line_of(config, "[[tool.onnxlens.target]]")
    assert decomposition.plan(ConfiguredTarget(_spec(tmp_path, ["aten.index_reduce.default"]), config, header), offer) is None
    assert decomposition.plan(ConfiguredTarget(_spec(tmp_path, ["aten.put.default"]), config, header), offer) is None


def test_an_empty_array_on_one_line_gets_the_op(tmp_path):
    from onnxlens.exporter.types import DecompositionOffer
    from onnxlens.server.fixits import decomposition
    from onnxlens.server.fixits.fix import ConfiguredTarget

    config = tmp_path / "pyproject.toml"
    write(config, PYPROJECT + "extra-decompositions = [ ]  # none yet\n")
    target = ConfiguredTarget(_spec(tmp_path, ["x.y"]), config, line_of(config, "[[tool.onnxlens.target]]"))
    fix = decomposition.plan(target, DecompositionOffer.from_dict(OFFER))
    [insertion] = fix.insertions
    text = config.read_text().splitlines(keepends=True)
    line = text[insertion.line - 1]
    text[insertion.line - 1] = line[:insertion.column - 1] + insertion.text + line[insertion.column - 1:]
    assert tomllib.loads("".join(text))["tool"]["onnxlens"]["target"][0]["extra-decompositions"] == ["aten.put.default"]
