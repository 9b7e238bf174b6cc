"""A saved export's result comes before its verification (real zygote, real children): the
service hands the saved result to `on_saved` while the child verifies, then returns the completed
one (verified, the weights named by their content); the cache keeps only completed results."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from onnxlens.exporter import written
from onnxlens.exporter.onnx_pair import named_data_file
from onnxlens.server.service.exports import ExportService
from tests.worker.worker_helpers import MLP_SOURCE, WIDE_MLP_SOURCE, spec_for, write_model

pytestmark = pytest.mark.asyncio(loop_scope="module")


def _sha256(path: str) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


async def test_the_saved_result_comes_first_and_the_verified_one_completes_it(service, tmp_path):
    write_model(tmp_path, "mlp.py", WIDE_MLP_SOURCE)
    seen = []

    def on_saved(result):
        # Shown while the child verifies: the model is on disk; its weights' digest is not taken yet.
        seen.append((result, Path(result.onnx).is_file(), [w.sha256 for w in result.written]))

    final = await service.export(spec_for(tmp_path, "mlp.py", verify=True), on_saved=on_saved)

    [(saved, on_disk, digests)] = seen
    assert (saved.status, on_disk, saved.verification, saved.finishing_seconds) == ("ok", True, None, None)
    assert saved.onnx_data is not None and digests[1] == ""  # the weights: identity only
    assert final.status == "ok" and final.verification.passed and final.finishing_seconds is not None
    assert final.onnx == saved.onnx and final.export_id == saved.export_id
    assert {w.path: w.sha256 for w in final.written} == {w.path: _sha256(w.path) for w in final.written}
    # Named by their content once complete (the saved result's name was a token of its own).
    assert Path(final.onnx_data).name == f"mlp.onnx.{_sha256(final.onnx_data)[:16]}.data" != Path(saved.onnx_data).name
    assert named_data_file(Path(final.onnx)) == Path(final.onnx_data)
    assert all(written.changed(w) is None for w in final.written)


async def test_a_failed_export_has_one_result_only(service, tmp_path):
    write_model(tmp_path, "broken.py", MLP_SOURCE.replace("return torch.relu(self.linear(x))",
                                                          "return torch.special.zeta(self.linear(x), 2.0)"))
    seen = []

    result = await service.export(spec_for(tmp_path, "broken.py", verify=True), on_saved=seen.append)

    assert result.status == "failed" and seen == []
    assert result.finishing_seconds is None and result.verification is None


async def test_only_the_completed_result_is_cached(tmp_path):
    write_model(tmp_path, "mlp.py", MLP_SOURCE)
    spec = spec_for(tmp_path, "mlp.py", verify=True, name="cached-mlp")
    service = ExportService(jobs=1, use_cache=True)
    await service.start()
    try:
        cached_while_verifying = []
        final = await service.export(spec, on_saved=lambda _: cached_while_verifying.append(service.cached(spec)))
    finally:
        await service.shutdown()

    assert cached_while_verifying == [None]
    hit = service.cached(spec)
    assert hit is not None and hit.cached and hit.export_id == final.export_id
    assert hit.verification.passed and all(w.sha256 for w in hit.written)
