"""What each line produced (the inlay hints' data) and what an export changed since the previous
one: real exports of a small model of blocks, edited between exports
as a user would. Which line computes what is read off the model below.

`Block.forward`'s two lines run once per block (three blocks: blocks.0–2); `Net.forward`'s loop
line `x = block(x)` computes nothing itself (the blocks' lines do); `return self.out(x)` computes
the output.
"""

from __future__ import annotations

import collections
from pathlib import Path

import onnx
import pytest

from onnxlens.exporter.graph_change import graph_change
from onnxlens.exporter.graph_change import signed_bytes
from onnxlens.exporter.types import ExportedGraph
from tests.exporter.engine_support import shared_pipeline, spec_for, write
from tests.support.workspace import line_of

pytestmark = pytest.mark.slow  # several exports per test, each edited and exported again

NET = '''
import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.up = nn.Linear(dim, 512)
        self.down = nn.Linear(512, dim)

    def forward(self, x):
        h = torch.relu(self.up(x))
        return x + self.down(h)


class Net(nn.Module):
    def __init__(self, dim: int = 256) -> None:
        super().__init__()
        self.blocks = nn.ModuleList(Block(dim) for _ in range(3))
        self.out = nn.Linear(dim, 10)

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return self.out(x)


def build():
    torch.manual_seed(0)
    return Net().eval()


def example_inputs():
    torch.manual_seed(0)
    return (torch.randn(2, 16, 256),)


def named():
    return ({0: "batch", 1: "seq"},)


def dims():
    return ({0: torch.export.Dim("rows"), 1: torch.export.Dim("tokens")},)


def auto():
    return ({0: torch.export.Dim.AUTO, 1: torch.export.Dim.AUTO},)
'''

UP, DOWN, OUT = "h = torch.relu(self.up(x))", "return x + self.down(h)", "return self.out(x)"


def _export(root: Path, text: str, shapes: str, name: str = "net", previous=None):
    write(root, "graphnet.py", text)
    spec = spec_for(root, name, "graphnet.py:build", "graphnet.py:example_inputs", dynamic_shapes=f"graphnet.py:{shapes}")
    result = shared_pipeline().run(spec, previous=previous)
    assert result.status == "ok", [f.message for f in result.findings]
    return result


def _ops(path: str) -> collections.Counter:
    return collections.Counter(node.op_type for node in onnx.load(path, load_external_data=False).graph.node)


@pytest.mark.parametrize(("shapes", "batch", "seq"), [("named", "batch", "seq"), ("dims", "rows", "tokens")])
def test_each_line_produced_its_values_named_as_the_spec_declares(tmp_path, shapes, batch, seq):
    result = _export(tmp_path, NET, shapes)
    path = str((tmp_path / "graphnet.py").resolve())
    by_line = {info.line: info for info in result.lines if info.file == path and info.produced}
    up, down, out = (line_of(tmp_path / "graphnet.py", code) for code in (UP, DOWN, OUT))
    assert set(by_line) == {up, down, out}
    assert by_line[up].produced == [f"[{batch}, {seq}, 512] f32"]
    assert by_line[down].produced == [f"[{batch}, {seq}, 256] f32"]
    assert by_line[out].produced == [f"[{batch}, {seq}, 10] f32"]
    assert by_line[up].ran_in == by_line[down].ran_in == ["blocks.0", "blocks.1", "blocks.2"]
    assert by_line[out].ran_in == [""]  # the root module's forward
    assert by_line[down].code == DOWN  # the text that tells the line apart in the next export
    # The graph in brief: the inputs and outputs with their dynamic axes by name.
    assert [(v.name, v.dtype, v.dims) for v in result.graph.inputs] == [("x", "float32", [batch, seq, 256])]
    assert [(v.dtype, v.dims) for v in result.graph.outputs] == [("float32", [batch, seq, 10])]
    assert result.graph.outputs[0].line.line == out
    assert sum(result.graph.ops.values()) == result.node_count


def test_a_line_added_is_the_change_and_the_lines_it_moved_are_not(tmp_path):
    before = _export(tmp_path, NET, "named")
    before_ops = _ops(before.onnx)
    added = NET.replace("        self.out = nn.Linear(dim, 10)\n",
                        "        self.out = nn.Linear(dim, 10)\n        self.norm = nn.LayerNorm(dim)\n") \
        .replace("        return self.out(x)\n", "        x = self.norm(x)\n        return self.out(x)\n")
    after = _export(tmp_path, added, "named", previous=ExportedGraph.of(before))
    change = graph_change(ExportedGraph.of(before), ExportedGraph.of(after))
    ops = _ops(after.onnx)
    assert change.ops_added == dict(ops - before_ops) == {"LayerNormalization": 1}
    assert change.ops_removed == {} and not before_ops - ops
    [line] = change.lines  # `return self.out(x)` moved down one line: the same text, unchanged
    assert (line.line, line.code, line.added, line.new) == (line_of(tmp_path / "graphnet.py", "x = self.norm(x)"),
                                                             "x = self.norm(x)", {"LayerNormalization": 1}, True)
    assert change.values == [] and change.notices == []
    assert change.describe().startswith("+1 node (LayerNormalization), ")
    # The report of the second export says the same (its job was given the first's graph).
    report = Path(after.report).read_text()
    section = report.split("## Change since the last export\n", 1)[1].split("\n## ", 1)[0]
    assert change.describe() in section and "`x = self.norm(x)`" in section


def test_an_axis_the_code_fixed_is_a_notice_on_that_line(tmp_path):
    before = _export(tmp_path, NET, "auto")
    fixed = NET.replace("        for block in self.blocks:\n",
                        "        x = x.reshape(2, x.shape[1], 256)\n        for block in self.blocks:\n")
    after = _export(tmp_path, fixed, "auto")
    change = graph_change(ExportedGraph.of(before), ExportedGraph.of(after))
    [notice] = change.notices  # the input's axis; the output's follows from it and is not repeated
    assert notice.location.line == line_of(tmp_path / "graphnet.py", "x = x.reshape(2, x.shape[1], 256)")
    assert notice.message.startswith("since the last export, input `x` axis 0 is fixed to 2")
    assert any(value.startswith("input `x` axis 0: ") and value.endswith("→ 2 (static)") for value in change.values)


def test_a_jump_in_size_is_a_notice_on_the_line_whose_weights_grew(tmp_path):
    before = _export(tmp_path, NET, "named")
    wide = NET.replace("nn.Linear(dim, 10)", "nn.Linear(dim, 4000)")
    after = _export(tmp_path, wide, "named")
    change = graph_change(ExportedGraph.of(before), ExportedGraph.of(after))
    grown = 256 * 3990 * 4 + 3990 * 4  # the head's weight and bias, float32
    assert change.initializer_bytes == grown and change.ops_added == change.ops_removed == {}
    [notice] = change.notices
    assert notice.location.line == line_of(tmp_path / "graphnet.py", OUT)
    assert signed_bytes(grown) in notice.message
    [value] = change.values
    assert value.startswith("output 0 ") and value.endswith("axis 2: 10 (static) → 4000 (static)")


def test_an_output_dtype_that_changed_is_a_notice_on_the_edited_line(tmp_path):
    before = _export(tmp_path, NET, "named")
    half = NET.replace("        return self.out(x)\n", "        return self.out(x).half()\n")
    after = _export(tmp_path, half, "named")
    change = graph_change(ExportedGraph.of(before), ExportedGraph.of(after))
    [notice] = change.notices
    assert notice.location.line == line_of(tmp_path / "graphnet.py", "return self.out(x).half()")
    assert "is float16; it was float32" in notice.message
