"""The result cache with real exports: a hit exports nothing; any change to the target's
closure (an imported helper included), its spec or the .onnx on disk is a miss; a corrupt
cache file is ignored and rewritten."""

from __future__ import annotations

from pathlib import Path

import msgpack
import pytest

from onnxlens.server.service.cache import cache_file
from onnxlens.server.service.events import CachedEvent
from onnxlens.server.service.exports import ExportService
from tests.worker.worker_helpers import spec_for, write_model

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.slow]  # the export worker as processes

MODEL_SOURCE = '''
import torch

from helpers import scale


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(8, 4)

    def forward(self, x):
        return scale(self.linear(x))


def inputs():
    return (torch.randn(2, 8),)
'''


def _workspace(root: Path, factor: str = "2") -> Path:
    write_model(root, "helpers.py", f"def scale(x):\n    return x * {factor}\n")
    return write_model(root, "model.py", MODEL_SOURCE)


async def _fresh_export(service, spec):
    result = await service.export(spec)
    assert result.status == "ok", result.findings
    assert result.cached is False
    return result


async def test_an_unchanged_target_comes_from_the_cache_without_a_job(service, tmp_path):
    _workspace(tmp_path)
    spec = spec_for(tmp_path, "model.py")
    exported = await _fresh_export(service, spec)
    assert str(tmp_path / "helpers.py") in exported.closure
    onnx_written = Path(exported.onnx).stat().st_mtime_ns

    reader = ExportService(use_cache=True)  # never started: a hit needs no worker
    events = []
    hit = await reader.export(spec, events.append)

    assert hit.cached is True
    assert hit.status == "ok" and hit.onnx == exported.onnx
    assert reader.worker is None
    assert events == [CachedEvent(target="model")]
    assert Path(exported.onnx).stat().st_mtime_ns == onnx_written
    assert reader.cached(spec).cached is True


@pytest.mark.parametrize("change", ["helper module", "model file", "spec", "deleted onnx"])
async def test_a_change_is_a_miss(service, tmp_path, change):
    _workspace(tmp_path)
    spec = spec_for(tmp_path, "model.py")
    exported = await _fresh_export(service, spec)
    reader = ExportService(use_cache=True)
    assert reader.cached(spec) is not None

    if change == "helper module":
        _workspace(tmp_path, factor="3")
    elif change == "model file":
        write_model(tmp_path, "model.py", MODEL_SOURCE.replace("Linear(8, 4)", "Linear(8, 5)"))
    elif change == "spec":
        spec.opset = 18
    else:
        Path(exported.onnx).unlink()

    assert reader.cached(spec) is None


async def test_a_corrupt_cache_file_is_ignored_and_rewritten(service, tmp_path):
    _workspace(tmp_path)
    spec = spec_for(tmp_path, "model.py")
    path = cache_file(spec)
    path.parent.mkdir(parents=True)
    path.write_bytes(b"\x93this is not msgpack\xff")
    service.use_cache = True  # the module's warm worker, reading the cache for this test
    try:
        first = await service.export(spec)
        second = await service.export(spec)
    finally:
        service.use_cache = False

    assert first.status == "ok" and first.cached is False
    assert second.cached is True
    assert msgpack.unpackb(path.read_bytes())["format"] == "onnxlens-result-cache"


async def test_a_foreign_cache_file_is_a_miss(tmp_path):
    _workspace(tmp_path)
    spec = spec_for(tmp_path, "model.py")
    path = cache_file(spec)
    path.parent.mkdir(parents=True)
    path.write_bytes(msgpack.packb({"format": "something else", "result": {"status": "ok"}}))

    assert ExportService(use_cache=True).cached(spec) is None


async def test_crashes_are_not_cached(service, tmp_path):
    write_model(tmp_path, "quits.py", "import os\n\ndef Model():\n    os._exit(3)\n\ndef inputs():\n    return ()\n")
    spec = spec_for(tmp_path, "quits.py")

    result = await service.export(spec)

    assert result.findings[0].code == "crash"
    assert not cache_file(spec).exists()
