"""Helper frames are kept for our findings and hover, and the .onnx stays the public API's.

The model calls a helper of its own workspace and, through `tinylib` (a vendored package: library
code by files.classify), library helpers two deep: capture keeps both kinds of frames
(stacks.py), translation must still see the stock stack traces.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

from onnxlens.exporter.onnx_pair import public_api_difference
from tests.exporter.engine_support import shared_pipeline, spec_for, write
from tests.support.workspace import line_of

# the stock exporter in a subprocess of its own, byte for byte: on every torch of CI's matrix
pytestmark = [pytest.mark.slow, pytest.mark.every_torch]

NET = '''
import torch
from torch import nn

from blocks.helpers import gated_mlp
from tinylib.ops import soft_clip


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.up = nn.Linear(8, 32)
        self.down = nn.Linear(32, 8)

    def mix(self, x):
        return x * torch.sigmoid(x)

    def forward(self, x):
        h = gated_mlp(self.up(x))
        if torch.onnx.is_in_onnx_export():  # as under the public API, this is True while exporting
            h = h * 0.5
        return soft_clip(self.down(self.mix(h)))


def build():
    torch.manual_seed(0)
    return Net().eval()


def inputs():
    torch.manual_seed(0)
    return (torch.randn(3, 8),)


def shapes():
    return {"x": {0: torch.export.Dim("rows", min=1, max=128)}}
'''

HELPERS = '''
import torch


def gated_mlp(x):
    gate, value = x.chunk(2, dim=-1)
    return torch.cat([value * torch.nn.functional.gelu(gate), value], dim=-1)
'''


TINYLIB = '''
import torch


def _scaled_tanh(x, scale):
    return torch.tanh(x / scale) * scale  # tinylib-op


def soft_clip(x, scale=3.0):
    return _scaled_tanh(x, scale)
'''


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("identity")
    write(root, "blocks/__init__.py", "")
    write(root, "blocks/net.py", NET)
    write(root, "blocks/helpers.py", HELPERS)
    vendored = root / "vendor" / "site-packages"
    write(vendored, "tinylib/__init__.py", "")
    write(vendored, "tinylib/ops.py", TINYLIB)
    sys.path.insert(0, str(vendored))
    yield root
    sys.path.remove(str(vendored))


@pytest.fixture(scope="module")
def exported(workspace):
    spec = spec_for(workspace, "net", "blocks/net.py:build", "blocks/net.py:inputs",
                    dynamic_shapes="blocks/net.py:shapes", input_names=["features"], output_names=["out"], opset=20)
    return shared_pipeline().run(spec), sys.modules["blocks.net"]


def test_model_with_helpers_is_byte_identical_to_the_public_api(exported, tmp_path):
    result, module = exported
    assert result.status == "ok", result.findings
    public = tmp_path / "net.onnx"
    torch.onnx.export(module.build(), module.inputs(), str(public), dynamo=True, dynamic_shapes=module.shapes(),
                      input_names=["features"], output_names=["out"], opset_version=20, verbose=False)
    assert public_api_difference(result.onnx, public) is None
    assert not torch.onnx.is_in_onnx_export()  # and reset afterwards


def test_an_older_opset_is_byte_identical_too(workspace, tmp_path):
    spec = spec_for(workspace, "net18", "blocks/net.py:build", "blocks/net.py:inputs", opset=18)
    result = shared_pipeline().run(spec)
    assert result.status == "ok", result.findings
    module = sys.modules["blocks.net"]
    public = tmp_path / "net18.onnx"
    torch.onnx.export(module.build(), module.inputs(), str(public), dynamo=True, opset_version=18, verbose=False)
    assert public_api_difference(result.onnx, public) is None
    import onnx

    model = onnx.load(result.onnx, load_external_data=False)
    assert {o.domain: o.version for o in model.opset_import}[""] == 18


def test_hover_info_lands_on_helper_lines(exported, workspace):
    result, _ = exported
    helpers = workspace / "blocks" / "helpers.py"
    net = workspace / "blocks" / "net.py"
    by_line = {(Path(i.file).name, i.line): i for i in result.lines}
    gelu = by_line[("helpers.py", line_of(helpers, "torch.cat([value"))]
    assert "Gelu" in gelu.ops
    assert any(o.startswith("float32[rows, ") for o in gelu.outputs)
    assert "Sigmoid" in by_line[("net.py", line_of(net, "x * torch.sigmoid(x)"))].ops
    # forward's own line keeps what happened there (the Linear layers).
    assert "Gemm" in by_line[("net.py", line_of(net, "self.down(self.mix(h))"))].ops or \
        "MatMul" in by_line[("net.py", line_of(net, "self.down(self.mix(h))"))].ops


def test_hover_info_reaches_library_helpers_only_through_the_users_line(exported, workspace):
    """The library's own lines are not the user's: tanh lands on forward's call of the library."""
    result, _ = exported
    net = workspace / "blocks" / "net.py"
    by_line = {(Path(i.file).name, i.line): i for i in result.lines}
    assert "Tanh" in by_line[("net.py", line_of(net, "soft_clip(self.down"))].ops
    assert not any(name == "ops.py" for name, _ in by_line)


def test_the_full_trace_keeps_library_helper_frames(workspace):
    """What findings read (stacks.FULL_TRACE): the chain down to the library line that called tanh."""
    from onnxlens.exporter.locations import Workspace, from_stack_trace, node_trace
    from onnxlens.exporter.pipeline.decompositions import decompose
    from onnxlens.exporter.pipeline.tracing.stacks import helper_frames_kept, restore_stock_traces
    from onnxlens.exporter.pipeline.tables import DEFAULT_OPSET

    module = sys.modules["blocks.net"]
    with helper_frames_kept(Workspace(str(workspace))) as kept:
        program = torch.export.export(module.build(), module.inputs(), strict=False)
    tables = shared_pipeline().tables
    decomposed = decompose(program, tables.decompositions(tables.registry(DEFAULT_OPSET)))
    restore_stock_traces(decomposed, kept)
    tanh = next(n for n in decomposed.graph.nodes if "tanh" in str(n.target))
    ops = workspace / "vendor" / "site-packages" / "tinylib" / "ops.py"
    functions = [(Path(f.file).name, f.func) for f in from_stack_trace(node_trace(tanh.meta))]
    assert functions == [("net.py", "forward"), ("ops.py", "soft_clip"), ("ops.py", "_scaled_tanh")]
    assert from_stack_trace(node_trace(tanh.meta))[-1].line == line_of(ops, "# tinylib-op")
    assert [f.func for f in from_stack_trace(tanh.meta["stack_trace"])] == ["forward"]  # stock


def test_capture_leaves_no_stack_trace_anchors_behind(exported):
    from torch.fx import proxy

    anchors = getattr(proxy, "_STACK_TRACE_ANCHORS", set())
    assert type(anchors) is set  # torch's own set is back
    assert not any("identity" in file for file, _ in anchors)


COND = '''
import torch


class Branchy(torch.nn.Module):
    def forward(self, x):
        def grow(x):
            return x.cos() * 2

        def shrink(x):
            return x.sin() - 1

        return torch.cond(x.shape[0] > 2, grow, shrink, [x])


def build():
    return Branchy()


def inputs():
    return (torch.randn(4, 3),)


def shapes():
    return {"x": {0: torch.export.Dim("rows", min=1, max=64)}}
'''

# The public API in a fresh process, as a user's script calls it: `python -c SCRIPT ROOT MODULE OUT`.
STOCK_IN_A_FRESH_PROCESS = '''
import importlib, sys
import torch
sys.path.insert(0, sys.argv[1])
model = importlib.import_module(sys.argv[2])
shapes = model.shapes() if hasattr(model, "shapes") else None
torch.onnx.export(model.build(), model.inputs(), sys.argv[3], dynamo=True, dynamic_shapes=shapes, verbose=False)
'''

# An autocast region, as transformers' rotary embeddings have: torch.export makes it a
# higher-order op whose body is traced through torch.fx's generated code, after the graph
# modules of what came before it were generated.
AUTOCAST = '''
import torch


class Rotary(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(8, 8)
        self.register_buffer("inv_freq", 1.0 / (10000 ** (torch.arange(0, 8, 2).float() / 8)), persistent=False)

    def forward(self, x, positions):
        h = self.proj(x)
        with torch.autocast(device_type="cpu", enabled=False):
            freqs = positions[:, :, None].float() * self.inv_freq[None, None, :]
            emb = torch.cat((freqs, freqs), dim=-1)
        return h * emb.cos() + h.flip(-1) * emb.sin()


def build():
    torch.manual_seed(0)
    return Rotary().eval()


def inputs():
    torch.manual_seed(0)
    return (torch.randn(2, 5, 8), torch.arange(5).expand(2, 5))
'''

def _exported_as_in_a_fresh_process(tmp_path, name: str, source: str, shapes: bool) -> tuple:
    """The pipeline's export of `source`'s `build()` on `inputs()` (and `shapes()`), and the
    public API's export of it in a fresh process."""
    import subprocess

    root = tmp_path / "ws"
    write(root, f"{name}.py", source)
    spec = spec_for(root, name, f"{name}.py:build", f"{name}.py:inputs",
                    dynamic_shapes=f"{name}.py:shapes" if shapes else None)
    result = shared_pipeline().run(spec)
    assert result.status == "ok", result.findings
    public = tmp_path / f"{name}.onnx"
    subprocess.run([sys.executable, "-c", STOCK_IN_A_FRESH_PROCESS, str(root), name, str(public)], check=True,
                   capture_output=True)
    return result, public


def test_a_model_with_torch_cond_is_byte_identical_to_a_fresh_process_public_export(tmp_path):
    """The branches' stack traces name torch.fx's generated code `<eval_with_key>.N`, N counted per
    process: this process has exported many models already, a user's script has not."""
    shared_pipeline().warm_up()  # this process has generated graph modules before
    result, public = _exported_as_in_a_fresh_process(tmp_path, "branchy", COND, shapes=True)
    assert b"<eval_with_key>." in public.read_bytes()  # the branches' stack traces (If subgraphs) name it
    assert public_api_difference(result.onnx, public) is None


def test_a_model_with_an_autocast_region_is_byte_identical_to_a_fresh_process_public_export(tmp_path):
    """The region's nodes carry stack traces in torch.fx's generated code, `<eval_with_key>.N`: N
    counts every graph module torch generated code for before it, in capture too (so code made
    late must take the N stock's takes: torch's own lazy graph modules there changed N)."""
    result, public = _exported_as_in_a_fresh_process(tmp_path, "rotary", AUTOCAST, shapes=False)
    assert b"<eval_with_key>." in public.read_bytes()
    assert public_api_difference(result.onnx, public) is None
