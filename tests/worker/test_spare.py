"""The child forked ahead of the next job (the spare, exporter/worker/zygote.py) runs that job as
a child forked for it would (real zygote, real children): it is named so until then (SPARE_NAME
once warm), and an unseeded model draws the same numbers in it as in a child forked at once (its
warm-up put torch's generator back as the zygote had it). Both run the job without the cyclic
garbage collector (child.py)."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import psutil
import pytest

from onnxlens.exporter.wire.protocol import SPARE_NAME
from tests.worker.worker_helpers import MLP_SOURCE, WIDE_MLP_SOURCE, spec_for, write_model

pytestmark = pytest.mark.asyncio(loop_scope="module")


def _spares(service) -> list[psutil.Process]:
    try:
        children = psutil.Process(service.worker.pid).children()
    except psutil.NoSuchProcess:
        return []
    return [p for p in children if p.status() != psutil.STATUS_ZOMBIE and p.name() == SPARE_NAME]


async def _a_warm_spare(service, seconds: float = 120.0) -> psutil.Process:
    deadline = time.monotonic() + seconds
    while not (spares := _spares(service)):
        assert time.monotonic() < deadline, "no warm spare child"
        await asyncio.sleep(0.05)
    [spare] = spares  # one at a time
    return spare


async def test_a_job_in_the_spare_draws_what_a_job_in_a_fresh_child_draws(service, tmp_path):
    for name in ("a.py", "b.py"):
        write_model(tmp_path, name, WIDE_MLP_SOURCE)
    spare = await _a_warm_spare(service)

    # Two at once: the first takes the spare, the second's child is forked for it (no spare is
    # forked while a job waits for its result).
    first, second = await asyncio.gather(service.export(spec_for(tmp_path, "a.py")),
                                         service.export(spec_for(tmp_path, "b.py")))

    assert (first.status, second.status) == ("ok", "ok"), (first.findings, second.findings)
    assert not spare.is_running() or spare.status() == psutil.STATUS_ZOMBIE or spare.name() != SPARE_NAME
    assert Path(first.onnx_data).read_bytes() == Path(second.onnx_data).read_bytes()
    next_spare = await _a_warm_spare(service)  # forked again once no job waits
    assert next_spare.pid != spare.pid


# The user's inputs() records, in the job's child, whether Python's cyclic collector is on.
GC_PROBE_SOURCE = MLP_SOURCE + '''

def inputs():
    import gc
    import os
    with open(os.path.join(os.path.dirname(__file__), __name__ + ".gc"), "w") as file:
        file.write(str(gc.isenabled()))
    return (torch.randn(2, 8),)
'''


async def test_a_job_runs_without_the_cyclic_collector_in_the_spare_and_in_a_fresh_child(service, tmp_path):
    for name in ("a.py", "b.py"):
        write_model(tmp_path, name, GC_PROBE_SOURCE)
    await _a_warm_spare(service)

    # As above: the first job takes the spare, the second's child is forked for it.
    first, second = await asyncio.gather(service.export(spec_for(tmp_path, "a.py")),
                                         service.export(spec_for(tmp_path, "b.py")))

    assert (first.status, second.status) == ("ok", "ok"), (first.findings, second.findings)
    assert [(tmp_path / f"{name}.gc").read_text() for name in ("a", "b")] == ["False", "False"]


# The user's inputs() records what the process looks like to the job: the import path, the import
# hooks, and the modules loaded from files outside its own workspace in the temporary directory
# (where the spare's rehearsal exported its own target, rehearsal.py).
PROCESS_PROBE_SOURCE = MLP_SOURCE + '''

def inputs():
    import json
    import os
    import sys
    import tempfile
    here = os.path.dirname(os.path.realpath(__file__))
    temporary = os.path.realpath(tempfile.gettempdir())
    seen = {
        "path": sys.path,
        "hooks": [getattr(hook, "__qualname__", repr(hook)) for hook in sys.path_hooks],
        "other_temporary_modules": sorted(
            name for name, module in list(sys.modules.items())
            if (os.path.realpath(getattr(module, "__file__", None) or "/") + os.sep).startswith(temporary + os.sep)
            and not os.path.realpath(module.__file__).startswith(here + os.sep)),
    }
    with open(os.path.join(here, __name__ + ".process.json"), "w") as file:
        json.dump(seen, file)
    return (torch.randn(2, 8),)
'''


async def test_a_job_in_the_spare_finds_the_process_as_a_fresh_child_does(service, tmp_path):
    for name in ("a.py", "b.py"):
        write_model(tmp_path, name, PROCESS_PROBE_SOURCE)
    await _a_warm_spare(service)  # warm: it has rehearsed

    # As above: the first job takes the spare, the second's child is forked for it.
    first, second = await asyncio.gather(service.export(spec_for(tmp_path, "a.py")),
                                         service.export(spec_for(tmp_path, "b.py")))

    assert (first.status, second.status) == ("ok", "ok"), (first.findings, second.findings)
    in_spare, in_fresh_child = (json.loads((tmp_path / f"{name}.process.json").read_text()) for name in ("a", "b"))
    # (A fresh child never rehearsed: whatever the rehearsal left would differ here. The lists
    # need not be empty: a checkout or a venv may itself be in the temporary directory.)
    assert in_spare == in_fresh_child
