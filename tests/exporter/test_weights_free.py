"""Weights-free models: a model built on the meta device (or with FakeTensors)
exports its graph, its findings and its line data, with a `weights-free` note saying what was
skipped and what was written, and no error finding.

Without the feature each of these fails: the stock steps that read weights raise ("Cannot copy
out of meta tensor; no data!": optimize's constant folding, then the save), and a meta model
given CPU example inputs does not even capture (torch.export: tensors on two devices).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import onnx
import pytest
import torch

from onnxlens.exporter.pipeline.failures.errors import exception_chain
from onnxlens.exporter.pipeline.target.graph_only import checkable
from onnxlens.exporter.pipeline.target.weights import weights_free
from tests.exporter.engine_support import shared_pipeline, spec_for, write
from tests.support.workspace import line_of

pytestmark = pytest.mark.slow  # big models on the meta device, and the stock exporter beside

NET = '''
import torch
from torch import nn
from torch._subclasses.fake_tensor import FakeTensorMode


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.up = nn.Linear(64, 256)
        self.down = nn.Linear(256, 64)
        self.register_buffer("scale", torch.ones(64))

    def forward(self, x):
        h = torch.relu(self.up(x))
        return self.down(h) * self.scale


class Zeta(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        return torch.special.zeta(self.proj(x), 2.0)


def build():
    with torch.device("meta"):
        return Net().eval()


def build_with_weights():
    torch.manual_seed(0)
    return Net().eval()


def build_fake():
    with FakeTensorMode(allow_non_fake_inputs=True):
        return Net().eval()


def build_zeta():
    with torch.device("meta"):
        return Zeta().eval()


def meta_inputs():
    return (torch.zeros(2, 64, device="meta"),)


def cpu_inputs():
    return {"x": torch.randn(3, 64)}


def zeta_inputs():
    return (torch.randn(2, 8),)


def rows():
    return {"x": {0: torch.export.Dim("rows", min=1, max=64)}}


class Branches(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(16, 16)
        self.b = nn.Linear(16, 16)

    def forward(self, x):
        return torch.cond(x.sum() > 0, lambda x: self.a(x), lambda x: self.b(x).relu(), (x,))


def build_branches():
    with torch.device("meta"):
        return Branches().eval()


def branch_inputs():
    return (torch.randn(2, 16),)
'''

PARAMETERS = 64 * 256 + 256 + 256 * 64 + 64  # up and down; the buffer is no parameter


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("weights_free")
    write(root, "pkg/__init__.py", "")
    write(root, "pkg/net.py", NET)
    return root


def run(workspace: Path, name: str, model: str, inputs: str, **options):
    return shared_pipeline().run(spec_for(workspace, name, f"pkg/net.py:{model}", f"pkg/net.py:{inputs}", **options))


@pytest.fixture(scope="module")
def meta(workspace):
    return run(workspace, "meta", "build", "meta_inputs", verify=True)


def note_of(result):
    (note,) = [f for f in result.findings if f.code == "weights-free"]
    return note


def assert_graph_only(path: str, node_count: int) -> onnx.ModelProto:
    """The file loads without its data, has the graph, and declares every weight without data."""
    model = onnx.load(path, load_external_data=False)
    assert len(model.graph.node) == node_count > 0
    initializers = {t.name: t for t in model.graph.initializer}
    assert {"up.weight", "up.bias", "down.weight", "down.bias", "scale"} <= set(initializers)
    for tensor in initializers.values():
        assert tensor.data_location == onnx.TensorProto.EXTERNAL and not tensor.raw_data
        location = dict((entry.key, entry.value) for entry in tensor.external_data)["location"]
        assert location == os.path.basename(path) + ".data"
        assert not (Path(path).parent / location).exists()  # named, never written
    assert list(initializers["up.weight"].dims) == [256, 64]
    assert initializers["up.weight"].data_type == onnx.TensorProto.FLOAT
    assert "weights not included" in {p.key: p.value for p in model.metadata_props}["onnxlens.graph_only"]
    return model


def test_a_meta_model_exports_with_no_error_finding_and_a_note_at_its_definition(meta, workspace):
    assert meta.status == "ok", [f.message for f in meta.findings]
    assert not [f for f in meta.findings if f.severity in ("error", "warning")]
    note = note_of(meta)
    net = workspace / "pkg" / "net.py"
    assert note.severity == "info" and note.stage == "load"
    assert (note.location.file, note.location.line) == (str(net.resolve()), line_of(net, "def build():"))
    text = note.message
    assert text.startswith(f"weights-free model: {PARAMETERS:,} parameters (")
    assert "as float32) are on the meta device" in text
    assert "Skipped: ONNX graph optimization (onnx_program.optimize()" in text
    assert "verification with onnxruntime (no weights to run)" in text
    assert "Checked without data: onnx.checker" in text
    assert "Written: the graph-only model .onnxlens/meta.graph.onnx" in text
    assert "No .onnx with weights was written (.onnxlens/meta.onnx does not exist)" in text
    assert "moved to the meta device" not in text  # its inputs were on meta already


def test_the_graph_only_file_declares_every_weight_without_data(meta, workspace):
    assert meta.onnx is None and meta.graph_onnx == str(workspace / ".onnxlens" / "meta.graph.onnx")
    assert not os.path.exists(workspace / ".onnxlens" / "meta.onnx")  # no model with weights
    model = assert_graph_only(meta.graph_onnx, meta.node_count)
    # A valid model but for the missing data: with the weights as declared inputs, it checks.
    onnx.checker.check_model(checkable(model), full_check=True)
    with pytest.raises(onnx.checker.ValidationError, match="meta.graph.onnx.data"):
        onnx.checker.check_model(model)  # honest: its data file does not exist


def test_verification_is_skipped_and_the_report_says_what_was_written(meta):
    assert meta.verification is None and "verify" in meta.stages
    report = Path(meta.report).read_text()
    assert "- ONNX file: none written by this export" in report
    assert "- Graph-only ONNX file (no weights): `.onnxlens/meta.graph.onnx`" in report
    assert "| verify | skipped (no weights) |" in report
    assert "Skipped: the model's weights have no data" in report
    assert "info[weights-free]" in report and "Written: the graph-only model .onnxlens/meta.graph.onnx" in report


def test_hover_and_lens_data_are_there_for_the_meta_model(meta, workspace):
    net = workspace / "pkg" / "net.py"
    lines = {(info.file, info.line): info for info in meta.lines}
    up = lines[(str(net.resolve()), line_of(net, "h = torch.relu(self.up(x))"))]
    assert {"Gemm", "Relu"} <= set(up.ops) and "float32[2, 256]" in up.outputs and "up" in up.modules
    down = lines[(str(net.resolve()), line_of(net, "return self.down(h) * self.scale"))]
    assert "Mul" in down.ops and "float32[2, 64]" in down.outputs
    assert meta.node_count == len(onnx.load(meta.graph_onnx, load_external_data=False).graph.node)


def test_the_graph_is_the_stock_exporters_without_optimization(meta, workspace):
    """The nodes are those of `torch.onnx.export(..., dynamo=True, optimize=False)` (the stock
    save of that program fails: it reads the weights)."""
    module = sys.modules["pkg.net"]
    stock = torch.onnx.export(module.build(), module.meta_inputs(), dynamo=True, optimize=False, verbose=False)
    ours = onnx.load(meta.graph_onnx, load_external_data=False)
    assert [(n.op_type, list(n.input), list(n.output)) for n in ours.graph.node] == [
        (n.op_type, [v.name if v is not None else "" for v in n.inputs], [v.name for v in n.outputs])
        for n in stock.model.graph]
    with pytest.raises(Exception) as raised:
        stock.model_proto  # noqa: B018 - what the stock save does: it reads the weights
    assert any("Cannot copy out of meta tensor" in str(error) for error in exception_chain(raised.value))


def test_cpu_inputs_of_a_meta_model_go_to_meta_and_dynamic_shapes_still_hold(workspace):
    result = run(workspace, "cpu_inputs", "build", "cpu_inputs", dynamic_shapes="pkg/net.py:rows")
    assert result.status == "ok", [f.message for f in result.findings]
    assert [f.code for f in result.findings] == ["weights-free"]
    assert ("1 tensor of the example inputs was moved to the meta device: torch.export needs the inputs on "
            "the weights' device") in note_of(result).message
    model = assert_graph_only(result.graph_onnx, result.node_count)
    (x,) = model.graph.input
    assert [d.dim_param or d.dim_value for d in x.type.tensor_type.shape.dim] == ["rows", 64]


def test_a_fake_tensor_model_exports_the_same_way(workspace):
    result = run(workspace, "fake", "build_fake", "cpu_inputs")
    assert result.status == "ok", [f.message for f in result.findings]
    note = note_of(result)
    assert "parameters (" in note.message and "are FakeTensors" in note.message
    assert "moved to the meta device" not in note.message  # a fake model takes real inputs
    assert_graph_only(result.graph_onnx, result.node_count)


def test_the_last_model_with_weights_is_never_replaced(workspace):
    """The same target exported with weights, then on meta: the .onnx and .onnx.data with
    weights stay as they were; the graph-only file goes beside them."""
    first = run(workspace, "kept", "build_with_weights", "cpu_inputs")
    assert first.status == "ok" and first.onnx and first.graph_onnx is None
    before = {path: (Path(path).read_bytes(), os.stat(path).st_mtime_ns) for path in (first.onnx, first.onnx_data)}
    second = run(workspace, "kept", "build", "cpu_inputs")
    assert second.status == "ok" and second.onnx is None
    assert {path: (Path(path).read_bytes(), os.stat(path).st_mtime_ns) for path in before} == before
    assert second.graph_onnx == first.onnx.removesuffix(".onnx") + ".graph.onnx"
    assert "Not touched: .onnxlens/kept.onnx, the last .onnx with weights" in note_of(second).message
    assert not os.path.exists(second.graph_onnx + ".data")


def test_a_model_given_its_weights_again_replaces_the_graph_only_file(workspace):
    """Meta first (graph-only file written), then with weights: the .onnx now holds the graph,
    and the graph-only file of the older model goes (it would describe a model that is gone)."""
    first = run(workspace, "back", "build", "cpu_inputs")
    assert first.status == "ok" and os.path.exists(first.graph_onnx)
    second = run(workspace, "back", "build_with_weights", "cpu_inputs")
    assert second.status == "ok" and second.onnx and second.graph_onnx is None
    assert os.path.exists(second.onnx) and os.path.exists(second.onnx_data)
    assert not os.path.exists(first.graph_onnx)


def test_errors_of_a_meta_model_stay_errors_and_nothing_is_written(workspace):
    result = run(workspace, "zeta", "build_zeta", "zeta_inputs")
    assert result.status == "failed" and result.graph_onnx is None and result.onnx is None
    net = workspace / "pkg" / "net.py"
    error = next(f for f in result.findings if f.severity == "error")
    assert error.code == "unsupported-op" and error.location.line == line_of(net, "torch.special.zeta(")
    assert "Written: nothing (the export stopped at an error)." in note_of(result).message
    assert not (workspace / ".onnxlens" / "zeta.graph.onnx").exists()


def test_a_meta_model_with_torch_cond_checks_and_saves_its_branches(workspace):
    result = run(workspace, "branches", "build_branches", "branch_inputs")
    assert result.status == "ok", [f.message for f in result.findings]
    model = onnx.load(result.graph_onnx, load_external_data=False)
    (branch,) = [n for n in model.graph.node if n.op_type == "If"]
    assert {a.name for a in branch.attribute} == {"then_branch", "else_branch"}
    assert {t.name for t in model.graph.initializer} == {"a.weight", "a.bias", "b.weight", "b.bias"}
    assert all(t.data_location == onnx.TensorProto.EXTERNAL for t in model.graph.initializer)


def test_the_rule_counts_what_has_no_data_and_what_has():
    """Parameters and buffers on meta (or FakeTensors) make a model weights-free; one with data
    among them is counted (a partly materialised model fails optimize and the save just the same)."""
    with torch.device("meta"):
        model = torch.nn.Linear(1000, 1000)
    model.register_buffer("steps", torch.zeros(3))
    found = weights_free(model)
    assert (found.device, found.parameters, found.tensors, found.with_data) == ("meta", 1_001_000, 2, 1)
    assert found.describe() == ("1,001,000 parameters (4.00 MB as float32) are on the meta device "
                                "(1 other tensor of the model has data)")
    real = torch.nn.Linear(2, 2)
    assert weights_free(real) is None
    real.stray = torch.empty(0, device="meta")  # a plain attribute is no weight
    assert weights_free(real) is None


LLAMA = '''
import torch
from transformers import LlamaConfig, LlamaModel


def build():
    # 930 M parameters, 3.7 GB in float32: Llama 3's vocabulary and two 7B-sized layers.
    config = LlamaConfig(hidden_size=4096, intermediate_size=11008, num_hidden_layers=2, num_attention_heads=32,
                         num_key_value_heads=32, vocab_size=128256, use_cache=False)
    with torch.device("meta"):
        return LlamaModel(config).eval()


def inputs():
    return {"input_ids": torch.zeros(1, 16, dtype=torch.long)}
'''

TINY = '''
import torch


def build():
    return torch.nn.Sequential(torch.nn.Linear(4, 4)).eval()


def inputs():
    return (torch.randn(2, 4),)
'''

PEAK_RSS = '''
import json, resource, sys
from onnxlens.exporter.pipeline import Pipeline
from onnxlens.exporter.types import TargetSpec

root, name = sys.argv[1], sys.argv[2]
spec = TargetSpec(name=name, root=root, model=name + ".py:build", inputs=name + ".py:inputs",
                  output=root + "/.onnxlens/" + name + ".onnx", report=root + "/.onnxlens/" + name + ".md", verify=True)
result = Pipeline().run(spec)
print(json.dumps({"status": result.status, "graph_onnx": result.graph_onnx, "nodes": result.node_count,
                  "findings": [[f.severity, f.code, f.message] for f in result.findings],
                  "peak_rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}))
'''


def test_a_real_size_meta_llama_exports_in_far_less_memory_than_its_weights(tmp_path):
    """A process that exports a 3.7 GB (float32) Llama on meta peaks near one exporting a tiny
    model (torch and the ONNX stack: ~0.45 GB with the CPU build of torch, ~0.9 GB with PyPI's
    CUDA build, whose libraries load on import), nowhere near the weights' size."""
    pytest.importorskip("transformers")
    write(tmp_path, "llama.py", LLAMA)
    write(tmp_path, "tiny.py", TINY)

    def export(name: str) -> dict:
        process = subprocess.run([sys.executable, "-c", textwrap.dedent(PEAK_RSS), str(tmp_path), name],
                                 capture_output=True, text=True, timeout=600)
        assert process.returncode == 0, process.stderr[-3000:]
        return json.loads(process.stdout.strip().splitlines()[-1])

    baseline = export("tiny")["peak_rss"]
    data = export("llama")
    assert data["status"] == "ok", data["findings"]
    assert [code for _, code, _ in data["findings"]] == ["weights-free"]
    assert data["findings"][0][2].startswith("weights-free model: 930,107,392 parameters (3.72 GB as float32)")
    weights = 930_107_392 * 4
    added = data["peak_rss"] - baseline
    assert added < weights / 4, f"peak RSS {data['peak_rss'] / 1e9:.2f} GB, {added / 1e9:.2f} GB above a tiny model's"
    graph = onnx.load(data["graph_onnx"], load_external_data=False)
    assert len(graph.graph.node) == data["nodes"] > 0
    assert os.path.getsize(data["graph_onnx"]) < 10_000_000  # the graph, not the weights
