"""`source-paths`: the saved .onnx without the exporting machine's paths, nothing else lost.

Real exports of a model whose ops come from the workspace's helper and from a vendored library
(a `site-packages` directory), in each mode; the files are read back with onnx.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import onnx
import pytest

from onnxlens.exporter.pipeline.output.source_paths import relative_path, sidecar_path
from tests.exporter.engine_support import shared_pipeline, spec_for, write

pytestmark = pytest.mark.slow  # library models (transformers)

NET = '''
import torch
from torch import nn

from clipper.ops import soft_clip


def gated(x):
    return x * torch.sigmoid(x)  # helper-line


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(8, 8)

    def forward(self, x):
        return soft_clip(gated(self.linear(x)))


def build():
    torch.manual_seed(0)
    return Net().eval()


def build_meta():
    with torch.device("meta"):
        return Net().eval()


def inputs():
    return (torch.randn(2, 8),)
'''

CLIPPER = '''
import torch


def soft_clip(x):
    return torch.tanh(x / 3.0) * 3.0
'''


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("source_paths")
    write(root, "paths_models/__init__.py", "")
    write(root, "paths_models/net.py", NET)
    vendored = root / "env" / "lib" / "python3.11" / "site-packages"
    write(vendored, "clipper/__init__.py", "")
    write(vendored, "clipper/ops.py", CLIPPER)
    sys.path.insert(0, str(vendored))
    yield root
    sys.path.remove(str(vendored))


def export(workspace: Path, mode: str):
    spec = spec_for(workspace, f"net-{mode}", "paths_models/net.py:build", "paths_models/net.py:inputs",
                    source_paths=mode)
    result = shared_pipeline().run(spec)
    assert result.status == "ok", result.findings
    return result


def traces(path: str) -> dict[str, str | None]:
    model = onnx.load(path, load_external_data=False)
    return {node.name: {p.key: p.value for p in node.metadata_props}.get("pkg.torch.onnx.stack_trace")
            for node in model.graph.node}


@pytest.fixture(scope="module")
def absolute(workspace):
    return export(workspace, "absolute")


def test_absolute_is_the_default_and_names_the_workspace(absolute, workspace):
    saved = traces(absolute.onnx)
    assert any(str(workspace) in (trace or "") for trace in saved.values())
    assert not os.path.exists(sidecar_path(absolute.onnx))


def test_relative_names_no_directory_of_this_machine_and_keeps_every_line(absolute, workspace):
    result = export(workspace, "relative")
    data = Path(result.onnx).read_bytes() + (Path(result.onnx_data).read_bytes() if result.onnx_data else b"")
    assert str(workspace).encode() not in data
    assert os.path.expanduser("~").encode() + b"/" not in data
    saved, originals = traces(result.onnx), traces(absolute.onnx)
    assert saved.keys() == originals.keys()
    assert all(trace.startswith('File "paths_models/net.py", line ') for trace in saved.values())
    # torch's own frame (nn.Linear's forward), from wherever this machine installed torch:
    assert any('File "<site-packages>/torch/nn/modules/linear.py"' in trace for trace in saved.values())
    for name, trace in saved.items():  # only the paths changed: same lines, same functions
        strip = lambda text: [line for line in (text or "").splitlines() if not line.strip().startswith("File ")]
        assert strip(trace) == strip(originals[name])
    sidecar = json.loads(Path(sidecar_path(result.onnx)).read_text())
    assert sidecar["source_paths"] == "relative"
    assert {entry["node"]: entry["stack_trace"] for entry in sidecar["nodes"]} == {
        name: trace for name, trace in originals.items() if trace and trace != saved[name]}
    # What the editor shows is unchanged: the line data come from the job, not the file.
    assert result.lines == absolute.lines


def test_none_leaves_the_traces_out_and_the_sidecar_has_them_all(absolute, workspace):
    result = export(workspace, "none")
    assert set(traces(result.onnx).values()) == {None}
    assert b"paths_models/net.py" not in Path(result.onnx).read_bytes()
    sidecar = json.loads(Path(sidecar_path(result.onnx)).read_text())
    assert {e["node"]: e["stack_trace"] for e in sidecar["nodes"]} == {
        name: trace for name, trace in traces(absolute.onnx).items() if trace}
    assert result.lines == absolute.lines


def test_a_weights_free_models_graph_only_file_follows_the_setting_too(workspace):
    spec = spec_for(workspace, "meta-relative", "paths_models/net.py:build_meta", "paths_models/net.py:inputs",
                    source_paths="relative")
    result = shared_pipeline().run(spec)
    assert result.status == "ok" and result.graph_onnx, result.findings
    assert str(workspace).encode() not in Path(result.graph_onnx).read_bytes()
    saved = [t for t in traces(result.graph_onnx).values() if t]
    assert saved and all(t.startswith('File "paths_models/net.py", line ') for t in saved)
    sidecar = json.loads(Path(sidecar_path(result.graph_onnx)).read_text())
    assert all(entry["stack_trace"].startswith(f'File "{workspace}') for entry in sidecar["nodes"])


def test_relative_path_rule(tmp_path):
    root = tmp_path / "project"
    (root / "models").mkdir(parents=True)
    (root / "models" / "net.py").write_text("")
    assert relative_path(str(root / "models" / "net.py"), str(root)) == "models/net.py"
    assert relative_path("/opt/venv/lib/python3.11/site-packages/transformers/x.py", str(root)) == \
        "<site-packages>/transformers/x.py"
    assert relative_path("/usr/lib/python3.11/contextlib.py", str(root)) == "<python>/contextlib.py"
    assert relative_path("/somewhere/else/tool.py", str(root)) == "tool.py"
    assert relative_path("<eval_with_key>.3", str(root)) == "<eval_with_key>.3"
