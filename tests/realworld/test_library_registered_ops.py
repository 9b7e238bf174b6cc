"""Ops a library registers when it is imported must be translated, as the stock exporter
translates them (docs/diagnostics.md: `unsupported-op` is only for ops with no
translation).

`ONNXRegistry.from_torchlib()` takes torchlib's translations of `torchvision::roi_align`, `nms`,
... only if the op exists when it runs; the stock exporter builds its registry at each call,
after the user's imports, onnxlens's worker built it once at warm-up, before them. The model is
a real transformers module that calls torchvision: SAM 3's geometry encoder pools box features
with `torchvision.ops.roi_align` (transformers/models/sam3/modeling_sam3.py, `_encode_boxes`),
tiny and randomly initialised.

torchvision cannot be loaded here (CUDA wheel next to the CPU torch), so the tests put a
stand-in on the worker's PYTHONPATH, in a directory named site-packages: `import torchvision`
registers `torchvision::roi_align` from Python with torch.library and torchvision's exact
schema, as its C++ library does at import (tests/realworld/standins/README.md). It is a package
rather than a registration in the model file because the stock registry also asks
`importlib.util.find_spec("torchvision")`: with ops registered but no torchvision to find, stock
skips the translation too, and there is no false failure to fix. The stand-in has no CPU
kernel, so verification is off.

torch's own quantization library is the other case, no stand-in needed: importing
`torch.ao.quantization.fx._decomposed` registers `quantized_decomposed::quantize_per_tensor`,
... (what QDQ models are made of), which torchlib translates to QuantizeLinear/DequantizeLinear.

The wrong answer these tests rule out, a registry built before the user's imports: `error[unsupported-op]
no ONNX translation for torchvision.roi_align.default` at the model factory's definition, and
`no ONNX translation for quantized_decomposed.quantize_per_tensor.default` on the QDQ model's
lines, where stock exports both.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from onnxlens.exporter.events import LogEvent
from onnxlens.server.service.exports import ExportService
from tests.realworld.harness import (check, environment, errors, same_files, site_packages, stock_export,
                                     workspace)
from tests.support.lsp import Client
from tests.worker.worker_helpers import spec_for

pytestmark = pytest.mark.slow  # library models through onnxlens check and the language server

MODEL = '''
    import torch
    from transformers.models.sam3.configuration_sam3 import Sam3GeometryEncoderConfig
    from transformers.models.sam3.modeling_sam3 import Sam3GeometryEncoder


    def build_model():
        torch.manual_seed(0)
        config = Sam3GeometryEncoderConfig(hidden_size=32, num_layers=1, num_attention_heads=2,
                                           intermediate_size=64, roi_size=2)
        return Sam3GeometryEncoder(config).eval()


    def example_inputs():
        torch.manual_seed(0)
        boxes = torch.rand(1, 2, 4) * 0.5 + 0.25  # (cx, cy, w, h), normalised
        mask = torch.ones(1, 2, dtype=torch.bool)
        labels = torch.ones(1, 2, dtype=torch.long)
        features = (torch.randn(1, 32, 8, 8),)
        return (boxes, mask, labels, features)
'''

TARGETS = '''
    [[tool.onnxlens.target]]
    name = "geometry"
    model = "models/geometry.py:build_model"
    inputs = "models/geometry.py:example_inputs"
'''

QDQ = '''
    import torch
    import torch.ao.quantization.fx._decomposed  # noqa: F401 - registers torch.ops.quantized_decomposed.*


    class QDQLinear(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = torch.nn.Linear(8, 4)

        def forward(self, x):
            q = torch.ops.quantized_decomposed.quantize_per_tensor(x, 0.05, 0, -128, 127, torch.int8)
            x = torch.ops.quantized_decomposed.dequantize_per_tensor(q, 0.05, 0, -128, 127, torch.int8)
            return self.linear(x)


    def build_model():
        torch.manual_seed(0)
        return QDQLinear().eval()


    def example_inputs():
        torch.manual_seed(0)
        return (torch.randn(2, 8),)
'''

QDQ_TARGET = '''
    [[tool.onnxlens.target]]
    name = "qdq"
    model = "models/qdq.py:build_model"
    inputs = "models/qdq.py:example_inputs"
'''


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    return site_packages(tmp_path_factory.mktemp("libs"), "torchvision")


@pytest.fixture(scope="module")
def stock(tmp_path_factory, site) -> Path:
    """The stock exporter's files for the same model, in a fresh process with the same libraries."""
    root = workspace(tmp_path_factory.mktemp("stock"), {"models/geometry.py": MODEL}, TARGETS, verify=False)
    output = root / "stock" / "geometry.onnx"
    process = stock_export(root, "models.geometry", "build_model", "example_inputs", output, environment(site))
    assert process.returncode == 0, process.stderr[-4000:]
    return output


def test_check_exports_models_calling_library_registered_ops_with_the_stock_bytes(tmp_path, site, stock):
    root = workspace(tmp_path / "ws", {"models/geometry.py": MODEL, "models/qdq.py": QDQ}, TARGETS + QDQ_TARGET,
                     verify=False)
    process, data = check(root, env=environment(site))
    for target in data["targets"]:
        assert errors(target) == [] and target["status"] == "ok", target["diagnostics"]
    assert process.returncode == 0, process.stderr[-3000:]
    assert same_files(root / ".onnxlens" / "geometry.onnx", stock)
    qdq = tmp_path / "stock" / "qdq.onnx"
    exported = stock_export(root, "models.qdq", "build_model", "example_inputs", qdq)
    assert exported.returncode == 0, exported.stderr[-3000:]
    assert same_files(root / ".onnxlens" / "qdq.onnx", qdq)


@pytest.mark.asyncio
async def test_language_server_exports_it_before_and_after_the_worker_preloads_torchvision(tmp_path, site, stock):
    root = workspace(tmp_path / "ws", {"models/geometry.py": MODEL}, TARGETS, verify=False)
    model = root / "models" / "geometry.py"
    client = await Client.launch(root, settings={"debounceMs": 100}, env={"PYTHONPATH": str(site)})
    try:
        client.open(model)
        await client.exports_finished("geometry", 1)
        assert client.all_diagnostics() == {}, client.describe()
        assert same_files(root / ".onnxlens" / "geometry.onnx", stock)
        # The first job imported transformers and torchvision; the worker preloads them before
        # the next job, whose registry must still (and now already) hold roi_align's translation.
        client.save(model, model.read_text() + "\n# saved again\n")
        await client.exports_finished("geometry", 2)
        assert client.all_diagnostics() == {}, client.describe()
        assert same_files(root / ".onnxlens" / "geometry.onnx", stock)
    finally:
        await client.close()


@pytest.mark.asyncio
async def test_the_registry_is_rebuilt_once_in_the_worker_not_in_every_job(tmp_path, site):
    """The first job (torchvision not loaded in the worker yet) rebuilds its registry in its own
    process and says so; once the worker has preloaded torchvision, jobs find it up to date."""
    root = workspace(tmp_path / "ws", {"models/geometry.py": MODEL}, TARGETS, verify=False)
    spec = spec_for(root, "models/geometry.py", name="geometry", model="build_model", inputs="example_inputs")
    service = ExportService(use_cache=False, env=environment(site))
    await service.start()
    try:
        logs: list[list[str]] = []
        for _ in range(2):
            lines: list[str] = []
            result = await service.export(spec, lambda event: lines.append(event.text)
                                          if isinstance(event, LogEvent) else None)
            assert result.status == "ok", result.findings
            logs.append([line for line in lines if "registry" in line])
            while service.worker.exit_count < len(logs):  # reaped: its imports are wanted
                await asyncio.sleep(0.05)
        assert len(logs[0]) == 1 and "torchvision::roi_align appeared" in logs[0][0], logs[0]
        assert logs[1] == [], "the worker preloaded torchvision and brought its registry up to date"
        assert service.worker.preloaded_modules > 0
    finally:
        await service.shutdown()
