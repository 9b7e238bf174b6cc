"""Library preloading: the zygote imports the installed libraries finished jobs used (never the
user's own files), so later children find them loaded; a library that starts a thread when
imported makes the zygote retire in favour of a fresh one that never preloads it.

The "libraries" are real packages in a directory named site-packages on the worker's
PYTHONPATH; each logs the pid of every process that imports it.
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest
import pytest_asyncio

from onnxlens.exporter.wire.protocol import PRELOAD_DENY_VARIABLE
from onnxlens.server.service.exports import ExportService
from tests.worker.worker_helpers import spec_for, write_model

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.slow]  # the export worker as processes

LIBRARY = '''
import os
{extra}
with open(os.path.join(os.path.dirname(__file__), "..", "{name}.log"), "a") as log:
    log.write(f"{{os.getpid()}}\\n")


def apply(x):
    return x * 2
'''

MODEL = '''
import torch

from {name} import apply


class Model(torch.nn.Module):
    def forward(self, x):
        return apply(x) + 1


def inputs():
    return (torch.randn(2, 3),)
'''


@pytest.fixture(scope="module")
def libraries(tmp_path_factory) -> Path:
    site = tmp_path_factory.mktemp("libs") / "site-packages"
    for name, extra in (("plainlib", ""),
                        ("threadlib", "import threading, time\n"
                                      "threading.Thread(target=time.sleep, args=(3600,), daemon=True).start()\n")):
        (site / name).mkdir(parents=True)
        (site / name / "__init__.py").write_text(LIBRARY.format(name=name, extra=extra))
    return site


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def service(libraries):
    env = dict(os.environ, PYTHONPATH=str(libraries))
    export_service = ExportService(use_cache=False, env=env)
    await export_service.start()
    yield export_service
    await export_service.shutdown()


def _importers(libraries: Path, name: str) -> list[int]:
    log = libraries / f"{name}.log"
    return [int(line) for line in log.read_text().split()] if log.exists() else []


async def _until(condition, seconds: float = 120.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "condition not reached"
        await asyncio.sleep(0.05)


async def test_a_library_a_job_imported_is_preloaded_for_the_next_jobs(service, libraries, tmp_path):
    write_model(tmp_path, "model.py", MODEL.format(name="plainlib"))
    spec = spec_for(tmp_path, "model.py")
    zygote = service.worker.pid

    first = await service.export(spec)
    await _until(lambda: service.worker.exit_count >= 1)  # the first child was reaped
    second = await service.export(spec)
    third = await service.export(spec)

    assert first.status == second.status == third.status == "ok"
    importers = _importers(libraries, "plainlib")
    # The first child imported it, then the zygote before forking the second; no one since.
    assert importers[1:] == [zygote]
    assert len(importers) == 2
    assert service.worker.pid == zygote
    assert service.worker.preloaded_modules >= 1


async def test_a_library_starting_a_thread_retires_the_zygote(service, libraries, tmp_path):
    write_model(tmp_path, "model.py", MODEL.format(name="threadlib"))
    spec = spec_for(tmp_path, "model.py")
    old = service.worker

    exits = old.exit_count
    assert (await service.export(spec)).status == "ok"
    await _until(lambda: old.exit_count > exits)  # reaped: its imports are wanted
    # The idle zygote preloads threadlib, sees the thread and asks to be replaced. (Its `exited`
    # and `retire` messages are apart by the import: a job sent between them would still run
    # there, in a child that finds threadlib loaded.)
    await _until(lambda: old.retiring)
    second = await service.export(spec)
    await _until(lambda: not old.alive)
    third = await service.export(spec)
    fourth = await service.export(spec)

    assert second.status == third.status == fourth.status == "ok"
    assert service.worker.pid != old.pid
    assert "threadlib" in service.worker.env[PRELOAD_DENY_VARIABLE].split(",")
    importers = _importers(libraries, "threadlib")
    assert old.pid in importers  # the old zygote did preload it
    assert service.worker.pid not in importers  # the new one never does, however often it runs it
    assert len(importers) == 5  # children 1-4 and the old zygote
