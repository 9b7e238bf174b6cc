"""The export service and the installed packages: a worker serves the packages installed when it
started. Its zygote preloads the libraries jobs used (exporter/worker/preload.py), so after an
upgrade its children would run the old version from memory; the service replaces it. A real
virtual environment, a real package upgraded with pip (tests/support/environments.py), real
exports.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time

import pytest

from onnxlens.server.service.exports import ExportService
from onnxlens.server.service.installed import InstalledPackages
from tests.cli.test_missing_modules import MODEL, factor_of
from tests.support.environments import build_wheel, install, make_environment
from tests.worker.worker_helpers import spec_for, write_model

pytestmark = pytest.mark.slow  # the export worker as processes


async def _until(condition, what: str, seconds: float = 120.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.05)


@pytest.mark.asyncio
async def test_an_upgrade_replaces_the_worker_that_preloaded_the_old_version(tmp_path):
    environment = make_environment(tmp_path / "venv")
    install(environment, build_wheel(tmp_path / "wheels", "1.0", 2))
    write_model(tmp_path / "workspace", "net.py", MODEL)
    spec = spec_for(tmp_path / "workspace", "net.py", model="build")
    service = ExportService(python=environment.python, use_cache=False)
    try:
        first = await service.export(spec)
        assert first.status == "ok", first.findings
        assert factor_of(first.onnx) == 2.0
        old_worker = service.worker
        await _until(lambda: old_worker.preloaded_modules > 0, "the zygote to preload the package")

        install(environment, build_wheel(tmp_path / "wheels", "2.0", 3))
        upgraded = await service.export(spec)

        assert upgraded.status == "ok", upgraded.findings
        assert factor_of(upgraded.onnx) == 3.0  # the old zygote's children would say 2.0
        assert service.worker is not old_worker
        await _until(lambda: not old_worker.alive, "the replaced worker to stop")
    finally:
        await service.shutdown()


def test_the_fingerprint_follows_what_imports_can_see(tmp_path):
    """A directory on PYTHONPATH that does not exist yet is watched; a module, a package's
    metadata and a .pth file in it change the fingerprint; what imports never see (an editor's
    swap file, a backup, __pycache__) does not."""
    extra = tmp_path / "extra"
    installed = InstalledPackages(sys.executable, {**os.environ, "PYTHONPATH": str(extra)})
    assert str(extra) in installed.directories()
    seen = [installed.fingerprint()]

    def changes(step) -> bool:
        step()
        seen.append(installed.fingerprint())
        return seen[-1] != seen[-2]

    assert changes(lambda: extra.mkdir())
    assert changes(lambda: (extra / "helpers.py").write_text("X = 1\n"))
    assert not changes(lambda: (extra / ".helpers.py.swp").write_text("swap"))
    assert not changes(lambda: (extra / "helpers.py~").write_text("backup"))
    assert not changes(lambda: (extra / "__pycache__").mkdir())
    assert changes(lambda: (extra / "tinydep-1.0.dist-info").mkdir())
    assert changes(lambda: (extra / "tinydep-1.0.dist-info").rename(extra / "tinydep-2.0.dist-info"))
    assert changes(lambda: (extra / "helpers.py").unlink())
