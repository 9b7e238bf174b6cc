"""The worker's life cycle with real processes: normal jobs, cancel, a killed zygote, shutdown."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest

from onnxlens.exporter.events import StageEvent
from onnxlens.server.service.exports import ExportService
from tests.support.workspace import REPO
from tests.worker.worker_helpers import MLP_SOURCE, spec_for, worker_children, write_model

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.slow]  # the export worker as processes

SLEEPER_SOURCE = '''
import os
import subprocess
import time

import torch


class Model(torch.nn.Module):
    def forward(self, x):
        return x + 1


def inputs():
    # A grandchild, to check a cancel takes down everything the user's code started.
    sleeper = subprocess.Popen(["sleep", "300"])
    with open(os.path.join(os.path.dirname(__file__), "grandchild.pid"), "w") as file:
        file.write(str(sleeper.pid))
    time.sleep(300)
    return (torch.randn(2),)
'''


async def _wait_for(condition, seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "condition not reached"
        await asyncio.sleep(0.05)


async def test_a_normal_job_exports_and_streams_events(service, tmp_path):
    write_model(tmp_path, "models/mlp.py", MLP_SOURCE)
    write_model(tmp_path, "models/__init__.py", "")
    events = []

    result = await service.export(spec_for(tmp_path, "models/mlp.py", name="mlp"), events.append)

    assert result.status == "ok", result.findings
    assert Path(result.onnx).is_file()
    assert result.cached is False
    assert str(tmp_path / "models" / "mlp.py") in result.closure
    # Typed events only (the worker client turns the pipe's dicts into them): every stage begins.
    assert [e.stage for e in events if isinstance(e, StageEvent) and e.state == "begin"][:2] == ["load", "capture"]
    assert service.worker.versions["torch"]


async def test_jobs_run_side_by_side(service, tmp_path):
    specs = []
    for index in range(3):
        write_model(tmp_path, f"m{index}.py", MLP_SOURCE)
        specs.append(spec_for(tmp_path, f"m{index}.py"))

    results = await asyncio.gather(*(service.export(spec) for spec in specs))

    assert [r.status for r in results] == ["ok", "ok", "ok"]
    assert [Path(r.onnx).name for r in results] == ["m0.onnx", "m1.onnx", "m2.onnx"]


async def test_a_cancelled_job_leaves_no_process_behind(service, tmp_path):
    write_model(tmp_path, "sleeper.py", SLEEPER_SOURCE)
    pid_file = tmp_path / "grandchild.pid"
    task = asyncio.create_task(service.export(spec_for(tmp_path, "sleeper.py", timeout=600)))
    await _wait_for(pid_file.exists)
    await _wait_for(lambda: pid_file.read_text().strip() != "")
    grandchild = int(pid_file.read_text())
    assert worker_children(service), "the job's child should be running"

    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    assert worker_children(service) == []
    assert not psutil.pid_exists(grandchild) or psutil.Process(grandchild).status() == psutil.STATUS_ZOMBIE
    # The worker is still usable.
    write_model(tmp_path, "after.py", MLP_SOURCE)
    assert (await service.export(spec_for(tmp_path, "after.py"))).status == "ok"


async def test_a_killed_zygote_is_restarted_and_the_next_job_succeeds(service, tmp_path):
    write_model(tmp_path, "mlp.py", MLP_SOURCE)
    assert (await service.export(spec_for(tmp_path, "mlp.py"))).status == "ok"
    old = service.worker.pid

    os.kill(old, signal.SIGKILL)
    result = await service.export(spec_for(tmp_path, "mlp.py"))

    assert result.status == "ok", result.findings
    assert service.worker.pid != old
    assert not psutil.pid_exists(old)


async def test_a_new_service_after_shutdown_has_a_new_zygote(tmp_path):
    """What onnxlens.restartWorker does: shut the service down, start a new one."""
    write_model(tmp_path, "mlp.py", MLP_SOURCE)
    first = ExportService(use_cache=False)
    await first.start()
    await first.worker.wait_ready()
    old = first.worker.pid

    await first.shutdown()
    second = ExportService(use_cache=False)
    try:
        await second.start()
        result = await second.export(spec_for(tmp_path, "mlp.py"))
        assert result.status == "ok", result.findings
        assert second.worker.pid != old
    finally:
        await second.shutdown()
    assert not psutil.pid_exists(old)


async def test_shutdown_leaves_no_zygote_and_no_children(tmp_path):
    write_model(tmp_path, "sleeper.py", SLEEPER_SOURCE)
    own = ExportService(use_cache=False)
    await own.start()
    task = asyncio.create_task(own.export(spec_for(tmp_path, "sleeper.py", timeout=600)))
    await _wait_for(lambda: (tmp_path / "grandchild.pid").exists() and (tmp_path / "grandchild.pid").read_text())
    zygote = psutil.Process(own.worker.pid)
    family = [zygote, *zygote.children(recursive=True)]
    assert len(family) >= 3  # zygote, child, the child's `sleep`

    await own.shutdown()
    result = await task

    assert result.status == "failed"  # the job was ended, not silently dropped
    gone, alive = psutil.wait_procs(family, timeout=5)
    assert alive == []


async def test_the_zygote_and_its_children_die_with_the_server(tmp_path):
    """SIGKILL the process that owns the ExportService: nothing it started may survive."""
    write_model(tmp_path, "sleeper.py", SLEEPER_SOURCE)
    script = textwrap.dedent(f'''
        import asyncio
        from onnxlens.server.service.exports import ExportService
        from tests.worker.worker_helpers import spec_for
        from pathlib import Path

        async def main():
            service = ExportService(use_cache=False)
            await service.start()
            await service.export(spec_for(Path({str(tmp_path)!r}), "sleeper.py", timeout=600))

        asyncio.run(main())
    ''')
    # `-c` in the repository root puts it on sys.path (nothing added to the worker's environment)
    server = subprocess.Popen([sys.executable, "-c", script], cwd=REPO)
    try:
        deadline = time.monotonic() + 120
        pid_file = tmp_path / "grandchild.pid"
        while not (pid_file.exists() and pid_file.read_text()):
            assert time.monotonic() < deadline and server.poll() is None
            await asyncio.sleep(0.1)
        family = psutil.Process(server.pid).children(recursive=True)
        assert len(family) >= 3  # zygote, child, `sleep`
    finally:
        server.kill()
        server.wait()

    gone, alive = psutil.wait_procs(family, timeout=10)
    assert alive == []


async def test_a_worker_of_another_protocol_version_is_a_clear_finding(tmp_path):
    """A stand-in "interpreter" whose worker says hello in protocol 999 (a real run cannot
    produce another version, so this one process is a stand-in)."""
    fake = tmp_path / "python"
    fake.write_text(textwrap.dedent(f'''\
        #!{sys.executable}
        import os, struct, sys
        import msgpack
        # A frame as any version frames it: a length, then msgpack of a map with a "type".
        body = msgpack.packb({{"type": "hello", "protocol": 999, "pid": os.getpid(), "python": sys.argv[0]}})
        os.write(1, struct.pack(">I", len(body)) + body)
        sys.stdin.read()
    '''))
    fake.chmod(0o755)
    write_model(tmp_path, "mlp.py", MLP_SOURCE)
    own = ExportService(python=str(fake), use_cache=False)
    try:
        result = await asyncio.wait_for(own.export(spec_for(tmp_path, "mlp.py")), 60)
    finally:
        await own.shutdown()

    assert result.status == "failed"
    [finding] = result.findings
    assert finding.code == "crash"
    assert "protocol version 999" in finding.message
    assert finding.location.file == str(tmp_path / "mlp.py")


async def test_an_interpreter_without_onnxlens_is_a_clear_finding(tmp_path):
    write_model(tmp_path, "mlp.py", MLP_SOURCE)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    own = ExportService(python="/usr/bin/python3", env=env, use_cache=False)
    if not Path("/usr/bin/python3").exists():
        pytest.fail("this test needs a system python3 without onnxlens")
    try:
        result = await asyncio.wait_for(own.export(spec_for(tmp_path, "mlp.py")), 60)
    finally:
        await own.shutdown()

    [finding] = result.findings
    assert finding.code == "crash"
    assert "/usr/bin/python3" in finding.message
    assert "onnxlens" in finding.message  # "No module named 'onnxlens'"


WIDE_SOURCE = '''
import torch


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = torch.nn.Sequential(*[torch.nn.Linear(2048, 2048) for _ in range(LAYERS)])
        for layer in self.layers:
            torch.nn.init.constant_(layer.weight, VALUE)

    def forward(self, x):
        return self.layers(x)


def inputs():
    return (torch.randn(2, 2048),)
'''


async def test_a_job_cancelled_while_saving_finishes_its_save(service, tmp_path):
    # A cancel that arrives during the save (64-128 MB of weights: it lasts long enough) lets the
    # save finish, then the job counts as cancelled: the new pair is complete and nothing it
    # staged is left on disk (a kill would leave the old pair whole too, tests/exporter/
    # test_save_kills.py, but its staged weights until the next save).
    import onnx
    from onnx import numpy_helper

    model = tmp_path / "wide.py"
    write_model(tmp_path, "wide.py", WIDE_SOURCE.replace("LAYERS", "2").replace("VALUE", "1.0"))
    first = await service.export(spec_for(tmp_path, "wide.py"))
    assert first.status == "ok", first.findings

    write_model(tmp_path, "wide.py", WIDE_SOURCE.replace("LAYERS", "4").replace("VALUE", "2.0"))
    saving = asyncio.Event()
    task = asyncio.create_task(service.export(
        spec_for(tmp_path, "wide.py"),
        lambda event: saving.set() if event == StageEvent(stage="save", state="begin") else None))
    await asyncio.wait_for(saving.wait(), 120)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    saved = onnx.load(first.onnx)  # loads the data file it names
    weights = {i.name: numpy_helper.to_array(i) for i in saved.graph.initializer if i.name.endswith("weight")}
    assert len(weights) == 4, sorted(weights)  # the new graph ...
    assert all((w == 2.0).all() for w in weights.values())  # ... with its own weights
    assert worker_children(service) == []
    assert not [p.name for p in model.parent.joinpath(".onnxlens").iterdir() if ".tmp" in p.name]
