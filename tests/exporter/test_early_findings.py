"""Findings ahead of the result (docs/lsp.md "Diagnostics", docs/diagnostics.md "Early findings"):
an op without a translation is reported while capture traces it, on the line the scan reports
later, and the scan's findings replace the preliminary ones; a model without problems gets none.

The deep model is the full-size case below scaled down: identical blocks, each calling a helper with an
op that has no ONNX translation — directly (`torch.linalg.eig`) or after decomposition
(`torch.linalg.svdvals` -> `aten._linalg_svd`).

Measured at full size (32 blocks, d=1024, meta device) on this project's 2-core machine:
onnxlens through ExportService and a warm worker, from the export call to the preliminary
FindingsEvent and to the result, interleaved with stock `torch.onnx.export(model, args,
dynamo=True, optimize=False)` raising in a warm process; medians of 7, the preliminary and the
final finding on the same line, the helper's:

    op in the helper                                  preliminary  result (scan)  stock raises  stock / preliminary
    torch.linalg.qr (benchmarks/models/deep_blocks.py)   0.43 s       2.82 s         3.57 s         8.6x
    torch.linalg.eig (on an 8x8 slice)                   0.33 s       3.08 s         4.24 s        14.0x
    torch.linalg.svdvals (same; via aten._linalg_svd)    0.38 s       3.42 s         4.23 s        10.8x

Of the ~0.4 s, ~0.2 s is torch.export's own set-up before it traces the first node, ~0.2 s the
fork and the event's way to the server.
"""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
import torch

import onnxlens.exporter.pipeline.untranslatable.traced_ops as traced_ops
from onnxlens.exporter.onnx_pair import public_api_difference
from onnxlens.exporter.pipeline.tables import DEFAULT_OPSET
from onnxlens.exporter.events import FindingsEvent, LogEvent, StageEvent
from tests.exporter.engine_support import shared_pipeline, spec_for, write
from tests.support.workspace import EXAMPLES, line_of

pytestmark = pytest.mark.slow  # a deep model through the export worker

DEEP = '''
import torch
from torch import nn


def spread(h):
    return torch.linalg.eig(h[:, :4, :4])[0].real.sum(-1)[:, None, None]


def energy(h):
    return torch.linalg.svdvals(h[:, :4, :4]).sum(-1)[:, None, None]


def unused(h):
    torch.linalg.eig(h[:, :4, :4])
    return h.sum(-1, keepdim=True)


HELPERS = {"spread": spread, "energy": energy, "unused": unused}


class Block(nn.Module):
    def __init__(self, dim, helper):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.ff = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))
        self.helper = helper

    def forward(self, x):
        h = self.ff(self.norm(x))
        return x + h * HELPERS[self.helper](h)


class Deep(nn.Module):
    def __init__(self, helper, depth=16, dim=32):
        super().__init__()
        self.layers = nn.ModuleList(Block(dim, helper) for _ in range(depth))

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


def direct():
    return Deep("spread").eval()


def decomposed():
    return Deep("energy").eval()


def dead_code():
    return Deep("unused", depth=2).eval()


def inputs():
    return (torch.randn(2, 8, 32),)
'''

# Ops without a translation of their own that the decompose stage turns into supported ones.
DECOMPOSES = '''
import torch
from torch import nn


class Fine(nn.Module):
    def forward(self, x):
        area = torch.trapezoid(x, dim=-1)
        clipped = x.renorm(2, 0, 1.0)
        rounded = x.to(torch.float16).float()
        return clipped + rounded + area.unsqueeze(-1)


def build():
    return Fine().eval()


def inputs():
    torch.manual_seed(0)
    return (torch.randn(4, 6),)
'''

# Sizes known only from the data: `torch.where(mask)` is traced as one node that the decompose
# stage replaces (by nonzero), so the check follows its decomposition while the tracer still
# holds the node's fresh unbacked size (as torchvision's remove_small_boxes does in every
# detection model); and `.item()` in a scan body.
DATA_DEPENDENT = '''
import torch
from torch import nn
from torch._higher_order_ops.scan import scan


class Kept(nn.Module):
    def forward(self, boxes):
        keep = torch.where(boxes[:, 2] > boxes[:, 0])[0]
        kept = boxes[keep]
        return kept * 2, keep


class Scanned(nn.Module):
    def forward(self, xs):
        def body(carry, x):
            return carry + x.sum().item(), x * 2

        return scan(body, torch.zeros(()), xs)


def kept():
    return Kept().eval()


def scanned():
    return Scanned().eval()


def boxes():
    torch.manual_seed(0)
    return (torch.randn(50, 4),)


def rows():
    torch.manual_seed(0)
    return (torch.randn(5, 3),)
'''

BERT = '''
import torch
from transformers import BertConfig, BertModel


def build():
    torch.manual_seed(0)
    return BertModel(BertConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                                intermediate_size=128)).eval()


def inputs():
    torch.manual_seed(0)
    return (torch.randint(0, 1000, (2, 16)), torch.ones(2, 16, dtype=torch.long))
'''


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    root = tmp_path_factory.mktemp("early")
    write(root, "deep.py", DEEP)
    write(root, "decomposes.py", DECOMPOSES)
    write(root, "bert_model.py", BERT)
    write(root, "data_dependent.py", DATA_DEPENDENT)
    return root


def export(spec):
    """The result and the events in the order the pipeline sent them."""
    events = []
    result = shared_pipeline().run(spec, events.append)
    return result, events


def preliminary(events):
    return [event for event in events if isinstance(event, FindingsEvent) and event.preliminary]


def stage_index(events, stage, state):
    return next(index for index, event in enumerate(events)
                if isinstance(event, StageEvent) and (event.stage, event.state) == (stage, state))


@pytest.mark.parametrize("factory, call, op", [
    ("direct", "torch.linalg.eig(", "aten.linalg_eig.default"),
    ("decomposed", "torch.linalg.svdvals(", "aten._linalg_svd.default"),
])
def test_a_missing_op_is_reported_while_capture_traces_it_on_the_line_the_scan_reports(workspace, factory, call, op):
    result, events = export(spec_for(workspace, factory, f"deep.py:{factory}", "deep.py:inputs"))
    helper_line = line_of(workspace / "deep.py", call)

    early = preliminary(events)
    assert early, f"no preliminary findings: {events}"
    # During capture: before capture's end, and so before decomposition and the scan.
    assert stage_index(events, "capture", "begin") < events.index(early[0]) < stage_index(events, "capture", "end")
    [finding] = early[0].findings
    assert early[0].stage == "scan" and finding.code == "unsupported-op"
    assert (finding.location.file, finding.location.line) == (str(workspace / "deep.py"), helper_line)
    assert op in finding.message and call.rstrip("(") in finding.message
    assert len(early) == 1, "one event per new op and line: the other 15 blocks add nothing"

    # The scan decides, and ends the export: its findings come with the result, which replaces
    # the preliminary ones; the same line, the same range.
    assert result.status == "failed"
    [final] = result.findings
    assert (final.code, final.location.file, final.location.line) == ("unsupported-op", finding.location.file,
                                                                      helper_line)
    assert final.location == finding.location and op in final.message
    assert "layers.0–15" in final.message and "layers.0]" in finding.message  # what was known, when
    assert not [e for e in events if isinstance(e, FindingsEvent) and not e.preliminary]


def test_a_preliminary_finding_the_scan_does_not_confirm_is_replaced_by_nothing(workspace):
    """The op was traced, but its value is unused: capture drops it, the scan finds nothing,
    and its (empty) event replaces the preliminary one before the export goes on."""
    result, events = export(spec_for(workspace, "dead", "deep.py:dead_code", "deep.py:inputs"))
    early = preliminary(events)
    assert [f.location.line for event in early for f in event.findings] == [
        line_of(workspace / "deep.py", "    torch.linalg.eig(")]
    scanned = [e for e in events if isinstance(e, FindingsEvent) and e.stage == "scan" and not e.preliminary]
    assert scanned == [FindingsEvent("scan", ())]
    assert events.index(scanned[0]) < stage_index(events, "translate", "begin")
    assert result.status == "ok" and result.findings == []


@pytest.mark.parametrize("model, inputs, shapes", [
    ("models/mlp.py:MLP", "models/mlp.py:example_inputs", None),
    ("models/encoder.py:build_encoder", "models/encoder.py:example_inputs", "models/encoder.py:dynamic_shapes"),
    ("bert_model.py:build", "bert_model.py:inputs", None),
    ("decomposes.py:build", "decomposes.py:inputs", None),
])
def test_no_preliminary_findings_for_models_that_export(workspace, model, inputs, shapes):
    if model.startswith("decomposes"):  # no translation of their own: the check follows them
        registry = shared_pipeline().tables.registry(DEFAULT_OPSET)
        assert not registry.get_decomps(torch.ops.aten.trapezoid.dx)
        assert not registry.get_decomps(torch.ops.aten.renorm.default)
    root = EXAMPLES if model.startswith("models/") else workspace
    spec = spec_for(root, "clean", model, inputs, dynamic_shapes=shapes)
    spec.output, spec.report = str(workspace / "out" / "clean.onnx"), str(workspace / "out" / "clean.md")
    result, events = export(spec)
    assert result.status == "ok", result.findings
    assert preliminary(events) == []
    # The one findings event: translation's, settling the export's errors (none) while check,
    # verify and save still run.
    settled = FindingsEvent("translate", (), settled=True)
    assert [e for e in events if isinstance(e, FindingsEvent)] == [settled]
    assert stage_index(events, "translate", "begin") < events.index(settled) < stage_index(events, "check", "begin")


def test_every_preliminary_finding_of_the_examples_is_confirmed(workspace):
    """spectral: torch.linalg.eigvals in forward, torch.special.zeta (-> prims.zeta) in a helper
    of another file: both found while tracing, both where the scan puts them."""
    spec = spec_for(EXAMPLES, "spectral", "models/spectral.py:SpectralNet", "models/spectral.py:example_inputs")
    spec.output, spec.report = str(workspace / "out" / "spectral.onnx"), str(workspace / "out" / "spectral.md")
    result, events = export(spec)
    early = preliminary(events)[-1].findings  # each event holds all found so far
    assert {(f.location.file, f.location.line) for f in early} == {
        (f.location.file, f.location.line) for f in result.findings}
    assert len(early) == 2


def test_the_check_changes_nothing_in_the_exported_model(workspace, tmp_path):
    """The ops of `decomposes.py` are followed through their decompositions while tracing: the
    .onnx is still byte-identical to the public API's."""
    spec = spec_for(workspace, "fine", "decomposes.py:build", "decomposes.py:inputs")
    result, _ = export(spec)
    assert result.status == "ok", result.findings
    module = sys.modules["decomposes"]
    public = tmp_path / "fine.onnx"
    torch.onnx.export(module.build(), module.inputs(), str(public), dynamo=True, verbose=False)
    assert public_api_difference(result.onnx, public) is None


@pytest.mark.parametrize("factory, inputs", [("kept", "boxes"), ("scanned", "rows")])
def test_the_check_leaves_sizes_known_only_from_the_data_as_torch_makes_them(workspace, tmp_path, factory,
                                                                             inputs):
    """The check runs between the tracer's fake run of an op and the binding of its result, with
    the op's fresh unbacked sizes pending: following a decomposition on the node's fake values
    added sizes of its own there (torchvision's detection models then failed with torch's
    `PendingUnbackedSymbolNotFound`, and here the exported size was named `u4` where the public
    API writes `u3`). The .onnx is the public API's."""
    spec = spec_for(workspace, factory, f"data_dependent.py:{factory}", f"data_dependent.py:{inputs}")
    result, _ = export(spec)
    public = tmp_path / f"{factory}.onnx"
    # In a fresh process: the scan body's stack traces name torch.fx's generated code by a
    # per-process counter.
    stock = subprocess.run([sys.executable, "-c", STOCK_IN_A_FRESH_PROCESS, str(workspace), factory, inputs,
                            str(public)], capture_output=True, text=True)
    if stock.returncode == 0:
        assert result.status == "ok", result.findings
        assert public_api_difference(result.onnx, public) is None
    else:
        # torch 2.12's export itself refuses the scan body's size (PendingUnbackedSymbolNotFound):
        # then the same refusal, the exception torch's summary names.
        summary = re.search(r"## Exception summary\s*<class '[\w.]*?(\w+)'>: (\w+)", stock.stderr)
        assert summary, stock.stderr[-3000:]
        exception, first_word = summary.groups()
        assert result.status == "failed"
        assert any(f.code == "torch-export" and f"{exception}: {first_word}" in f.message
                   for f in result.findings), (summary.group(0), result.findings)


STOCK_IN_A_FRESH_PROCESS = '''
import sys
import torch
sys.path.insert(0, sys.argv[1])
import data_dependent
factory, inputs, output = sys.argv[2:]
model, args = getattr(data_dependent, factory)(), getattr(data_dependent, inputs)()
torch.onnx.export(model, args, output, dynamo=True, verbose=False)
'''


def test_a_broken_check_never_breaks_the_export(workspace, monkeypatch):
    def broken(self, op):
        raise RuntimeError("simulated bug in the traced-op check")

    monkeypatch.setattr(traced_ops.OpVerdicts, "_judge", broken)
    result, events = export(spec_for(workspace, "direct", "deep.py:direct", "deep.py:inputs"))
    assert preliminary(events) == []
    assert any(isinstance(e, LogEvent) and "simulated bug in the traced-op check" in e.text for e in events)
    [final] = result.findings
    assert final.code == "unsupported-op" and final.location.line == line_of(workspace / "deep.py",
                                                                               "torch.linalg.eig(")
