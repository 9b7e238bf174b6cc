"""`--jobs N` within a memory budget: the ExportService admits a job when a slot is free and its
memory estimate fits beside those of the export processes still alive (server/service/admission.py), and
learns each target's estimate from its process's peak memory. Real zygotes, real exports; the
admission rule alone on plain asyncio below."""

from __future__ import annotations

import asyncio

import pytest

from onnxlens.server.service.admission import Admission
from onnxlens.server.service.exports import DEFAULT_JOB_MEMORY_MB, ExportService
from tests.worker.worker_helpers import MLP_SOURCE, spec_for, write_model



def _specs(root, count=3):
    specs = []
    for index in range(count):
        write_model(root, f"m{index}.py", MLP_SOURCE)
        specs.append(spec_for(root, f"m{index}.py"))
    return specs


async def _export_all(service: ExportService, specs) -> list:
    await service.start()
    try:
        return await asyncio.gather(*(service.export(spec) for spec in specs))
    finally:
        await service.shutdown()  # every process has exited: their peaks are known


@pytest.mark.slow  # the export worker as processes
@pytest.mark.asyncio
async def test_jobs_run_side_by_side_without_a_budget_and_one_by_one_within_a_small_one(tmp_path):
    specs = _specs(tmp_path)
    free = ExportService(jobs=2, use_cache=False)
    results = await _export_all(free, specs)
    assert [r.status for r in results] == ["ok"] * 3
    assert free.admission.peak_running == 2
    # The kernel's peak resident size of each export process (pages shared with the zygote count).
    assert set(free.peak_memory_mb) == {spec.name for spec in specs}
    assert all(mb > 10 for mb in free.peak_memory_mb.values())

    # Room for one of these processes, not two: the learned estimates keep them apart.
    largest = max(free.peak_memory_mb.values())
    tight = ExportService(jobs=2, use_cache=False, memory_budget_mb=largest * 1.5,
                          memory_estimates=free.peak_memory_mb)
    assert [r.status for r in await _export_all(tight, specs)] == ["ok"] * 3
    assert tight.admission.peak_running == 1

    roomy = ExportService(jobs=2, use_cache=False, memory_budget_mb=largest * 2.5,
                          memory_estimates=free.peak_memory_mb)
    assert [r.status for r in await _export_all(roomy, specs)] == ["ok"] * 3
    assert roomy.admission.peak_running == 2


def test_a_job_is_estimated_from_what_is_known_of_it(tmp_path):
    spec, limited = spec_for(tmp_path, "a.py"), spec_for(tmp_path, "b.py", memory_limit_mb=3000)
    service = ExportService()
    assert service.memory_estimate(spec) == DEFAULT_JOB_MEMORY_MB
    assert service.memory_estimate(limited) == 3000  # its memory-limit bounds what it may add
    service.memory_estimates["c"] = 420.0
    assert service.memory_estimate(spec) == 420.0  # the largest estimate known
    service.memory_estimates["a"] = 300.0
    assert service.memory_estimate(spec) == 300.0  # its own last peak


@pytest.mark.asyncio
async def test_admission_order_slots_and_memory():
    admission = Admission(jobs=2, budget_mb=1000)
    first = await admission.admit(600)
    # 600 + 600 > 1000: the second waits although a slot is free; a later small job waits behind it.
    second = asyncio.ensure_future(admission.admit(600))
    third = asyncio.ensure_future(admission.admit(100))
    await asyncio.sleep(0)
    assert not second.done() and not third.done()
    first.release_slot()  # the result arrived: the process still holds its memory
    await asyncio.sleep(0)
    assert not second.done()
    first.release_memory()  # the process exited
    await asyncio.sleep(0)
    assert second.done() and third.done() and admission.running == 2 and admission.reserved_mb == 700
    # A job larger than the whole budget still runs, alone.
    for ticket in (second.result(), third.result()):
        ticket.release_slot()
        ticket.release_memory()
        ticket.release_memory()  # giving back twice changes nothing
    assert admission.reserved_mb == 0 and admission.running == 0
    huge = await admission.admit(5000)
    assert admission.running == 1 and admission.peak_running == 2
    huge.release_slot()
    huge.release_memory()
