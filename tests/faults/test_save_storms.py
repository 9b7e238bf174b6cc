"""Fault matrix, save-storm rows: 100 saves in 2 seconds, and saves while an export runs, are
coalesced: the final content is exported exactly once, and no stale result is ever shown.

How exports are counted: the model module appends its VERSION to a log file outside the
workspace every time an export job imports it (one import per job), so the log is the list of
jobs that really ran user code.
"""

from __future__ import annotations

import asyncio
import time

import pytest
import pytest_asyncio

from lsprotocol import types

from tests.support.faults import (
    Session,
    alive,
    leftover_temp_files,
    make_fault_workspace,
    net_source,
    read_pid,
)

pytestmark = pytest.mark.slow  # the language server and the export worker as processes

SAVES = 100
STORM_SECONDS = 2.0
MAX_JOBS_FOR_STORM = 10  # coalescing: 100 saves must not become anywhere near 100 exports
SETTLE_SECONDS = 5.0  # quiet time after the final export in which no further job may start


@pytest.fixture(scope="module")
def ws(tmp_path_factory):
    return make_fault_workspace(tmp_path_factory.mktemp("storms"))


def log_hook(ws) -> str:
    return f"open({str(ws.scratch / 'imports.log')!r}, 'a').write(f'{{VERSION}}\\n')"


def jobs_run(ws) -> list[int]:
    log = ws.scratch / "imports.log"
    return [int(x) for x in log.read_text().split()] if log.exists() else []


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def session(ws):
    session = await Session.launch(ws.root)
    session.open(ws.net)
    session.save(ws.net, net_source(1, module=log_hook(ws)))
    await session.wait_clean_export(ws.onnx, 1, ws.net)
    yield session
    await session.close()


@pytest.mark.asyncio(loop_scope="module")
async def test_hundred_saves_in_two_seconds_export_the_final_content_once(session: Session, ws):
    await session.wait_idle()  # the start-up export's stragglers (if any) have finished
    (ws.scratch / "imports.log").unlink(missing_ok=True)
    versions = [ws.next_version() for _ in range(SAVES)]
    for version in versions:
        session.save(ws.net, net_source(version, module=log_hook(ws)))
        await asyncio.sleep(STORM_SECONDS / SAVES)
    final = versions[-1]

    await session.wait_clean_export(ws.onnx, final, ws.net)
    await asyncio.sleep(SETTLE_SECONDS)
    jobs = jobs_run(ws)
    assert jobs.count(final) == 1, f"the final content was exported {jobs.count(final)} times: {jobs}"
    assert jobs[-1] == final, f"an older save was exported after the final one: {jobs}"
    assert len(jobs) <= MAX_JOBS_FOR_STORM, f"{SAVES} saves ran {len(jobs)} jobs: {jobs}"
    assert not session.all_diagnostics()


@pytest.mark.asyncio(loop_scope="module")
async def test_save_during_an_export_cancels_it_and_no_stale_result_shows(session: Session, ws):
    pidfile = str(ws.pidfile)
    ws.pidfile.unlink(missing_ok=True)
    # a slow job that WOULD end in a `setup` error if it were allowed to finish
    slow = net_source(ws.next_version(), module=log_hook(ws), factory=(
        f"open({pidfile!r}, 'w').write(str(os.getpid()))\n"
        "time.sleep(4)\n"
        "raise ValueError('stale result: this job should have been cancelled')  # FAULT"))
    started = time.monotonic()
    session.save(ws.net, slow)
    slow_pid = await session.wait_for(lambda: read_pid(ws.pidfile), "the slow job to start")

    final = ws.next_version()
    session.save(ws.net, net_source(final, module=log_hook(ws)))
    await session.wait_clean_export(ws.onnx, final, ws.net)
    await asyncio.sleep(SETTLE_SECONDS)  # longer than the slow job would have run

    stale = [(event.params.uri, d.message) for event in session.events
             if event.method == types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS and event.time >= started
             for d in event.params.diagnostics if d.code == "setup"]
    assert not stale, f"the cancelled job's result was published: {stale}"
    assert not session.diagnostics_of(ws.net)
    assert not alive(slow_pid), "the cancelled job's process is still running"
    assert jobs_run(ws).count(final) == 1


BIG = ("        self.big = nn.Linear(4096, 8192)  # 134 MB of weights: saving them takes a while\n")


@pytest.mark.asyncio(loop_scope="module")
async def test_export_cancelled_in_the_middle_of_its_save_leaves_nothing_behind(session: Session, ws):
    """A newer save kills the running job (SIGKILL): if that happens while the job writes the
    .onnx, no staging file may stay in the output dir, and the .onnx and its weights file must
    still belong together."""
    big = net_source(ws.next_version()).replace(
        "        self.lin = nn.Linear(IN, VERSION)\n",
        "        self.lin = nn.Linear(IN, VERSION)\n" + BIG).replace(
        "return activate(self.lin(x))", "return activate(self.lin(x)) + self.big.weight.sum()")
    session.save(ws.net, big)
    # the job is writing when its staging directory appears next to the .onnx
    await session.wait_for(lambda: [p for p in ws.out.iterdir() if p.name.startswith(".net.onnx.")],
                           "the big model's save to start", timeout=120)
    await asyncio.wait_for(session.workspace_execute_command_async(types.ExecuteCommandParams(
        command="onnxlens.export", arguments=["net"])), 30)  # re-export now: kills the saving job

    final = ws.next_version()
    session.save(ws.net, net_source(final, module=log_hook(ws)))
    await session.wait_clean_export(ws.onnx, final, ws.net)
    await session.wait_idle()  # at rest: no save in flight
    assert not leftover_temp_files(ws.out), f"left behind: {leftover_temp_files(ws.out)}"
    import onnx

    onnx.checker.check_model(onnx.load(str(ws.onnx)))  # loads the weights file: they match


@pytest.mark.asyncio(loop_scope="module")
async def test_zz_shutdown_leaves_no_process(session: Session, ws):
    left = await session.leftovers_after_shutdown()
    assert not left, f"processes left after shutdown: {left}"
