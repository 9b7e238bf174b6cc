"""A weights-free model through the language server, as a user meets it: the
model is exported with its weights, then the factory is changed to build it on the meta device
(a real-size model costs nothing that way) and saved.

The export succeeds with no error diagnostic: an Information diagnostic at the model's definition
says what the model lacks, what was skipped and what was written; a graph-only
`.onnxlens/net.graph.onnx` is written beside the .onnx with weights, which stays as it was;
hover and the code lens still work. Without the feature the meta export fails in translation
("Cannot copy out of meta tensor; no data!"), with an error and no line data.
"""

from __future__ import annotations

import os

import onnx
import pytest
from lsprotocol import types as lsp

from onnxlens.exporter.onnx_pair import named_data_file
from tests.support.lsp import Client
from tests.support.workspace import lsp_line, write

pytestmark = pytest.mark.slow  # the language server and the export worker as processes

CONFIG = '''[tool.onnxlens]
verify = true

[[tool.onnxlens.target]]
name = "net"
model = "models/net.py:build"
inputs = "models/net.py:inputs"
'''

NET = '''import contextlib

import torch
from torch import nn

ON_META = False


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.up = nn.Linear(16, 64)
        self.down = nn.Linear(64, 16)

    def forward(self, x):
        h = torch.relu(self.up(x))
        return self.down(h)


def build():
    with torch.device("meta") if ON_META else contextlib.nullcontext():
        return Net().eval()


def inputs():
    return (torch.randn(2, 16),)
'''


@pytest.mark.asyncio
async def test_a_meta_model_saved_in_the_editor_exports_its_graph_and_keeps_the_real_onnx(tmp_path):
    write(tmp_path / "pyproject.toml", CONFIG)
    net = tmp_path / "models" / "net.py"
    write(net, NET)
    real = tmp_path / ".onnxlens" / "net.onnx"
    client = await Client.launch(tmp_path, settings={"debounceMs": 100})
    try:
        client.open(net)
        await client.exports_finished("net", 1)
        weights = named_data_file(real)
        assert real.is_file() and weights.is_file()
        before = {path: (path.read_bytes(), os.stat(path).st_mtime_ns) for path in (real, weights)}

        finished = (await client.stats())["per_target"]["net"]["finished"]
        client.save(net, NET.replace("ON_META = False", "ON_META = True"))
        await client.exports_finished("net", finished + 1)
        [note] = await client.wait_for(lambda: client.diagnostics_of(net), "the weights-free diagnostic", 60)

        # No error anywhere: one Information diagnostic at the model's definition, saying it all.
        assert not [d for diagnostics in client.all_diagnostics().values() for d in diagnostics
                    if d.severity in (lsp.DiagnosticSeverity.Error, lsp.DiagnosticSeverity.Warning)], client.describe()
        assert note.code == "weights-free" and note.severity == lsp.DiagnosticSeverity.Information
        assert note.range.start.line == lsp_line(net, "def build():")
        parameters = 16 * 64 + 64 + 64 * 16 + 16
        assert note.message.startswith(f"weights-free model: {parameters:,} parameters (")
        assert "are on the meta device: onnxlens exports its graph only, without weights." in note.message
        assert "1 tensor of the example inputs was moved to the meta device" in note.message
        assert "verification with onnxruntime (no weights to run)" in note.message
        assert "Written: the graph-only model .onnxlens/net.graph.onnx" in note.message
        assert "Not touched: .onnxlens/net.onnx, the last .onnx with weights" in note.message

        # The graph-only file: the graph, every weight declared without data; the real model kept.
        graph = onnx.load(str(tmp_path / ".onnxlens" / "net.graph.onnx"), load_external_data=False)
        assert [n.op_type for n in graph.graph.node] == ["Gemm", "Relu", "Gemm"]
        assert {t.name for t in graph.graph.initializer} == {"up.weight", "up.bias", "down.weight", "down.bias"}
        assert all(t.data_location == onnx.TensorProto.EXTERNAL and not t.raw_data for t in graph.graph.initializer)
        assert not (tmp_path / ".onnxlens" / "net.graph.onnx.data").exists()
        assert {path: (path.read_bytes(), os.stat(path).st_mtime_ns) for path in before} == before

        # Hover shows what the line became; the lens says graph only and nothing verified.
        hover = await client.text_document_hover_async(lsp.HoverParams(
            text_document=lsp.TextDocumentIdentifier(uri=net.as_uri()),
            position=lsp.Position(line=lsp_line(net, "h = torch.relu(self.up(x))"), character=12)))
        assert hover is not None and "`Gemm`" in hover.contents.value and "`Relu`" in hover.contents.value
        assert "float32[2, 64]" in hover.contents.value
        lenses = await client.text_document_code_lens_async(lsp.CodeLensParams(
            text_document=lsp.TextDocumentIdentifier(uri=net.as_uri())))
        [status] = [lens.command.title for lens in lenses if lens.command.command == "onnxlens.export"]
        assert status.startswith("onnxlens: net ✓") and "3 nodes" in status and "graph only, no weights" in status
        assert "verified" not in status
        assert "| verify | skipped (no weights) |" in (tmp_path / ".onnxlens" / "reports" / "net.md").read_text()
    finally:
        await client.close()
